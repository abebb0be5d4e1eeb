"""What a feed reader hands on: the document and its entries as the feed wrote them.

Each reader (jsonfeed.py, fast.py, referee.py) fills these with values not yet checked,
cut or cleaned; the package's normal form (``feedsync.parse._normalise``) makes them
``Entry`` records. Apart from the readers so that none of them imports another.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


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
