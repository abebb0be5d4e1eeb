"""What a feed reader hands on: the document and its entries as the feed wrote them.

Each reader (jsonfeed.py, fast.py, referee.py) fills these with values not yet checked,
cut or cleaned; the package's normal form (``feedsync.parse._normalise``) makes them
``Entry`` records. Apart from the readers so that none of them imports another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# Entries read from one document: the newest (:func:`newest`); the rest are counted as
# skipped, never read further.
MAX_ENTRIES = 2000

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class NotAFeed(Exception):
    """The document has no feed in it (HTML page, empty body, broken beyond recovery)."""


@dataclass(frozen=True, slots=True)
class RawEntry:
    """One entry as a reader found it: values not yet checked, cut or cleaned."""

    link: Any = None
    title: Any = None
    date: datetime | None = None  # published, else updated
    summary: Any = None
    author: Any = None
    guid: Any = None


@dataclass(frozen=True, slots=True)
class RawFeed:
    """A document as a reader found it."""

    title: Any
    entries: list[RawEntry]
    problem: str | None = None  # what was malformed (feedparser's bozo), if anything
    ttl: Any = None  # RSS <ttl>, as written (minutes)
    rejected: tuple[str, ...] = ()  # why entries that are no entry at all were left out
    beyond: int = 0  # entries past the newest MAX_ENTRIES, left unread by the reader


def newest(dates: Sequence[datetime | None], limit: int = MAX_ENTRIES) -> list[int]:
    """The positions of the ``limit`` newest entries by date (undated ones after the
    dated), in document order; every position when there are no more than ``limit``.

    The cap comes before any per-entry work: a feed that is really an archive (100,000
    entries in 10 MB) is read to its dates, then only the newest are turned into
    entries. Each reader calls this as soon as it has the dates, and the normal form
    once more for a reader that could not (feedparser reads the whole document itself).
    Dates first, not document order: some feeds list oldest first. Linear but for one
    sort of the positions (n log n, in C)."""
    if len(dates) <= limit:
        return list(range(len(dates)))
    newest_first = sorted(
        range(len(dates)),
        key=lambda i: (dates[i] is not None, dates[i] or _EPOCH),
        reverse=True,  # stable still: entries of one date keep their document order
    )
    return sorted(newest_first[:limit])
