"""The engine's part of a storage backend, as the shared code sees it: how a transaction is
opened and retried, how one named query runs, and what only an engine can do. The
roles' shared code (feedsync/storage/sql_*.py) is written against this class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Self, TypeVar

from feedsync.records import (
    NewsItem,
    SearchHit,
    SnapshotResult,
    StorageStatus,
)
from feedsync.storage import search as fulltext

T = TypeVar("T")

# A DB-API connection of the engine; its rows are read by column name.
Connection = Any

# Reason stored on a config-owned feed whose line left the config file.
LEFT_CONFIG = "not in the config file any more"


class SQLCore:
    """What every role's code may call on ``self``; an engine fills it in."""

    #: where the data is, for messages (a path or a server; never a password)
    location: str

    #: write transactions begun so far (bench/: how many a feed poll costs)
    writes: int = 0

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

    def _exec_tuples(self, conn: Connection, name: str, **params: Any) -> Iterable[tuple[Any, ...]]:
        """As :meth:`_exec`, its rows plain tuples, for a query read by the thousand (a
        row by column name costs twice the time of the row itself)."""
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

    def save(self, *, force: bool = False) -> SnapshotResult | None:
        raise NotImplementedError

    def status(self) -> StorageStatus:
        raise NotImplementedError

    def search(self, query: str, limit: int, marks: tuple[str, str]) -> list[SearchHit]:
        raise NotImplementedError

    def export_news(self, since: str) -> Iterator[NewsItem]:
        raise NotImplementedError

    def search_count(self, query: str, cap: int) -> int:
        raise NotImplementedError


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
