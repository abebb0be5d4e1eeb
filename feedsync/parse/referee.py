"""feedparser, the referee: it reads every document the other readers do not.

Malformed XML (its ``bozo`` complaint kept), other encodings, Atom 0.3, a DOCTYPE, a
content type that is not XML, whatever fastfeedparser refuses. feedparser is imported at
the first document that needs it: a no-op run, or one whose feeds all answer 304 or are
read by fastfeedparser, never loads it (tests/test_cli.py, with ``-X importtime``).
"""

from __future__ import annotations

import calendar
import re
import time
from datetime import UTC, datetime
from typing import Any

from feedsync.parse.raw import MAX_ENTRIES, NotAFeed, RawEntry, RawFeed, newest


def _struct_to_datetime(value: Any) -> datetime | None:
    if not isinstance(value, time.struct_time):
        return None
    try:
        return datetime.fromtimestamp(calendar.timegm(value), tz=UTC)
    except (OverflowError, ValueError, OSError):
        return None


def _feedparser_date(raw: dict[str, Any]) -> datetime | None:
    """An entry's date as the feed gives it: published, else updated."""
    # dict.get: FeedParserDict.get("published_parsed") silently answers with
    # updated_parsed (and a DeprecationWarning); the fallback is ours to make.
    return _struct_to_datetime(dict.get(raw, "published_parsed")) or _struct_to_datetime(
        dict.get(raw, "updated_parsed")
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


def _feedparser(body: bytes, url: str, content_type: str | None) -> Any:
    """feedparser.parse, which itself crashes on some garbage in an XML declaration (a
    non-UTF-8 byte or a NUL in the encoding name, found by the fuzz test). Such a feed
    gets a second chance without its declaration; if feedparser still cannot cope, the
    document is refused with the reason."""
    import feedparser  # imported when a document needs it: a no-op run never does

    headers = {"content-location": url}
    if content_type:
        headers["content-type"] = content_type
    body = _without_impossible_characters(body)
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


# The start tag of an entry, with any prefix: <item>, <item rdf:about="...">, <rss:item>,
# <entry>, <atom:entry ...>. Not <items> (RSS 1.0's table of contents in the channel).
_ENTRY_START = re.compile(r"<(?:[A-Za-z_][\w.-]*:)?(?:item|entry)[\s/>]", re.IGNORECASE)
# The end tag of a feed's root: </rss>, </feed>, </rdf:RDF>, </atom:feed>.
_ROOT_END = re.compile(r"</(?:[A-Za-z_][\w.-]*:)?(?:rss|feed|rdf)\s*>", re.IGNORECASE)


def _complete_without_entries(body: bytes, encoding: Any) -> bool:
    """Whether a document in which feedparser found no entry is a whole feed that has none
    (its root closed, no item or entry started anywhere), rather than one broken before
    its first entry.

    A hand-made feed with no items today and ``&aacute;`` in its channel title is
    malformed XML, but nothing in it is lost: taken for a broken feed, it went to
    "failing" and was polled once a day. A document cut short before or inside its first
    entry has no end tag for its root, and stays an error. In doubt (an item start tag in
    a comment, an encoding misjudged) it stays an error too: a feed wrongly called empty
    would lose its entries without a word. Read in the encoding feedparser found, so that
    UTF-16 is searched as text."""
    try:
        text = body.decode(encoding if isinstance(encoding, str) else "utf-8", "replace")
    except LookupError:
        text = body.decode("latin-1")
    return _ROOT_END.search(text) is not None and _ENTRY_START.search(text) is None


# What the trim below looks for, in one pass: a CDATA section or a comment (skipped whole:
# an <item> inside one is text), or the start or end tag of an entry, with any prefix.
_ENTRY_TOKEN = re.compile(
    rb"<!\[CDATA\[|<!--|<(/?)(?:[A-Za-z_][\w.-]*:)?(?:item|entry)(?=[\s/>])", re.IGNORECASE
)
_SKIP_TO = {b"<![CDATA[": b"]]>", b"<!--": b"-->"}
# An entry's date as the trim reads it: its first date element. Only which entries are
# the newest depends on it; feedparser reads the dates of those it keeps.
_ENTRY_DATE = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?(pubDate|date|published|updated|modified|issued)\b[^>]*>"
    rb"\s*([^<]{1,64}?)\s*</",
    re.IGNORECASE,
)


