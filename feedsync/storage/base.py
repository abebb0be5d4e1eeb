"""What both engines share: every storage method written once, over named queries.

:class:`SQLStorage` holds the logic of :class:`feedsync.storage.Storage` (which queries
run, in which transaction, how rows become records). An engine subclass
(:mod:`feedsync.storage.sqlite`, :mod:`feedsync.storage.postgresql`) supplies how a
transaction is opened and retried, how one named query runs, and what only it can do
(snapshots, full-text search, streaming). The queries have the same names, tables and
columns on both engines (``sql/``; ``sql/postgresql/`` replaces the ones PostgreSQL
writes differently), so the same method works on both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Self, TypeVar

from feedsync import decide, identity
from feedsync.records import (
    FAILED,
    GONE,
    NOT_MODIFIED,
    STAGED,
    Article,
    ArticleJob,
    Entry,
    FailureOutcome,
    Feed,
    FeedClaim,
    FeedHealth,
    LinkedEntry,
    NewsItem,
    PollIntent,
    PollRecord,
    SearchHit,
    SnapshotResult,
    StagedEntry,
    StorageStatus,
)
from feedsync.storage import search as fulltext

T = TypeVar("T")

# A DB-API connection of the engine; its rows are read by column name.
Connection = Any

# Reason stored on a config-owned feed whose line left the config file.
LEFT_CONFIG = "not in the config file any more"


class SQLStorage:
    """The engine-independent part of a storage backend."""

    #: where the data is, for messages (a path or a server; never a password)
    location: str
    #: write transactions begun so far (bench/: how many a feed poll costs)
    writes: int = 0

    # ------------------------------------------------------------ the engine's part

    def _write(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one write transaction, retried whole when the engine says the
        transaction met another (busy, deadlock): none does network I/O."""
        raise NotImplementedError

    def _read(self, name: str, **params: Any) -> list[Any]:
        """The rows of one named query, in a transaction of its own."""
        raise NotImplementedError

    def _exec(self, conn: Connection, name: str, **params: Any) -> Any:
        """One named query inside ``work``'s transaction; returns its cursor."""
        raise NotImplementedError

    def _pull_entry(self, conn: Connection, summary_id: int) -> None:
        """An entry about to change is brought where changes are made, if it is not
        there (SQLite: from the card into the live database); nothing elsewhere."""

    def _pull_article_of(self, conn: Connection, summary_id: int) -> None:
        """The same for the article of an entry."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        """Closed on the way out of a ``with`` block, error or not (the error goes on)."""
        self.close()

    def snapshot(self, force: bool = False) -> SnapshotResult | None:
        raise NotImplementedError

    def status(self) -> StorageStatus:
        raise NotImplementedError

    def search(self, query: str, limit: int, marks: tuple[str, str]) -> list[SearchHit]:
        raise NotImplementedError

    def export_news(self, since: str) -> Iterator[NewsItem]:
        raise NotImplementedError

    # ------------------------------------------------------------ feeds

    def sync_config_feeds(self, urls: Sequence[str] | Mapping[str, str], now: str) -> list[str]:
        modes = dict(urls) if isinstance(urls, Mapping) else dict.fromkeys(urls, identity.AUTO)
        wanted = list(modes)

        def work(conn: Connection) -> list[str]:
            added = []
            for url, mode in modes.items():
                row = self._exec(conn, "feed_by_url", url=url).fetchone()  # also a moved one
                created = None
                if row is None:
                    created = self._exec(
                        conn,
                        "feed_insert",
                        url=url,
                        origin="config",
                        now=now,
                        category=None,
                        title=None,
                    ).fetchone()
                if created is not None:
                    feed_id = created["id"]
                    added.append(url)
                else:
                    # there, or (PostgreSQL) added by another process starting this
                    # instant: its row is visible to the next statement once committed
                    row = row or self._exec(conn, "feed_by_url", url=url).fetchone()
                    feed_id = row["id"]
                    self._exec(conn, "feed_adopt_for_config", id=feed_id, left_config=LEFT_CONFIG)
                self._exec(conn, "feed_set_identity", id=feed_id, identity=mode)
            keep = set(wanted)
            for row in self._exec(conn, "feeds_by_origin", origin="config").fetchall():
                listed = row["url"] in keep or row["moved_from"] in keep
                if not listed and row["enabled"]:
                    self._exec(conn, "feed_disable", id=row["id"], reason=LEFT_CONFIG)
            return added

        return self._write(work)

    def add_feed(
        self, url: str, now: str, category: str | None = None, title: str | None = None
    ) -> bool:
        return self._write(
            lambda conn: (
                self._exec(
                    conn,
                    "feed_insert",
                    url=url,
                    origin="cli",
                    now=now,
                    category=category,
                    title=title,
                ).fetchone()
                is not None
            )
        )

    def remove_feed(self, url: str) -> bool:
        def work(conn: Connection) -> bool:
            row = self._exec(conn, "feed_by_url", url=url).fetchone()
            if row is None:
                return False
            self._exec(conn, "feed_delete_links", id=row["id"])
            self._exec(conn, "feed_delete", id=row["id"])
            return True

        return self._write(work)

    def feed_health(self, week_ago: str | None = None) -> list[FeedHealth]:
        """Every feed with its polling health and, when ``week_ago`` is given, its
        articles' (``feedsync feeds``): pending, failing, given up and extracted."""
        articles: dict[int, dict[str, Any]] = {}
        if week_ago is not None:
            for r in self._read("feed_articles", week_ago=week_ago):
                articles[r["feed_id"]] = {
                    "articles_pending": int(r["pending"] or 0),
                    "articles_failing": int(r["failing"] or 0),
                    "articles_given_up_week": int(r["given_up_week"] or 0),
                    "articles_extracted_week": int(r["extracted_week"] or 0),
                }
            for r in self._read("feed_article_errors", week_ago=week_ago):
                found = articles.setdefault(r["feed_id"], {})
                found.setdefault("articles_last_error", r["last_error"])
        return [
            FeedHealth(
                id=r["id"],
                url=r["url"],
                title=r["title"],
                enabled=bool(r["enabled"]),
                disabled_reason=r["disabled_reason"],
                origin=r["origin"],
                latest_published=r["latest_published"],
                last_poll_at=r["last_poll_at"],
                last_success_at=r["last_success_at"],
                error_count=r["error_count"],
                last_error=r["last_error"],
                entries=r["entries"],
                last_warning=r["last_warning"],
                moved_from=r["moved_from"],
                category=r["category"],
                next_poll_at=r["next_poll_at"],
                **articles.get(r["id"], {}),
            )
            for r in self._read("feed_health")
        ]

    def feeds_to_poll(self, due_before: str | None = None, week_ago: str = "") -> list[Feed]:
        return [
            Feed(
                id=r["id"],
                url=r["url"],
                latest_published=r["latest_published"],
                etag=r["etag"],
                last_modified=r["last_modified"],
                error_count=r["error_count"],
                polled_before=bool(r["polled_before"]),
                recent_entries=r["recent_entries"],
                recent_oldest=r["recent_oldest"],
                redirect_to=r["redirect_to"],
                redirect_seen=r["redirect_seen"],
                identity=r["identity"],
            )
            for r in self._read("feeds_to_poll", due_before=due_before, week_ago=week_ago)
        ]

    # ------------------------------------------------------------ stages 1 and 2

    def record_poll(self, intent: PollIntent) -> PollRecord:
        """One feed poll, whatever its outcome, in one transaction: the staged entries
        (this is where they are deduplicated), the feed's row (schedule, validators,
        errors, its claim given back), its move, its host's politeness state."""

        def work(conn: Connection) -> PollRecord:
            record = PollRecord()
            if intent.outcome == STAGED:
                record = self._stage(conn, intent)
            elif intent.outcome == NOT_MODIFIED:
                self._exec(
                    conn,
                    "poll_not_modified",
                    feed_id=intent.feed_id,
                    etag=intent.etag,
                    last_modified=intent.last_modified,
                    now=intent.polled_at,
                    next_poll_at=intent.next_poll_at,
                )
            elif intent.outcome == FAILED:
                self._exec(
                    conn,
                    "poll_failed",
                    feed_id=intent.feed_id,
                    error=intent.error,
                    now=intent.polled_at,
                    next_poll_at=intent.next_poll_at,
                )
            elif intent.outcome == GONE:
                self._exec(
                    conn,
                    "poll_disable",
                    feed_id=intent.feed_id,
                    reason=intent.error,
                    now=intent.polled_at,
                )
            else:
                raise ValueError(f"unknown poll outcome {intent.outcome!r}")
            if intent.redirect is not None:
                record = replace(record, move_refused=self._move(conn, intent))
            if intent.host_wait is not None:
                wait = intent.host_wait
                self._exec(
                    conn,
                    "host_wait",
                    host=wait.host,
                    not_before=wait.not_before,
                    backoff_count=wait.backoff_count,
                    reason=wait.reason,
                )
            if intent.host_clear is not None:
                self._exec(conn, "host_clear", host=intent.host_clear)
            for host, slot in intent.host_slots:
                self._exec(conn, "host_slot_release", host=host, slot=slot, owner=intent.owner)
            if intent.held_host is not None:
                wanted = self._exec(conn, "host_wanted", host=intent.held_host).fetchone()
                record = replace(record, host_wanted=bool(wanted["wanted"]))
            return record

        return self._write(work)

    def _stage(self, conn: Connection, intent: PollIntent) -> PollRecord:
        """In record_poll's transaction: the candidates, INSERT OR IGNORE, and the feed."""
        created: list[int] = []
        linked = 0
        revisions = 0
        for entry in intent.entries:
            row = self._exec(
                conn,
                "stage_insert",
                url=entry.url,
                title=entry.title,
                published=entry.published,
                summary=entry.summary,
                author=entry.author,
                guid=entry.guid,
                now=intent.polled_at,
                owner=intent.owner,
                lease_until=intent.lease_until,
            ).fetchone()
            if row is not None:
                summary_id = row["id"]
                created.append(summary_id)
                if intent.identity == identity.AUTO and self._link_revision(
                    conn, intent, entry, summary_id
                ):
                    revisions += 1
            else:
                existing = self._exec(
                    conn, "stage_lookup", url=entry.url, title=entry.title
                ).fetchone()
                summary_id = existing["id"]
                if existing["published"] is None and entry.published is not None:
                    self._pull_entry(conn, summary_id)
                    self._exec(conn, "stage_fill_date", id=summary_id, published=entry.published)
            linked += self._exec(
                conn,
                "stage_link",
                feed_id=intent.feed_id,
                summary_id=summary_id,
                now=intent.polled_at,
            ).rowcount
        self._exec(
            conn,
            "stage_feed_polled",
            feed_id=intent.feed_id,
            newest=intent.newest_published,
            title=intent.feed_title,
            etag=intent.etag,
            last_modified=intent.last_modified,
            now=intent.polled_at,
            next_poll_at=intent.next_poll_at,
            warning=intent.warning,
        )
        return PollRecord(created_ids=tuple(created), linked=linked, revisions=revisions)

    def _move(self, conn: Connection, intent: PollIntent) -> str | None:
        """In record_poll's transaction: a redirect seen (pending) or trusted (the feed
        takes the new URL). Returns why the move was refused: another feed has the URL,
        and this one is disabled."""
        state = intent.redirect
        assert state is not None
        if state.move_to is None:
            self._exec(
                conn,
                "poll_redirect_pending",
                feed_id=intent.feed_id,
                redirect_to=state.pending,
                seen=state.seen,
            )
            return None
        if self._exec(conn, "poll_move", feed_id=intent.feed_id, url=state.move_to).rowcount:
            return None
        reason = f"moved to {state.move_to}, which is already in the list as another feed"
        self._exec(conn, "feed_disable", id=intent.feed_id, reason=reason)
        return reason

    def claim_feeds(
        self,
        feed_ids: Sequence[int],
        owner: str,
        now: str,
        lease_until: str,
        due_before: str | None = None,
        hold: Sequence[str] = (),
        hold_delay: float = 0.0,
        hold_lease: float = 0.0,
    ) -> FeedClaim:
        """Claim feeds for polling, in one transaction: those no other live process holds
        (and, with ``due_before``, still due: another poller may have polled one since the
        pass listed it). Says too whether another process is at work on the database;
        when none is, holds the ``hold`` hosts it can (:meth:`_hold`)."""

        def work(conn: Connection) -> FeedClaim:
            taken = frozenset(
                int(row["id"])
                for row in self._exec(
                    conn,
                    "poll_claim",
                    ids=json.dumps(list(feed_ids)),
                    owner=owner,
                    now=now,
                    lease_until=lease_until,
                    due_before=due_before,
                ).fetchall()
            )
            others = bool(
                self._exec(conn, "others_at_work", owner=owner, now=now).fetchone()["others"]
            )
            held: list[tuple[str, float]] = []
            if not others:
                for host in hold:
                    ahead = self._hold(conn, host, owner, hold_delay, hold_lease)
                    if ahead is not None:
                        held.append((host, ahead))
            return FeedClaim(ids=taken, others=others, held=tuple(held))

        return self._write(work)

    def _hold(
        self, conn: Connection, host: str, owner: str, delay: float, lease: float
    ) -> float | None:
        """In claim_feeds' transaction: hold ``host`` whole (feedsync/holds.py) when no
        request to it is in flight anywhere. Returns the seconds until its next start may
        go (its pace, from the database), or None: not held."""
        now, next_start, taken = self._host_state(conn, host, besides=owner)
        if not decide.may_hold(now, delay, taken):
            return None
        self._exec(
            conn,
            "host_slot_take",
            host=host,
            slot=decide.HOLD,
            owner=owner,
            lease_until=now + lease,
        )
        return max(0.0, next_start - now)

    def _host_state(
        self, conn: Connection, host: str, besides: str | None = None
    ) -> tuple[float, float, list[tuple[int, float]]]:
        """In a transaction: the host's row locked (PostgreSQL), and the database's clock,
        the host's next start and its slots as (slot, lease_until). ``besides``: without
        that owner's hold and its ask for one (its own, renewed rather than refused)."""
        row = self._exec(conn, "host_pace_lock", host=host).fetchone()
        now = float(row["now"])
        taken = [
            (int(r["slot"]), float(r["lease_until"]))
            for r in self._exec(conn, "host_slots_taken", host=host, now=now)
            if not (r["owner"] == besides and int(r["slot"]) in (decide.HOLD, decide.WANTED))
        ]
        return now, float(row["next_start"]), taken

    def host_holds_keep(self, owner: str, now: str, lease: float) -> bool:
        def work(conn: Connection) -> bool:
            self._exec(conn, "host_holds_renew", owner=owner, lease=lease)
            row = self._exec(conn, "others_at_work", owner=owner, now=now).fetchone()
            return bool(row["others"])

        return self._write(work)

    def host_holds_release(self, owner: str, aheads: Mapping[str, float]) -> None:
        def work(conn: Connection) -> None:
            for host, ahead in aheads.items():
                self._exec(conn, "host_slot_release", host=host, slot=decide.HOLD, owner=owner)
                self._exec(conn, "host_wanted_clear", host=host)
                self._exec(conn, "host_pace_push", host=host, ahead=max(ahead, 0.0))

        self._write(work)

    def _link_revision(
        self, conn: Connection, intent: PollIntent, entry: Entry, summary_id: int
    ) -> bool:
        """In the staging transaction: is the row just created another version of an
        earlier story (identity.revision)? Then it is linked, never fetched, and its title
        becomes the article's."""

        def root(name: str, **params: Any) -> int | None:
            row = self._exec(
                conn, name, id=summary_id, since=intent.window_start, **params
            ).fetchone()
            return None if row is None else int(row["root"])

        link = identity.revision(
            by_guid=root("identity_by_guid", feed_id=intent.feed_id, guid=entry.guid)
            if entry.guid
            else None,
            by_url=root("identity_by_url", url=entry.url),
            by_canonical=root("identity_by_canonical_page", url=entry.url),
        )
        if link is None or link.target == summary_id:
            return False
        self._exec(
            conn, "identity_mark_revision", id=summary_id, root=link.target, reason=link.reason
        )
        self._pull_article_of(conn, link.target)
        self._exec(conn, "identity_retitle", root=link.target, title=entry.title)
        return True

    def release_feed(self, feed_id: int, owner: str) -> None:
        self._write(lambda conn: self._exec(conn, "poll_unclaim", feed_id=feed_id, owner=owner))

    # ------------------------------------------------------------ stage 3

    def claim_articles(
        self, owner: str, after_id: int, due_before: str, now: str, lease_until: str, limit: int
    ) -> list[ArticleJob]:
        def work(conn: Connection) -> list[ArticleJob]:
            rows = self._exec(
                conn,
                "extract_claim",
                owner=owner,
                after_id=after_id,
                due_before=due_before,
                now=now,
                lease_until=lease_until,
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
                    feed_urls=tuple(f["url"] for f in feeds),
                    heuristics=all(f["identity"] == identity.AUTO for f in feeds),
                )
                for r in rows
                for feeds in [self._exec(conn, "extract_feeds_of", id=r["id"]).fetchall()]
            ]

        return sorted(self._write(work), key=lambda job: job.id)

    def hosts_waiting(self, now: str) -> dict[str, tuple[str, int]]:
        return {
            r["host"]: (r["not_before"], r["backoff_count"])
            for r in self._read("hosts_waiting", now=now)
        }

    def host_wait(self, host: str, not_before: str, backoff_count: int, reason: str) -> None:
        self._write(
            lambda conn: self._exec(
                conn,
                "host_wait",
                host=host,
                not_before=not_before,
                backoff_count=backoff_count,
                reason=reason,
            )
        )

    def host_clear(self, host: str) -> None:
        self._write(lambda conn: self._exec(conn, "host_clear", host=host))

    def host_turn(
        self, host: str, owner: str, slots: int, delay: float, lease: float
    ) -> tuple[int, float] | None:
        def work(conn: Connection) -> tuple[int, float] | None:
            now, next_start, taken = self._host_state(conn, host)
            turn = decide.host_turn(now, next_start, delay, taken, slots)
            if turn is None:
                if decide.held(now, delay, taken):
                    # held whole by another process: ask it to give the host up
                    self._exec(
                        conn,
                        "host_slot_take",
                        host=host,
                        slot=decide.WANTED,
                        owner=owner,
                        lease_until=now + lease,
                    )
                return None
            if delay > 0:
                self._exec(conn, "host_pace_set", host=host, next_start=turn.next_start)
            self._exec(
                conn,
                "host_slot_take",
                host=host,
                slot=turn.slot,
                owner=owner,
                lease_until=turn.start + lease,
            )
            # how long to wait, not when: the caller sleeps by its own clock
            return turn.slot, turn.start - now

        return self._write(work)

    def host_renew(self, host: str, owner: str, slot: int, lease: float) -> None:
        self._write(
            lambda conn: self._exec(
                conn, "host_slot_renew", host=host, slot=slot, owner=owner, lease=lease
            )
        )

    def host_done(self, host: str, owner: str, slot: int) -> None:
        self._write(
            lambda conn: self._exec(conn, "host_slot_release", host=host, slot=slot, owner=owner)
        )

    def release_job(self, job_id: int, owner: str) -> None:
        self._write(lambda conn: self._exec(conn, "extract_release_one", id=job_id, owner=owner))

    def room_for_entries(self) -> str | None:
        """A database on a server or a disk has no RAM budget (SQLiteStorage has one)."""
        return None

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
                    recent=(
                        (int(r["id"]), int(r["fingerprint"]))
                        for r in self._exec(conn, "identity_recent_prints", since=window_start)
                    )
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
                title=title["title"] if title is not None else "",
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
                    title=r["title"],
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

    # ------------------------------------------------------------ reading

    def counts(self) -> dict[str, int]:
        row = self._read("counts")[0]
        return dict(row)

    def news_recent(self, limit: int) -> list[NewsItem]:
        """The newest articles, bodies included."""
        found = (self.news_get(item.id) for item in self.news_list("", None, limit))
        return [item for item in found if item is not None]

    # ------------------------------------------------------------ meta

    def _meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self._read("meta_all")}

    def _record_snapshot(self, values: dict[str, str]) -> None:
        def work(conn: Connection) -> None:
            for key, value in values.items():
                self._exec(conn, "meta_set", key=key, value=value)

        self._write(work)

    # ------------------------------------------------------------ the user's commands

    def news_list(self, since: str, feed_id: int | None, limit: int) -> list[NewsItem]:
        """Newest first: the ids (through each side's index, or the feed's articles),
        then those rows."""
        if feed_id is None:
            keys = [(r["w"], r["id"]) for r in self._read("news_keys", since=since, limit=limit)]
        else:
            rows = self._read("news_of_feed", feed_id=feed_id)
            keys = sorted(((r["w"], r["id"]) for r in rows if r["w"] >= since), reverse=True)
        items = []
        for _, news_id in keys[:limit]:
            found = self._read("news_by_id", id=news_id)
            if found:
                items.append(NewsItem(**{**dict(found[0]), "body": ""}))
        return items

    def news_get(self, ref: int | str) -> NewsItem | None:
        rows = (
            self._read("news_by_id", id=ref)
            if isinstance(ref, int)
            else self._read("news_by_url", url=ref)
        )
        if not rows:
            return None
        return NewsItem(**dict(max(rows, key=lambda r: int(r["id"]))))

    def news_feeds(self, news_id: int) -> list[tuple[int, str, str | None]]:
        rows = self._read("news_summary_of", id=news_id)
        if not rows:
            return []
        found = self._read("news_carried_by", summary_id=rows[0]["summary_id"], news_id=news_id)
        return [(r["id"], r["url"], r["title"]) for r in found]

    def entries_in_state(
        self, state: str, since: str, feed_id: int | None, limit: int
    ) -> list[StagedEntry]:
        """Entries without an article in ``state`` ('new', 'failed', 'gone'), newest
        first, with the feeds that carry them."""
        rows = self._read(
            "entries_in_state", state=state, since=since, feed_id=feed_id, limit=limit
        )
        return [self._staged(r) for r in rows]

    def entries_by_url(self, url: str) -> list[StagedEntry]:
        """The entries of ``url`` that have no article (pending, failed, given up)."""
        return [self._staged(r) for r in self._read("entries_by_url", url=url)]

    def _staged(self, row: Any) -> StagedEntry:
        feeds = tuple(
            (r["id"], r["url"], r["title"]) for r in self._read("entry_feeds", id=row["id"])
        )
        return StagedEntry(
            id=row["id"],
            url=row["url"],
            title=row["title"],
            published=row["published"],
            first_seen_at=row["first_seen_at"],
            state=row["state"],
            attempts=row["attempts"],
            next_attempt_at=row["next_attempt_at"],
            last_error=row["last_error"],
            feeds=feeds,
        )

    def feed_id(self, ref: str) -> int | None:
        if ref.isdigit():
            return int(ref) if any(f.id == int(ref) for f in self.feed_health()) else None
        rows = self._read("feed_by_url", url=ref)
        return int(rows[0]["id"]) if rows else None

    def status_counts(self, failing_after: int, today: str) -> dict[str, Any]:
        return dict(self._read("status_counts", failing_after=failing_after, today=today)[0])

    def daemon_heartbeat(self, pid: int, host: str, started_at: str, now: str) -> None:
        self._record_snapshot(
            {
                "daemon_pid": str(pid),
                "daemon_host": host,
                "daemon_started_at": started_at,
                "daemon_seen_at": now,
            }
        )

    def daemon_info(self) -> dict[str, str]:
        meta = self._meta()
        return {k.removeprefix("daemon_"): v for k, v in meta.items() if k.startswith("daemon_")}


def search_hit(row: Any, wanted: fulltext.Query, marks: tuple[str, str]) -> SearchHit:
    """One search result from an article row (id, url, title, published, feed_title,
    body), its snippet marked where the query matches: the same on both engines."""
    return SearchHit(
        id=row["id"],
        url=row["url"],
        title=row["title"],
        published=row["published"],
        feed_title=row["feed_title"],
        snippet=wanted.snippet(row["title"] + " " + row["body"], marks),
    )


def like_escape(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
