"""Feed documents to entries: a reader, then one normal form per entry. No I/O.

Three readers turn a document into :class:`RawFeed` (what the feed says, as it says it):

- JSON Feed 1.0/1.1 (jsonfeed.org), read with :mod:`json` (``parse/jsonfeed.py``);
- fastfeedparser (lxml), for the documents that it reads exactly as feedparser does:
  well-formed UTF-8 (or ASCII) RSS 2.0/0.9x, RSS 1.0 and Atom 1.0 with an XML content
  type, each field feedsync keeps written in the one way both read alike
  (``parse/fast.py``). :func:`fast_route` decides from one expat pass over the bytes;
  docs/architecture.md lists what is routed where, and why;
- feedparser, the referee, for everything else (``parse/referee.py``): malformed XML (its
  ``bozo`` complaint kept in ``ParsedFeed.problem``), documents whose declared and real
  encodings differ, other encodings (Shift_JIS, EUC-JP, ISO-8859-x...), Atom 0.3, a
  DOCTYPE, a content type that is not XML, and any document fastfeedparser refuses.
  Without fastfeedparser installed, feedparser reads every XML document.

Before an XML reader sees a document, a server charset its bytes contradict (UTF-16 for
a document that starts as ASCII, ISO-8859-1 for one with a UTF-16 byte order mark) is set
right (``parse/charset.py``).

Then the same normal form for all three, here (:func:`_normalise`): per entry, the
canonical URL (:mod:`feedsync.canonical`, relative links resolved against the feed's own
URL), the title with whitespace collapsed, the date in UTC (``published``, else
``updated``; clamped or dropped by :func:`feedsync.decide.published_date`); no lone
surrogate in any value a reader gave (:func:`_readable`), no control
characters in any text field (:func:`feedsync.terminal.clean`). An entry without a usable
link, or with an absurd title, is skipped and counted, never fatal; an entry without a
title is kept, titled ``''`` (:mod:`feedsync.titles`). A document that is not a feed at all
raises :class:`NotAFeed` with a one-line reason.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime, timedelta
from typing import Any, TypeVar

from feedsync import timestamps
from feedsync.canonical import MAX_URL_LENGTH, canonical_url
from feedsync.decide import published_date
from feedsync.parse.charset import fitted as fitted_charset
from feedsync.parse.fast import fast_route, read_fast
from feedsync.parse.jsonfeed import is_json_feed, read_json_feed
from feedsync.parse.raw import MAX_ENTRIES, NotAFeed, RawEntry, RawFeed, newest
from feedsync.parse.referee import read_feedparser
from feedsync.records import Entry, ParsedFeed
from feedsync.terminal import clean
from feedsync.titles import UNTITLED_TITLE_CHARS

__all__ = [
    "MAX_ENTRIES",
    "MAX_SUMMARY_CHARS",
    "MAX_TITLE_CHARS",
    "UNTITLED_TITLE_CHARS",
    "NotAFeed",
    "ParsedFeed",
    "RawEntry",
    "RawFeed",
    "fast_route",
    "is_json_feed",
    "parse_feed",
    "read",
    "read_fast",
    "read_feedparser",
    "read_json_feed",
    "skip_reason",
]

# An entry whose title is longer is skipped; a channel title or an author is cut to it.
MAX_TITLE_CHARS = 1000
MAX_SUMMARY_CHARS = 64 * 1024


# A surrogate code point (U+D800-U+DFFF) is half of a UTF-16 pair, no character: UTF-8
# cannot encode one, so SQLite refuses to store it and a terminal to print it. json.loads
# gives them for a "\ud800" escape with no partner, and for raw bytes too (it decodes
# with "surrogatepass": CESU-8, as Java's and MySQL's old "utf8" write, spells an emoji
# as two encoded surrogates). One in one title made a JSON Feed fail on every poll.
_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _joined(pair: re.Match[str]) -> str:
    high, low = (ord(half) for half in pair.group(0))
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def _without_surrogates(value: Any) -> Any:
    """``value`` with each surrogate pair made the one character it spells, and each lone
    surrogate dropped (the character, not the text around it); any other value as it is.

    Asked of UTF-8 itself, since a surrogate is the one thing it cannot encode: ~0.5 us
    for a 500-character summary, where a regular expression's search took 3 us; ASCII
    text, the usual case, is not looked at."""
    if not isinstance(value, str) or value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("", _PAIR.sub(_joined, value))
    return value


_Record = TypeVar("_Record", RawFeed, RawEntry)
_FIELDS = {kind: tuple(f.name for f in dataclasses.fields(kind)) for kind in (RawFeed, RawEntry)}


def _readable(record: _Record) -> _Record:
    """``record`` with :func:`_without_surrogates` applied to every field, whatever the
    reader and whatever the field: the link before it is canonicalised (a lone surrogate
    made it "not an http(s) link"), the guid, the feed's title and problem alike."""
    changes = None
    for name in _FIELDS[type(record)]:
        value = getattr(record, name)
        if isinstance(value, str) and not value.isascii():
            fixed = _without_surrogates(value)
            if fixed is not value:
                changes = {**(changes or {}), name: fixed}
    return record if changes is None else dataclasses.replace(record, **changes)