def _entry_spans(body: bytes) -> list[tuple[int, int]] | None:
    """Where each entry of ``body`` starts and ends, in bytes, or None when that is not
    plain: an entry inside an entry, an end tag without its start, a start tag never
    closed, a CDATA section or comment never closed. One pass, linear in the body."""
    spans: list[tuple[int, int]] = []
    start = -1
    position = 0
    while (token := _ENTRY_TOKEN.search(body, position)) is not None:
        closer = _SKIP_TO.get(token.group(0))
        if closer is not None:
            end = body.find(closer, token.end())
            if end < 0:
                return None
            position = end + len(closer)
            continue
        position = token.end()
        if token.group(1):  # an end tag
            if start < 0:
                return None
            close = body.find(b">", position)
            if close < 0:
                return None
            spans.append((start, close + 1))
            start = -1
        elif start >= 0:
            return None
        else:
            close = body.find(b">", position)
            if close < 0:
                return None
            if body[close - 1 : close] == b"/":  # <item/>: an entry with nothing in it
                spans.append((token.start(), close + 1))
            else:
                start = token.start()
    return spans if start < 0 else None


def _trim_date(value: bytes) -> datetime | None:
    """An RFC 822 or ISO 8601 date, as well as the standard library reads it; None
    otherwise (an undated entry for the trim: kept after the dated)."""
    from email.utils import parsedate_to_datetime

    text = value.decode("ascii", "replace").strip()
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        try:
            moment = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _newest_only(body: bytes) -> tuple[bytes, int]:
    """``body`` with only its newest MAX_ENTRIES entries, and how many it left out.

    feedparser does all its per-entry work (its lenient parser, the HTML sanitiser) on
    every entry before feedsync sees one: a 100,000-entry malformed feed cost a minute of
    CPU here, ten times that on a Pi, for 98,000 entries the cap then threw away. So the
    cap comes first, in the bytes: each entry's span and first date found in one pass,
    the spans of all but the newest cut out, the channel kept whole. A document whose
    entries cannot be told apart plainly (see :func:`_entry_spans`) is read whole, as
    before: linear still, only not cut."""
    if body.count(b"<") < MAX_ENTRIES:  # cheap: too few tags for too many entries
        return body, 0
    spans = _entry_spans(body)
    if spans is None or len(spans) <= MAX_ENTRIES:
        return body, 0
    dates = []
    for start, end in spans:
        found = _ENTRY_DATE.search(body, start, end)
        dates.append(_trim_date(found.group(2)) if found else None)
    kept = newest(dates)
    parts = [body[: spans[0][0]]]
    for index in kept:
        start, end = spans[index]
        parts.append(body[start:end])
    parts.append(body[spans[-1][1] :])
    return b"".join(parts), len(spans) - len(kept)


def read_feedparser(body: bytes, url: str, content_type: str | None = None) -> RawFeed:
    """The document as feedparser reads it, to its newest MAX_ENTRIES entries (cut
    before feedparser reads it: :func:`_newest_only`); raises NotAFeed."""
    import feedparser

    body, beyond = _newest_only(body)
    result = _feedparser(body, url, content_type)
    problem = None
    if result.get("bozo"):
        exc = result.get("bozo_exception")
        problem = f"{type(exc).__name__}: {exc}".splitlines()[0][:200] if exc else "malformed"
    found = result.get("entries") or []
    if not found:
        if not body.strip():
            raise NotAFeed("empty document")
        if not result.get("version"):
            raise NotAFeed(f"not a feed ({problem or 'no RSS or Atom found'})")
        exc = result.get("bozo_exception")
        if (
            problem
            and not isinstance(exc, feedparser.CharacterEncodingOverride)
            and not _complete_without_entries(body, result.get("encoding"))
        ):
            # recognisably a feed, but broken before any entry could be read
            raise NotAFeed(f"malformed feed, no entry readable ({problem})")
    channel = result.get("feed", {})
    return RawFeed(
        title=channel.get("title"),
        entries=[
            RawEntry(
                link=raw.get("link"),
                title=raw.get("title"),
                date=_feedparser_date(raw),
                summary=raw.get("summary"),
                author=raw.get("author"),
                guid=raw.get("id"),
            )
            for raw in found
        ],
        problem=problem,
        ttl=channel.get("ttl"),
        beyond=beyond,
    )
