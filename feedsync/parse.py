"""Feed documents to entries: feedparser, then one normal form per entry. No I/O.

Per entry: the canonical URL (:mod:`feedsync.canonical`, relative links resolved against
the feed's own URL), the title with whitespace collapsed, the date in UTC (``published``,
else ``updated``; clamped or dropped by :func:`feedsync.decide.published_date`). An
entry without a usable link or title is skipped and counted, never fatal. A document
that is not a feed at all raises :class:`NotAFeed` with a one-line reason.
"""

from __future__ import annotations

import calendar
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import feedparser

from feedsync.canonical import canonical_url
from feedsync.decide import published_date
from feedsync.records import Entry, ParsedFeed

MAX_TITLE_CHARS = 1000
MAX_SUMMARY_CHARS = 64 * 1024


class NotAFeed(Exception):
    """The document has no feed in it (HTML page, empty body, broken beyond recovery)."""


def _struct_to_datetime(value: Any) -> datetime | None:
    if not isinstance(value, time.struct_time):
        return None
    try:
        return datetime.fromtimestamp(calendar.timegm(value), tz=UTC)
    except (OverflowError, ValueError, OSError):
        return None


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def normalise_entry(
    raw: dict[str, Any], base_url: str, fetched_at: datetime, feed_url: str | None = None
) -> Entry | None:
    """One feedparser entry in feedsync's form, or None when it has no usable link or title.

    A link that resolves to the feed itself (``<link></link>``, ``#``; ``feed_url`` is the
    feed's canonical URL) is no article.
    """
    link = raw.get("link")
    url = canonical_url(link, base_url) if isinstance(link, str) else None
    title = _text(raw.get("title"))
    if not url or url == feed_url:
        return None
    if not title or len(title) > MAX_TITLE_CHARS:
        return None
    # dict.get: FeedParserDict.get("published_parsed") silently answers with
    # updated_parsed (and a DeprecationWarning); the fallback is ours to make.
    raw_date = _struct_to_datetime(dict.get(raw, "published_parsed")) or _struct_to_datetime(
        dict.get(raw, "updated_parsed")
    )
    summary = raw.get("summary")
    author = _text(raw.get("author")) or None
    guid = raw.get("id")
    return Entry(
        url=url,
        title=title,
        published=published_date(raw_date, fetched_at),
        summary=summary[:MAX_SUMMARY_CHARS] if isinstance(summary, str) else "",
        author=author,
        guid=guid if isinstance(guid, str) and guid else None,
    )


def parse_feed(
    body: bytes,
    url: str,
    fetched_at: datetime,
    content_type: str | None = None,
) -> ParsedFeed:
    """Parse a feed document fetched from ``url`` at ``fetched_at``.

    Malformed XML that feedparser can still read ("bozo") yields the entries it could
    read; the complaint is kept in ``ParsedFeed.problem``.
    """
    headers = {"content-location": url}
    if content_type:
        headers["content-type"] = content_type
    result = feedparser.parse(body, response_headers=headers)
    problem = None
    if result.get("bozo"):
        exc = result.get("bozo_exception")
        problem = f"{type(exc).__name__}: {exc}".splitlines()[0][:200] if exc else "malformed"
    raw_entries = result.get("entries") or []
    if not raw_entries:
        if not body.strip():
            raise NotAFeed("empty document")
        if not result.get("version"):
            raise NotAFeed(f"not a feed ({problem or 'no RSS or Atom found'})")
        exc = result.get("bozo_exception")
        if problem and not isinstance(exc, feedparser.CharacterEncodingOverride):
            # recognisably a feed, but broken before any entry could be read
            raise NotAFeed(f"malformed feed, no entry readable ({problem})")

    entries: list[Entry] = []
    skipped = 0
    feed_url = canonical_url(url)
    for raw in raw_entries:
        entry = normalise_entry(raw, url, fetched_at, feed_url)
        if entry is None:
            skipped += 1
        else:
            entries.append(entry)
    channel = result.get("feed", {})
    title = _text(channel.get("title")) or None
    ttl = channel.get("ttl")
    minutes = int(ttl) if isinstance(ttl, str) and ttl.strip().isdigit() else None
    return ParsedFeed(
        title=title,
        entries=tuple(entries),
        skipped=skipped,
        problem=problem,
        ttl=timedelta(minutes=minutes) if minutes else None,
    )