def _text(value: Any) -> str:
    """A one-line field (title, author): no control characters, whitespace collapsed."""
    return " ".join(clean(value, one_line=True).split()) if isinstance(value, str) else ""


def skip_reason(raw: RawEntry, base_url: str, feed_url: str | None = None) -> tuple[str, str] | str:
    """(canonical URL, title) of a usable entry, or why it is skipped (one short phrase).

    A link that resolves to the feed itself (``<link></link>``, ``#``; ``feed_url`` is the
    feed's canonical URL) is no article; URLs and titles of absurd length are refused.
    """
    link = raw.link
    if not isinstance(link, str) or not link.strip():
        return "no link"
    if len(link) > MAX_URL_LENGTH:
        return "URL too long"
    url = canonical_url(link, base_url)
    if url is None:
        return "not an http(s) link"
    if url == feed_url:
        return "links to the feed itself"
    # no title (RSS 2.0 and JSON Feed 1.1 allow it: a Mastodon post) is the title '',
    # the same on every poll: feedsync/titles.py says why, and what it is shown as
    title = _text(raw.title)
    if len(title) > MAX_TITLE_CHARS:
        return "title too long"
    return url, title


def _entry(raw: RawEntry, url: str, title: str, fetched_at: datetime) -> Entry:
    """A usable entry (see :func:`skip_reason`) in feedsync's form."""
    summary, guid = raw.summary, raw.guid
    return Entry(
        url=url,
        title=title,
        published=published_date(raw.date, fetched_at),
        summary=clean(summary[:MAX_SUMMARY_CHARS]) if isinstance(summary, str) else "",
        author=_text(raw.author)[:MAX_TITLE_CHARS] or None,
        # cleaned like the rest: the same on every poll, so it still names the entry
        guid=(clean(guid, one_line=True) or None) if isinstance(guid, str) else None,
    )


def _normalise(raw: RawFeed, url: str, fetched_at: datetime) -> ParsedFeed:
    """One normal form, whichever reader read the document."""
    raw = _readable(raw)
    # the readers of fast.py and jsonfeed.py cap before their per-entry work; feedsync
    # cannot inside feedparser, so here, before any of its own
    kept = newest([entry.date for entry in raw.entries])
    too_many = raw.beyond + len(raw.entries) - len(kept)
    raw_entries = [_readable(raw.entries[i]) for i in kept]
    entries: list[Entry] = []
    reasons: list[str] = [*raw.rejected, *[f"beyond the newest {MAX_ENTRIES}"] * too_many]
    feed_url = canonical_url(url)
    for item in raw_entries:
        usable = skip_reason(item, url, feed_url)
        if isinstance(usable, str):
            reasons.append(usable)
        else:
            entries.append(_entry(item, *usable, fetched_at))
    # cut, not refused: the feed's entries do not depend on its name (a 1 MB one was
    # stored whole, and printed by `feedsync feeds`)
    title = _text(raw.title)[:MAX_TITLE_CHARS] or None
    ttl = raw.ttl
    ttl_hint = timestamps.hint(ttl, timedelta(minutes=1)) if isinstance(ttl, str) else None
    return ParsedFeed(
        title=title,
        entries=tuple(entries),
        skipped=len(reasons),
        skip_reasons=tuple(reasons),
        problem=raw.problem,
        ttl=ttl_hint or None,
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
    return _normalise(read(body, url, content_type), url, fetched_at)


def read(body: bytes, url: str, content_type: str | None = None, *, fast: bool = True) -> RawFeed:
    """The document read by the reader it is routed to (see the module's docstring);
    ``fast=False``: never by fastfeedparser (the referee test compares the two)."""
    if is_json_feed(body):
        return read_json_feed(body)
    content_type = fitted_charset(body, content_type)
    if fast:
        raw = read_fast(body, url, content_type)
        if raw is not None:
            return raw
    return read_feedparser(body, url, content_type)
