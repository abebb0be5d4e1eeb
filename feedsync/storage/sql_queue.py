"""Stage 3, written once for both engines (the ArticleQueue role): claiming staged
entries, an article stored once (or linked as a duplicate), a failure and its retry,
and retention's batched deletes.
"""

from __future__ import annotations

from typing import Any

from feedsync import clock, identity, titles
from feedsync.records import (
    Article,
    ArticleJob,
    FailureOutcome,
    LinkedEntry,
)
from feedsync.storage.sql_core import Connection, SQLCore


class SQLArticleQueue(SQLCore):
    """The ArticleQueue role over named queries."""

    def claim_articles(
        self,
        owner: str,
        after_id: int,
        due_before: str,
        now: str,
        lease_until: str,
        limit: int,
        retry_horizon: str | None = None,
        own_only: bool = False,
    ) -> list[ArticleJob]:
        def work(conn: Connection) -> list[ArticleJob]:
            rows = self._exec(
                conn,
                "extract_claim",
                own_only=int(own_only),
                owner=owner,
                after_id=after_id,
                due_before=due_before,
                retry_horizon=retry_horizon,
                now=now,
                lease_until=lease_until,
                lease_horizon=clock.horizon(lease_until),
                limit=limit,
            ).fetchall()
            return [
                ArticleJob(
                    id=r["id"],
                    url=r["url"],
                    title=r["title"],
                    published=r["published"],
                    author=r["author"],
                    attempts=r["attempts"],
                    lan_host=r["lan_host"],
                    heuristics=all(f["identity"] == identity.AUTO for f in feeds),
                )
                for r in rows
                for feeds in [self._exec(conn, "extract_feeds_of", id=r["id"]).fetchall()]
            ]

        return sorted(self._write(work), key=lambda job: job.id)

    def articles_held_elsewhere(self, owner: str, now: str, lease_until: str) -> int:
        rows = self._read(
            "extract_held_elsewhere",
            owner=owner,
            now=now,
            lease_horizon=clock.horizon(lease_until),
        )
        return int(rows[0]["n"])

    def release_job(self, job_id: int, owner: str) -> None:
        self._write(lambda conn: self._exec(conn, "extract_release_one", id=job_id, owner=owner))

    def release_leases(self, owner: str) -> None:
        def work(conn: Connection) -> None:
            self._exec(conn, "extract_release", owner=owner)
            self._exec(conn, "poll_release", owner=owner)
            self._exec(conn, "host_slots_release_owner", owner=owner)

        self._write(work)

    def prune(
        self, news_before: str | None, tombstones_before: str | None, batch: int = 500
    ) -> tuple[int, int]:
        return (
            self._delete_in_batches("prune_news", news_before, batch),
            self._delete_in_batches("prune_tombstones", tombstones_before, batch),
        )

    def clock_suspect(self) -> None:
        def work(conn: Connection) -> None:
            self._exec(conn, "clock_suspect")
            self._exec(conn, "clock_suspect_until")

        self._write(work)

    def clock_suspect_from(self) -> str | None:
        """The first article id stored under a clock that could not be believed, not
        settled yet (None: none)."""
        marks = {r["key"]: r["value"] for r in self._read("meta_all")}
        return marks.get("clock_suspect_from")

    def clock_settle(self, now: str) -> int:
        first = self.clock_suspect_from()
        if first is None:
            return 0

        def work(conn: Connection) -> int:
            settled = self._exec(conn, "clock_settle_news", now=now, first_id=first).fetchall()
            self._exec(conn, "clock_suspect_clear")
            return len(settled)

        return self._write(work)

    def _delete_in_batches(self, name: str, before: str | None, batch: int) -> int:
        total = 0
        while before is not None:
            cursor = self._write(lambda conn: self._exec(conn, name, before=before, limit=batch))
            total += cursor.rowcount
            if cursor.rowcount < batch:
                break
        return total

    def save_article(
        self,
        job_id: int,
        article: Article,
        published: str | None,
        fetched_at: str,
        window_start: str | None = None,
    ) -> LinkedEntry | None:
        """Store the article, or, when its page is an article already in news (same
        canonical URL, or a fingerprint within identity.MAX_DISTANCE among the articles
        fetched since ``window_start``; None: no heuristics), link the row to it. Returns
        the link made, or None when the article was stored."""

        def work(conn: Connection) -> LinkedEntry | None:
            if window_start is not None:
                same_page = (
                    self._exec(
                        conn, "identity_news_by_canonical", canonical=article.canonical_url
                    ).fetchone()
                    if article.canonical_url
                    else None
                )
                link = identity.duplicate(
                    by_canonical=None if same_page is None else int(same_page["id"]),
                    print_=article.fingerprint,
                    # (news id, fingerprint) of every article of the window
                    recent=self._exec_tuples(conn, "identity_recent_prints", since=window_start)
                    if article.fingerprint is not None
                    else (),
                )
                if link is not None:
                    self._exec(
                        conn,
                        "identity_mark_duplicate",
                        id=job_id,
                        news_id=link.target,
                        reason=link.reason,
                    )
                    return LinkedEntry(
                        id=job_id,
                        url="",
                        title="",
                        first_seen_at=fetched_at,
                        reason=f"{link.reason}: article {link.target}",
                    )
            title = self._exec(conn, "extract_title_of", id=job_id).fetchone()
            feed = self._exec(conn, "extract_feed_title_of", id=job_id).fetchone()
            self._exec(
                conn,
                "extract_save",
                id=job_id,
                # an entry without a title (none of its versions has one): its text's
                # beginning, else the page's title, else its URL (feedsync/titles.py)
                title=titles.shown(
                    title["title"] or "", title["summary"], title["url"], article.title
                )
                if title is not None
                else "",
                feed_title=feed["title"] if feed is not None else None,
                published=published,
                author=article.author,
                language=article.language,
                body=article.text,
                fetched_at=fetched_at,
                canonical_url=article.canonical_url,
                fingerprint=article.fingerprint,
            )
            self._exec(conn, "extract_done", id=job_id)
            return None

        return self._write(work)

    def news_links(self, news_id: int) -> tuple[list[LinkedEntry], list[LinkedEntry]]:
        """(revisions, duplicates) of an article: its titles over time, and the entries
        found to be it under another URL."""
        rows = self._read("news_by_id", id=news_id)
        if not rows:
            return [], []
        summary = self._read("news_summary_of", id=news_id)[0]["summary_id"]

        def linked(name: str, **params: Any) -> list[LinkedEntry]:
            return [
                LinkedEntry(
                    id=r["id"],
                    url=r["url"],
                    title=titles.shown(r["title"], r["summary"], r["url"]),
                    first_seen_at=r["first_seen_at"],
                    reason=r["link_reason"],
                )
                for r in self._read(name, **params)
            ]

        return (
            linked("identity_revisions", root=summary),
            linked("identity_duplicates", news_id=news_id),
        )

    def record_extract_failure(self, job_id: int, owner: str, outcome: FailureOutcome) -> None:
        self._write(
            lambda conn: self._exec(
                conn,
                "extract_failed",
                id=job_id,
                owner=owner,
                state=outcome.state,
                attempts=outcome.attempts,
                next_attempt_at=outcome.next_attempt_at,
                error=outcome.error,
            )
        )
