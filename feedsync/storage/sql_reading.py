"""What the commands read, and the daemon's heartbeat, written once for both engines
(the Reading role and the engine-neutral part of Upkeep).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feedsync import titles
from feedsync.records import (
    NewsItem,
    StagedEntry,
)
from feedsync.storage.sql_core import Connection, SQLCore
from feedsync.storage_errors import UnknownArticle

# news_window's first page: after every sort key (ISO times are text) and every id
_FIRST_PAGE = ("9999", 2**62)

# news_window's plans for one feed. The walk (the newest articles first, keeping the
# feed's) reads about the entries since the feed's page-th newest: a few pages' worth for
# a busy feed, most of the card for a quiet or small one. Reading the feed by its own links
# (feed_entries_feed, version 11) costs a lookup per link the feed ever had, whatever the
# card holds besides: cheap for a small or quiet feed, a waste for a busy one with years of
# articles. Each page takes the cheaper, from marks read through the indexes
# (feed_plan_marks); a link read costs about LINK_COST entries walked (bench scenario 11
# measured both plans). PLAN forces one ("links" or "walk"): for the tests and the bench,
# which compare them.
LINK_COST = 2
PLAN: str | None = None


class SQLReading(SQLCore):
    """The Reading role over named queries."""

    def counts(self) -> dict[str, int]:
        row = self._read("counts")[0]
        return dict(row)

    def news_recent(self, limit: int) -> list[NewsItem]:
        """The newest articles, bodies included."""
        found = (self.news_get(item.id) for item in self.news_list("", None, limit))
        return [item for item in found if item is not None]

    def _meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self._read("meta_all")}

    def _record_snapshot(self, values: dict[str, str]) -> None:
        def work(conn: Connection) -> None:
            for key, value in values.items():
                self._exec(conn, "meta_set", key=key, value=value)

        self._write(work)

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

    def news_window(
        self,
        *,
        feed_id: int | None = None,
        category: str | None = None,
        before: int | None = None,
        limit: int,
        bodies: bool = True,
    ) -> list[NewsItem]:
        """A page of the newest articles, in :meth:`news_list`'s order, of one feed, of
        one category and its subfolders, or of all, continuing after the article
        ``before`` (keyset paging: a page costs the same however deep it is). Read in the
        index's order with a LIMIT (sql/news.sql news_window): the cost is the articles
        newer than the page's last one, not the size of the database."""
        w, after = _FIRST_PAGE
        if before is not None:
            rows = self._read("news_sort_key", id=before)
            if not rows:
                raise UnknownArticle(f"no article {before}")
            w, after = str(rows[0]["w"]), int(rows[0]["id"])
        if feed_id is not None and category is None and self._few_links(feed_id, limit):
            return self._feed_window(feed_id, (w, after), limit, bodies)
        rows = self._read(
            "news_window",
            w=w,
            id=after,
            feed_id=feed_id,
            category=category,
            limit=limit,
            bodies=bodies,
        )
        return [NewsItem(*(r[name] for name in NewsItem._fields)) for r in rows]

    def _few_links(self, feed_id: int, limit: int) -> bool:
        """Whether a feed's page is cheaper read by its own links than by the walk: the
        walk's entries estimated from the feed's ``limit``-th newest entry, the links
        counted through the feed's index only as far as would still be cheaper."""
        if PLAN is not None:
            return PLAN == "links"
        marks = self._read("feed_plan_marks", feed_id=feed_id, limit=limit)[0]
        kth = max(
            (int(k) for k in (marks["live_kth"], marks["card_kth"]) if k is not None), default=None
        )
        if kth is None:  # fewer than a page of links on each side: the walk reads it all
            return True
        walked = int(marks["newest"]) - kth
        cap = walked // LINK_COST + 1
        links = int(self._read("feed_links_upto", feed_id=feed_id, cap=cap)[0]["n"])
        return links < cap

    def _feed_window(
        self, feed_id: int, after: tuple[str, int], limit: int, bodies: bool
    ) -> list[NewsItem]:
        """news_window of a feed with few links: every article it carried with its sort
        key (news_of_feed, as news_list reads a feed), the page's keys picked in the
        listing's order after ``after``, then those rows."""
        keys = sorted(
            (
                key
                for key in (
                    (str(r["w"]), int(r["id"])) for r in self._read("news_of_feed", feed_id=feed_id)
                )
                if key < after
            ),
            reverse=True,
        )[:limit]
        items = []
        for _, news_id in keys:
            found = self._read("news_by_id", id=news_id)
            if found:
                row = dict(found[0])
                items.append(NewsItem(**(row if bodies else {**row, "body": ""})))
        return items

    def content_key(self) -> str:
        """sql/news.sql content_key (each engine's: meta's counters, read by key)."""
        return str(self._read("content_key")[0]["key"])

    def news_per_day(self, since: str) -> list[tuple[int, str, int]]:
        """(feed id, day, articles) of the articles fetched since ``since``, by the day
        they were fetched (sql/news.sql news_per_day says why not their own dates)."""
        return [
            (int(r["feed_id"]), str(r["day"]), int(r["articles"]))
            for r in self._read("news_per_day", since=since)
        ]

    def news_feeds_of(self, ids: Sequence[int]) -> dict[int, list[tuple[int, str, str | None]]]:
        """:meth:`news_feeds` of each article of a page (a couple of indexed lookups
        each: a page of 50 costs a few milliseconds)."""
        return {news_id: self.news_feeds(news_id) for news_id in ids}

    def news_count(self, since: str, feed_id: int | None) -> int:
        if feed_id is None:
            return int(self._read("news_count", since=since)[0]["n"])
        return sum(1 for r in self._read("news_of_feed", feed_id=feed_id) if r["w"] >= since)

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

    def entries_count(self, state: str, since: str, feed_id: int | None) -> int:
        rows = self._read("entries_count", state=state, since=since, feed_id=feed_id)
        return int(rows[0]["n"])

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
            title=titles.shown(row["title"], row["summary"], row["url"]),
            published=row["published"],
            first_seen_at=row["first_seen_at"],
            state=row["state"],
            attempts=row["attempts"],
            next_attempt_at=row["next_attempt_at"],
            last_error=row["last_error"],
            feeds=feeds,
        )

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
