"""Feed documents to entries: feedparser, then one normal form per entry. No I/O.

Per entry: the canonical URL (:mod:`feedsync.canonical`, relative links resolved against
the feed's own URL), the title with whitespace collapsed, the date in UTC (``published``,
else ``updated``; clamped or dropped by :func:`feedsync.decide.published_date`); no
control characters in any text field (:func:`feedsync.terminal.clean`). An
entry without a usable link or title is skipped and counted, never fatal. A document
that is not a feed at all raises :class:`NotAFeed` with a one-line reason.
"""

from __future__ import annotations

import calendar
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from feedsync import timestamps
from feedsync.canonical import MAX_URL_LENGTH, canonical_url
from feedsync.decide import published_date
from feedsync.records import Entry, ParsedFeed
from feedsync.terminal import clean

# An entry whose title is longer is skipped; a channel title or an author is cut to it.
MAX_TITLE_CHARS = 1000
MAX_SUMMARY_CHARS = 64 * 1024
# Entries read from one document (the newest: _newest); the rest are counted as skipped.
MAX_ENTRIES = 2000


class NotAFeed(Exception):
    """The document has no feed in it (HTML page, empty body, broken beyond recovery)."""


def _struct_to_datetime(value: Any) -> datetime | None:
    if not isinstance(value, time.struct_time):
        return None
    try:
        return datetime.fromtimestamp(calendar.timegm(value), tz=UTC)
    except (OverflowError, ValueError, OSError):
        return None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _raw_date(raw: dict[str, Any]) -> datetime | None:
    """An entry's date as the feed gives it: published, else updated."""
    # dict.get: FeedParserDict.get("published_parsed") silently answers with
    # updated_parsed (and a DeprecationWarning); the fallback is ours to make.
    return _struct_to_datetime(dict.get(raw, "published_parsed")) or _struct_to_datetime(
        dict.get(raw, "updated_parsed")
    )


def _text(value: Any) -> str:
    """A one-line field (title, author): no control characters, whitespace collapsed."""
    return " ".join(clean(value, one_line=True).split()) if isinstance(value, str) else ""


def _newest(raw_entries: list[Any], limit: int) -> tuple[list[Any], int]:
    """At most ``limit`` entries: the newest by date (undated ones after the dated), kept
    in document order; and how many were left out.

    A feed that is really an archive (100,000 entries in 10 MB) took a minute of CPU here
    to read and stage, on a Pi far longer than the service's watchdog allows, and none of
    it is news. Dates first, not document order: some feeds list oldest first."""
    if len(raw_entries) <= limit:
        return raw_entries, 0

    dates = [_raw_date(raw) for raw in raw_entries]
    newest_first = sorted(
        range(len(raw_entries)),
        key=lambda i: (dates[i] is not None, dates[i] or _EPOCH),
        reverse=True,  # stable still: entries of one date keep their document order
    )
    kept = sorted(newest_first[:limit])
    return [raw_entries[i] for i in kept], len(raw_entries) - limit


def skip_reason(
    raw: dict[str, Any], base_url: str, feed_url: str | None = None
) -> tuple[str, str] | str:
    """(canonical URL, title) of a usable entry, or why it is skipped (one short phrase).

    A link that resolves to the feed itself (``<link></link>``, ``#``; ``feed_url`` is the
    feed's canonical URL) is no article; URLs and titles of absurd length are refused.
    """
    link = raw.get("link")
    if not isinstance(link, str) or not link.strip():
        return "no link"
    if len(link) > MAX_URL_LENGTH:
        return "URL too long"
    url = canonical_url(link, base_url)
    if url is None:
        return "not an http(s) link"
    if url == feed_url:
        return "links to the feed itself"
    title = _text(raw.get("title"))
    if not title:
        return "no title"
    if len(title) > MAX_TITLE_CHARS:
        return "title too long"
    return url, title


def _entry(raw: dict[str, Any], url: str, title: str, fetched_at: datetime) -> Entry:
    """A usable entry (see :func:`skip_reason`) in feedsync's form."""
    raw_date = _raw_date(raw)
    summary = raw.get("summary")
    author = _text(raw.get("author"))[:MAX_TITLE_CHARS] or None
    guid = raw.get("id")
    return Entry(
        url=url,
        title=title,
        published=published_date(raw_date, fetched_at),
        summary=clean(summary[:MAX_SUMMARY_CHARS]) if isinstance(summary, str) else "",
        author=author,
        # cleaned like the rest: the same on every poll, so it still names the entry
        guid=(clean(guid, one_line=True) or None) if isinstance(guid, str) else None,
    )


