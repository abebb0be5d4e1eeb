"""SQLite: reading across the two files for the commands. Search runs the card's
month indexes and scans what is not indexed yet (the live database, a month's newest
rows) with the same judge (feedsync/storage/search.py); export streams both sides merged
by id. Part of :class:`feedsync.storage.sqlite.SQLiteStorage`.
"""

from __future__ import annotations

import functools
import heapq
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from feedsync.records import (
    NewsItem,
    SearchHit,
)
from feedsync.storage import card_layout
from feedsync.storage import search as fulltext
from feedsync.storage.base import SQLStorage, search_hit

T = TypeVar("T")


class SQLiteReading(SQLStorage):
    """The search and export of :class:`feedsync.storage.sqlite.SQLiteStorage`, which sets
    these attributes and supplies ``_retry``."""

    _conn: sqlite3.Connection
    _q: dict[str, str]
    _tokenizer: fulltext.Tokenizer | None
    _matches_registered: bool

    def _retry(self, work: Callable[[], T]) -> T:
        raise NotImplementedError

    def _months(self) -> list[tuple[str, int]]:
        """(month, the id after which its articles are not in the search index yet)."""
        marks = {
            str(r["key"]).removeprefix("search_indexed_"): int(r["value"])
            for r in self._read("live_card_watermarks")
        }
        return [
            (str(r["month"]), marks.get(str(r["month"]), 0)) for r in self._read("live_card_months")
        ]

    def search(self, query: str, limit: int, marks: tuple[str, str]) -> list[SearchHit]:
        """The articles that match (feedsync/search.py says what that means), through
        each month's index on the card (best first, by bm25 with title hits weighing
        more), and through a scan of the articles not indexed yet (the live database's,
        a month's newest); titles that match first. The index narrows down, the text
        decides (``Query.matches``): the answer is PostgreSQL's."""
        if self._tokenizer is None:
            self._tokenizer = fulltext.Tokenizer()
        wanted = fulltext.parse(query)
        match = fulltext.fts_match(wanted, self._tokenizer)
        months = self._months()
        scanned = self._scan(wanted, months, everything=match is None)
        found: list[tuple[float, int]] = []
        if match is not None:
            for month, _ in months:
                rows = self._month_rows("card_search", month, {"query": match, "limit": limit * 4})
                found += [(float(r["score"]), int(r["id"])) for r in rows]
        indexed: list[sqlite3.Row] = []
        seen = {int(r["id"]) for r in scanned}
        for _, article in sorted(found):
            if article in seen:
                continue
            rows = self._read("news_hits", id=article)
            if rows and wanted.matches(str(rows[0]["title"]) + " " + str(rows[0]["body"])):
                indexed.append(rows[0])
                seen.add(article)

        def in_title(row: sqlite3.Row) -> bool:
            return wanted.matches(str(row["title"]))

        newest_first = sorted(
            scanned, key=lambda r: r["published"] or r["fetched_at"], reverse=True
        )
        ranked = [r for r in newest_first if in_title(r)] + [r for r in indexed if in_title(r)]
        ranked += [r for r in newest_first if not in_title(r)] + [
            r for r in indexed if not in_title(r)
        ]
        return [search_hit(r, wanted, marks) for r in ranked[:limit]]

    def search_count(self, query: str, cap: int) -> int:
        """How many articles :meth:`search` would give with ``limit=cap``: the same
        candidates (the scan; each month's index, its ``cap * 4`` best) and the same
        judge (``feedsync_matches``, in SQLite), counted where they are: no row leaves
        SQLite, no snippet is cut, and it stops at ``cap``."""
        if self._tokenizer is None:
            self._tokenizer = fulltext.Tokenizer()
        wanted = fulltext.parse(query)
        match = fulltext.fts_match(wanted, self._tokenizer)
        months = self._months()
        self._register_matches()
        text = {"query": wanted.text}
        found = int(self._read("news_scan_count", cap=cap, **text)[0]["n"])
        for month, after in months:
            if found >= cap:
                return cap
            params = {"after": -1 if match is None else after, "cap": cap - found, **text}
            found += int(self._month_rows("news_scan_month_count", month, params)[0]["n"])
        if match is not None:
            for month, _ in months:
                if found >= cap:
                    return cap
                params = {"query": match, "text": wanted.text, "limit": cap * 4}
                params["cap"] = cap - found
                found += int(self._month_rows("card_search_count", month, params)[0]["n"])
        return min(found, cap)

    def _register_matches(self) -> None:
        """``feedsync_matches(query, text)`` in this connection's SQL, once."""
        if not self._matches_registered:
            self._conn.create_function("feedsync_matches", 2, _matches, deterministic=True)
            self._matches_registered = True

    def _scan(
        self, wanted: fulltext.Query, months: list[tuple[str, int]], everything: bool
    ) -> list[sqlite3.Row]:
        """The articles not in the search index yet that match (every article, when
        the index cannot narrow the query down): the query runs in SQLite as a
        function of the text (``feedsync_matches``), so only the matches leave it."""
        self._register_matches()
        params = {"query": wanted.text}
        rows = self._read("news_scan", **params)
        for month, after in months:
            rows += self._month_rows(
                "news_scan_month", month, {"after": -1 if everything else after, **params}
            )
        return rows

    def _month_rows(self, name: str, month: str, params: dict[str, Any]) -> list[sqlite3.Row]:
        """The rows of a named query about one month's table on the card."""
        query = card_layout.sql(name, month)
        return self._retry(lambda: self._conn.execute(query, params).fetchall())

    def _month_cursor(self, name: str, month: str, params: dict[str, Any]) -> sqlite3.Cursor:
        query = card_layout.sql(name, month)
        return self._retry(lambda: self._conn.execute(query, params))

    def news_per_day(self, since: str) -> list[tuple[int, str, int]]:
        """(feed id, day, articles) of the articles fetched since ``since`` (sql/news.sql
        news_per_day), the card's read month by month: through the card's view SQLite
        would read every article of the window whole, bodies and all."""
        months = [month for month, _ in self._months()]
        arms = " UNION ALL ".join(
            card_layout.sql("news_per_day_month", m).rstrip().removesuffix(";") for m in months
        )
        query = card_layout.sql(
            "news_per_day", arms=arms or "SELECT NULL AS id, '' AS fetched_at, NULL AS summary_id"
        )
        rows = self._retry(lambda: self._conn.execute(query, {"since": since}).fetchall())
        return [(int(r["feed_id"]), str(r["day"]), int(r["articles"])) for r in rows]

    def export_news(self, since: str) -> Iterator[NewsItem]:
        """Every article since ``since``, oldest first, one at a time: a cursor per side
        (the live database, each month on the card), merged by id, in one read
        transaction (one consistent state), never the whole table in memory."""
        conn = self._conn
        self._retry(lambda: conn.execute("BEGIN"))
        try:
            cursors = [
                self._retry(lambda: conn.execute(self._q["news_export_live"], {"since": since}))
            ]
            for month, _ in self._months():
                cursors.append(self._month_cursor("news_export_month", month, {"since": since}))
            yield from heapq.merge(*(_items(c) for c in cursors), key=lambda item: item.id)
        finally:
            for cursor in locals().get("cursors", []):
                cursor.close()
            if conn.in_transaction:
                conn.execute("COMMIT")


def _items(cursor: sqlite3.Cursor) -> Iterator[NewsItem]:
    while rows := cursor.fetchmany(200):
        for row in rows:
            yield NewsItem(**dict(row))


@functools.lru_cache(maxsize=8)
def _parsed(query: str) -> fulltext.Query:
    return fulltext.parse(query)


def _matches(query: str, text: str | None) -> bool:
    """SQL's ``feedsync_matches(:query, text)``: whether the text matches the query."""
    return text is not None and _parsed(query).matches(text)