_XML_DECLARATION = re.compile(rb"^\s*(?:\xef\xbb\xbf)?<\?xml.*?\?>", re.DOTALL)
_CHARACTER_REFERENCE = re.compile(rb"&#(?:[xX]([0-9a-fA-F]+)|([0-9]+));")


def _character_or_nothing(match: re.Match[bytes]) -> bytes:
    """A numeric character reference as it is, or nothing when it names no character: a
    surrogate (U+D800-U+DFFF) or a number beyond U+10FFFF."""
    hex_digits, digits = match.groups()
    number = (hex_digits or digits).lstrip(b"0")
    if len(number) > 8:  # beyond any code point, and int() of a huge one is slow
        return b""
    value = int(number or b"0", 16 if hex_digits else 10)
    return b"" if 0xD800 <= value <= 0xDFFF or value > 0x10FFFF else match.group(0)


def _without_impossible_characters(body: bytes) -> bytes:
    """``body`` without the character references that name no character.

    One ``&#xD800;`` in one title made feedparser's lenient parser crash (it encodes
    ``chr(0xD800)``, which cannot be), and with it the whole feed; ``&#x110000;`` too.
    Such a character is dropped, and the rest of its entry and of the feed is read.
    Matched in the bytes: any ASCII-compatible encoding spells a reference the same way.
    """
    if b"&#" not in body:
        return body
    return _CHARACTER_REFERENCE.sub(_character_or_nothing, body)


def _feedparser_module() -> Any:  # feedparser has no type hints
    """feedparser, imported when a document is first parsed, not with this module: it
    costs ~20 ms of CPU here (~0.2 s on a Pi 3) and a cron run whose feeds all answer
    304 parses nothing (bench scenario 7)."""
    import feedparser

    return feedparser


def _feedparser(body: bytes, url: str, content_type: str | None) -> Any:
    """feedparser.parse, which itself crashes on some garbage in an XML declaration (a
    non-UTF-8 byte or a NUL in the encoding name, found by the fuzz test). Such a feed
    gets a second chance without its declaration; if feedparser still cannot cope, the
    document is refused with the reason."""
    headers = {"content-location": url}
    if content_type:
        headers["content-type"] = content_type
    body = _without_impossible_characters(body)
    feedparser = _feedparser_module()
    try:
        return feedparser.parse(body, response_headers=headers)
    except Exception as first:  # feedparser's own bug on hostile input
        stripped = _XML_DECLARATION.sub(b"", body, count=1)
        if stripped != body:
            try:
                return feedparser.parse(stripped, response_headers=headers)
            except Exception:
                pass
        reason = f"{type(first).__name__}: {first}".splitlines()[0][:200]
        raise NotAFeed(f"unreadable ({reason})") from None


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
    result = _feedparser(body, url, content_type)
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
        if problem and not isinstance(exc, _feedparser_module().CharacterEncodingOverride):
            # recognisably a feed, but broken before any entry could be read
            raise NotAFeed(f"malformed feed, no entry readable ({problem})")

    raw_entries, too_many = _newest(raw_entries, MAX_ENTRIES)
    entries: list[Entry] = []
    reasons: list[str] = [f"beyond the newest {MAX_ENTRIES}"] * too_many
    feed_url = canonical_url(url)
    for raw in raw_entries:
        usable = skip_reason(raw, url, feed_url)
        if isinstance(usable, str):
            reasons.append(usable)
        else:
            entries.append(_entry(raw, *usable, fetched_at))
    channel = result.get("feed", {})
    # cut, not refused: the feed's entries do not depend on its name (a 1 MB one was
    # stored whole, and printed by `feedsync feeds`)
    title = _text(channel.get("title"))[:MAX_TITLE_CHARS] or None
    ttl = channel.get("ttl")
    ttl_hint = timestamps.hint(ttl, timedelta(minutes=1)) if isinstance(ttl, str) else None
    return ParsedFeed(
        title=title,
        entries=tuple(entries),
        skipped=len(reasons),
        skip_reasons=tuple(reasons),
        problem=problem,
        ttl=ttl_hint or None,
    )
