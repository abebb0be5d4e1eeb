"""Feed documents to entries: a reader, then one normal form per entry. No I/O.

Three readers turn a document into :class:`RawFeed` (what the feed says, as it says it):

- JSON Feed 1.0/1.1 (jsonfeed.org), read here with :mod:`json`;
- fastfeedparser (lxml), for the documents that it reads exactly as feedparser does:
  well-formed UTF-8 (or ASCII) RSS 2.0/0.9x, RSS 1.0 and Atom 1.0 with an XML content
  type. :func:`fast_route` decides from one expat pass over the bytes; docs/architecture.md
  lists what is routed where, and why;
- feedparser, the referee, for everything else: malformed XML (its ``bozo`` complaint
  kept in ``ParsedFeed.problem``), documents whose declared and real encodings differ,
  other encodings (Shift_JIS, EUC-JP, ISO-8859-x...), Atom 0.3, a DOCTYPE, a content type
  that is not XML, and any document fastfeedparser refuses. Without fastfeedparser
  installed, feedparser reads every XML document.

Then the same normal form for all three (:func:`_normalise`): per entry, the canonical URL
(:mod:`feedsync.canonical`, relative links resolved against the feed's own URL), the title
with whitespace collapsed, the date in UTC (``published``, else ``updated``; clamped or
dropped by :func:`feedsync.decide.published_date`); no control characters in any text
field (:func:`feedsync.terminal.clean`). An entry without a usable link or title is skipped
and counted, never fatal. A document that is not a feed at all raises :class:`NotAFeed`
with a one-line reason.
"""

from __future__ import annotations

import calendar
import codecs
import contextlib
import functools
import html
import json
import pyexpat
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import ModuleType, SimpleNamespace
from typing import Any
from urllib.parse import uses_relative

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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _text(value: Any) -> str:
    """A one-line field (title, author): no control characters, whitespace collapsed."""
    return " ".join(clean(value, one_line=True).split()) if isinstance(value, str) else ""


def _newest(raw_entries: list[RawEntry], limit: int) -> tuple[list[RawEntry], int]:
    """At most ``limit`` entries: the newest by date (undated ones after the dated), kept
    in document order; and how many were left out.

    A feed that is really an archive (100,000 entries in 10 MB) took a minute of CPU here
    to read and stage, on a Pi far longer than the service's watchdog allows, and none of
    it is news. Dates first, not document order: some feeds list oldest first."""
    if len(raw_entries) <= limit:
        return raw_entries, 0

    newest_first = sorted(
        range(len(raw_entries)),
        key=lambda i: (raw_entries[i].date is not None, raw_entries[i].date or _EPOCH),
        reverse=True,  # stable still: entries of one date keep their document order
    )
    kept = sorted(newest_first[:limit])
    return [raw_entries[i] for i in kept], len(raw_entries) - limit


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
    title = _text(raw.title)
    if not title:
        return "no title"
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
    raw_entries, too_many = _newest(raw.entries, MAX_ENTRIES)
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
    if fast:
        raw = read_fast(body, url, content_type)
        if raw is not None:
            return raw
    return read_feedparser(body, url, content_type)


def _media_type(content_type: str | None) -> tuple[str, str]:
    """(media type, charset) of a Content-Type header, both lowercased; '' when absent."""
    if not content_type:
        return "", ""
    kind, _, params = content_type.partition(";")
    charset = ""
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("\"'").lower()
    return kind.strip().lower(), charset


# ---------------------------------------------------------------- feedparser


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


def read_feedparser(body: bytes, url: str, content_type: str | None = None) -> RawFeed:
    """The document as feedparser reads it; raises NotAFeed."""
    import feedparser

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
    )


# ---------------------------------------------------------------- fastfeedparser


@functools.cache
def _fastfeedparser() -> ModuleType | None:
    """fastfeedparser, or None where it cannot be imported (then feedparser reads all)."""
    try:
        import fastfeedparser
    except Exception:  # not installed, or its lxml broken: the referee reads everything
        return None
    module: ModuleType = fastfeedparser
    return module


_ATOM_10 = "http://www.w3.org/2005/Atom feed"
_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns# RDF"
_FAST_ROOTS = frozenset({"rss", _ATOM_10, _RDF})
# What feedparser takes for XML (encodings.convert_to_utf8): application/xml and
# application/*+xml read in the declared encoding, else UTF-8; text/xml and text/*+xml in
# the HTTP charset, else US-ASCII (RFC 3023). Any other type is "bozo" (NonXMLContentType).
_APPLICATION_XML = frozenset(
    {"application/xml", "application/xml-dtd", "application/xml-external-parsed-entity"}
)
_TEXT_XML = frozenset({"text/xml", "text/xml-external-parsed-entity"})
_OTHER_BOMS = (b"\xfe\xff", b"\xff\xfe", b"\x00\x00\xfe\xff", b"\x00\x00\x00<", b"\x00<", b"<\x00")


# U+2028 and U+2029 written raw: fastfeedparser makes them newlines, feedparser keeps them
_LINE_SEPARATORS = re.compile(rb"\xe2\x80[\xa8\xa9]")


def _codec(name: str) -> str | None:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


class _Sniff:
    """What one expat pass says of a document: its declared encoding, whether it has a
    DOCTYPE, its root element; ``ok`` when expat (feedparser's strict parser, namespaces
    on) read it to the end without an error."""

    __slots__ = ("declared", "doctype", "ok", "root", "root_version")

    def __init__(self, body: bytes) -> None:
        self.declared: str | None = None
        self.doctype = False
        self.root: str | None = None
        self.root_version: str | None = None
        parser = pyexpat.ParserCreate(namespace_separator=" ")
        parser.XmlDeclHandler = self._declaration
        parser.StartDoctypeDeclHandler = self._doctype

        def root(name: str, attributes: dict[str, str]) -> None:
            self.root, self.root_version = name, attributes.get("version")
            parser.StartElementHandler = None  # the root is all we want: no call per tag

        parser.StartElementHandler = root
        try:
            parser.Parse(body, True)
            self.ok = True
        except Exception:  # ExpatError; LookupError for an encoding Python does not know
            self.ok = False

    def _declaration(self, version: str, encoding: str | None, standalone: int) -> None:
        self.declared = encoding

    def _doctype(self, *args: Any) -> None:
        self.doctype = True


def fast_route(body: bytes, content_type: str | None) -> tuple[str, str] | None:
    """Whether fastfeedparser reads ``body`` as feedparser would: None when not (feedparser
    reads it), else the problem feedparser would report ('' for none).

    Fast only for what both read alike: an XML content type, UTF-8 (or ASCII) declared
    and real, well-formed for expat with namespaces (what feedparser's strict parser is),
    no DOCTYPE, and the root of RSS (0.9x, 2.0), RSS 1.0 or Atom 1.0.
    """
    kind, charset = _media_type(content_type)
    textual = kind in _TEXT_XML or (kind.startswith("text/") and kind.endswith("+xml"))
    if not textual and not (
        kind in _APPLICATION_XML or (kind.startswith("application/") and kind.endswith("+xml"))
    ):
        return None  # feedparser: NonXMLContentType
    if body.startswith(_OTHER_BOMS) or _LINE_SEPARATORS.search(body):
        return None
    ascii_only = body.isascii()
    if not ascii_only:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    sniff = _Sniff(body)
    if not sniff.ok or sniff.doctype or sniff.root not in _FAST_ROOTS:
        return None
    assert sniff.root is not None
    declared = _codec(sniff.declared) if sniff.declared else "utf-8"
    http = _codec(charset) if charset else None
    if ascii_only:
        # every encoding both parsers may read ASCII in reads it the same
        if declared is None or (charset and http is None):
            return None
        return "", sniff.root
    if declared != "utf-8":
        return None
    if http is not None:
        return ("", sniff.root) if http == "utf-8" else None
    if not textual:
        return "", sniff.root
    if sniff.declared is None:
        return None  # feedparser then asks chardet, if it is installed
    # text/xml without a charset is US-ASCII (RFC 3023): feedparser says so, reads UTF-8
    override = "CharacterEncodingOverride: document declared as us-ascii, but parsed as utf-8"
    return override, sniff.root


def _iso_datetime(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


_TTL = re.compile(rb"<ttl>([^<]*)</ttl>")
_GUID = re.compile(rb"<guid[\s>/]")
_PERMALINK = re.compile(rb"""<guid\s[^>]*?isPermaLink\s*=\s*["']([^"']*)["']""")
_ATOM_ID = re.compile(rb"<id>")
_ITEM_ABOUT = re.compile(rb"<item\s[^>]*?rdf:about\s*=")
# Every date element, anywhere. Each must be written in a form both parsers read alike.
_DATE_ELEMENT = re.compile(
    rb"<((?:[A-Za-z_][\w.-]*:)?(?:pubDate|date|published|updated|modified|issued|created"
    rb"|lastBuildDate))\b[^>]*>([^<]*)</\1\s*>"
)
_DATE_IN_CDATA = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?(?:pubDate|date|published|updated|modified|issued|created"
    rb"|lastBuildDate)\b[^>]*>\s*<"
)
_RFC822 = re.compile(
    rb"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), )?(?:0?[1-9]|[12][0-9]|3[01]) "
    rb"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (?:19|20)[0-9]{2} "
    rb"(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9])? "
    rb"(?:[+-](?:0[0-9]|1[0-4])[0-5][0-9]|GMT|UT|UTC|Z)"
)
_W3CDTF = re.compile(
    rb"(?:19|20)[0-9]{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3])"
    rb":[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,6})?)?(?:Z|[+-](?:0[0-9]|1[0-4]):[0-5][0-9])"
)
# A guid made only of what a date is made of: fastfeedparser may date its entry by it.
_DATELIKE = re.compile(r"[0-9\s:/.,+TZ-]+")
_OPAQUE_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?!//)")
_MARKUP = frozenset("<&\r")  # what feedparser's sanitiser may change


def _plain_dates(body: bytes) -> bool:
    """Whether every date element in ``body`` is RFC 822 or RFC 3339 as the specs write
    them, the forms both parsers read to the same instant (tests/test_parse_referee.py)."""
    if _DATE_IN_CDATA.search(body):
        return False
    for _tag, value in _DATE_ELEMENT.findall(body):
        value = value.strip()
        if not (_RFC822.fullmatch(value) or _W3CDTF.fullmatch(value)):
            return False
    return True


@functools.cache
def _feedparser_parts() -> SimpleNamespace:
    """The functions of feedparser's that the fast path borrows, imported once, when a
    value first needs one (a feed of plain ASCII text never does)."""
    from feedparser.html import _cp1252
    from feedparser.mixin import _FeedParserMixin
    from feedparser.sanitizer import _sanitize_html
    from feedparser.urls import _urljoin, resolve_relative_uris

    return SimpleNamespace(
        cp1252=_cp1252,
        looks_like_html=_FeedParserMixin.looks_like_html,
        sanitize=_sanitize_html,
        resolve=resolve_relative_uris,
        urljoin=_urljoin,
    )


class _AsFeedparser:
    """fastfeedparser's values turned into feedparser's, with feedparser's own functions,
    as its strict parser's ``pop`` does (feedparser/mixin.py): relative URIs resolved and
    HTML sanitised in HTML, entity leftovers in links undone, a UTF-8 text read as Latin-1
    re-read, C1 characters taken for their cp1252 glyphs."""

    def __init__(self, base: str) -> None:
        self.base = base

    def text(self, value: Any) -> Any:
        if not isinstance(value, str) or value.isascii():
            return value
        with contextlib.suppress(UnicodeEncodeError, UnicodeDecodeError):
            value = value.encode("iso-8859-1").decode("utf-8")
        return value.translate(_feedparser_parts().cp1252)

    def html(self, value: Any, *, guess: bool = False) -> Any:
        """An HTML field (``guess``: a plain-text one, HTML when it looks like it)."""
        if not isinstance(value, str) or _MARKUP.isdisjoint(value):
            return self.text(value)
        borrowed = _feedparser_parts()
        if guess and not borrowed.looks_like_html(value):
            return self.text(value)
        value = borrowed.resolve(value, self.base, "utf-8", "text/html")
        return self.text(borrowed.sanitize(value, "utf-8", "text/html"))

    def link(self, value: Any) -> Any:
        if isinstance(value, str) and "&" in value:
            value = re.sub("&([A-Za-z0-9_]+);", r"&\g<1>", value.replace("&amp;", "&"))
        return self.text(value)

    def uri(self, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        scheme = _OPAQUE_SCHEME.match(value)
        if scheme and scheme.group(1).lower() not in uses_relative:
            return value  # tag:, urn: (what urljoin gives back untouched), without its cost
        return _feedparser_parts().urljoin(self.base, value)


def _fast_entries(
    module: ModuleType, found: list[Any], channel: Any, body: bytes, root: str, base: str
) -> tuple[Any, list[RawEntry]] | None:
    """(feed title, entries) as feedparser would have read them, or None when this
    document has something fastfeedparser reads otherwise and that cannot be told apart
    per entry (see docs/architecture.md, "Two feed readers")."""
    if b"xml:base" in body or not _plain_dates(body):
        return None
    count = len(found)
    atom = root == _ATOM_10
    if atom:
        # Atom: every entry has its <id>; feedparser takes it for a permalink
        ids = len(_ATOM_ID.findall(body))
        if ids != count + (channel.get("id") is not None) or b"<email>" in body:
            return None
        # which field is type="html" cannot be told per field here
        typed_html = b'type="html"' in body or b"type='html'" in body or b"text/html" in body
        if b"xhtml" in body:
            return None
        permalink = True
    elif root == _RDF:
        # every item named by its rdf:about (feedparser's id), none by a <guid>
        if _GUID.search(body) or len(_ITEM_ABOUT.findall(body)) != count:
            return None
        permalink = False
    else:
        guids = len(_GUID.findall(body))
        flags = set(_PERMALINK.findall(body))
        if guids not in (0, count) or not flags <= {b"true", b"false"} or len(flags) > 1:
            return None
        permalink = guids > 0 and flags != {b"false"}
        if flags == {b"false"} and len(_PERMALINK.findall(body)) != guids:
            return None
    as_fp = _AsFeedparser(base)

    def dated_by(guid: str, published: str) -> bool:
        """Whether fastfeedparser may have dated an entry by its guid (it reads
        "1559104147038" as milliseconds since 1970), which feedparser never does."""
        parse_date = getattr(module.main, "_parse_date", None)
        return parse_date is None or parse_date(guid) == published

    title_of = as_fp.text if atom else functools.partial(as_fp.html, guess=True)
    entries = []
    for raw in found:
        link, guid = raw.get("link"), raw.get("id")
        title, summary = raw.get("title"), raw.get("description")
        published = raw.get("published")
        if root == "rss" and guids == 0:
            guid = None  # fastfeedparser names an entry without one by its link
        elif guid is None:
            return None
        elif published and _DATELIKE.fullmatch(guid) and dated_by(guid, published):
            return None  # fastfeedparser may have taken the guid for the entry's date
        if atom and typed_html and not _MARKUP.isdisjoint(f"{title}{summary}"):
            return None
        if not summary and (b"<content" in body or b":encoded" in body):
            return None  # feedparser would take the content for the summary
        if permalink:
            guid = as_fp.uri(as_fp.text(guid))
            if not link or link == raw.get("id"):
                link = guid  # feedparser: a permalink guid is the link of an entry without
        elif link and link == guid and root == "rss":
            return None  # fastfeedparser links an entry by its guid; feedparser does not
        entries.append(
            RawEntry(
                link=as_fp.link(link),
                title=title_of(title),
                date=_iso_datetime(published) or _iso_datetime(raw.get("updated")),
                summary=as_fp.text(summary) if atom else as_fp.html(summary),
                author=as_fp.text(raw.get("author")),
                guid=as_fp.text(guid) if not permalink else guid,
            )
        )
    return title_of(channel.get("title")), entries


def read_fast(body: bytes, url: str, content_type: str | None) -> RawFeed | None:
    """The document as fastfeedparser reads it, or None when it is feedparser's to read
    (see :func:`fast_route`) or fastfeedparser refuses it."""
    module = _fastfeedparser()
    if module is None:
        return None
    route = fast_route(body, content_type)
    if route is None:
        return None
    problem, root = route
    try:
        result = module.parse(
            body,
            include_content=False,
            include_tags=False,
            include_media=False,
            include_enclosures=False,
        )
        read = _fast_entries(module, result["entries"], result["feed"], body, root, url)
    except Exception:  # anything it cannot read, the referee reads
        return None
    if read is None:
        return None
    title, entries = read
    ttl = _TTL.search(body) if b"<ttl>" in body else None
    return RawFeed(
        title=title,
        entries=entries,
        problem=problem or None,
        ttl=ttl.group(1).decode("utf-8", "replace") if ttl else None,
    )


# ---------------------------------------------------------------- JSON Feed


def is_json_feed(body: bytes) -> bool:
    """A JSON document: an object where XML would start with '<' (whatever it is served
    as: feedparser reads no document that starts with '{')."""
    return body.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"


# A title made for an item that has none (JSON Feed allows it: a microblog post) is its
# text's beginning, cut at a word, as Miniflux does; reader keeps it untitled, but an entry
# is (url, title) here.
UNTITLED_TITLE_CHARS = 100
_TAG = re.compile(r"<[^>]*>")


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _json_date(value: Any) -> datetime | None:
    """An RFC 3339 date (JSON Feed's), or None."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    text = value.strip()
    if text[-1:] in ("z", "Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _names(value: Any) -> list[str]:
    """The names of JSON Feed authors: 1.1's list of objects, 1.0's single object."""
    people = value if isinstance(value, list) else [value]
    return [p["name"].strip() for p in people if isinstance(p, dict) and _string(p.get("name"))]


def _untitled(item: dict[str, Any]) -> str | None:
    """A title for an item without one: the start of its summary or text."""
    for key in ("summary", "content_text", "content_html"):
        value = _string(item.get(key))
        if value is None:
            continue
        if key == "content_html":
            value = html.unescape(_TAG.sub(" ", value))
        words = " ".join(value.split())
        if words:
            if len(words) <= UNTITLED_TITLE_CHARS:
                return words
            cut = words[:UNTITLED_TITLE_CHARS].rsplit(" ", 1)[0]
            return f"{cut}…"
    return None


def _json_item(item: Any, feed_authors: list[str]) -> RawEntry | str:
    """One JSON Feed item, or why it is skipped."""
    if not isinstance(item, dict):
        return "not a JSON object"
    guid = item.get("id")
    if isinstance(guid, (int, float)) and not isinstance(guid, bool):
        guid = str(guid)  # 1.0: "coerce it to a string"
    link = _string(item.get("url")) or _string(item.get("external_url"))
    title = _string(item.get("title"))
    if title is None or not title.strip():
        title = _untitled(item)
    summary = next(
        (
            value
            for key in ("summary", "content_html", "content_text")
            if (value := _string(item.get(key))) and value.strip()
        ),
        None,
    )
    authors = _names(item.get("authors")) or _names(item.get("author")) or feed_authors
    return RawEntry(
        link=link,
        title=title,
        date=_json_date(item.get("date_published")) or _json_date(item.get("date_modified")),
        summary=summary.strip() if summary else None,
        author=", ".join(dict.fromkeys(authors)) or None,
        guid=_string(guid),
    )


def read_json_feed(body: bytes) -> RawFeed:
    """A JSON Feed (jsonfeed.org 1.0 or 1.1); raises NotAFeed with the reason. An item of
    the wrong shape is skipped with a reason, never fatal."""
    try:
        document = json.loads(body)
    except RecursionError:
        raise NotAFeed("not a feed (JSON nested too deep)") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a 5,000-digit number
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        raise NotAFeed(f"not a feed (malformed JSON: {reason})") from None
    if not isinstance(document, dict):
        raise NotAFeed("not a feed (JSON, but not an object)")
    version = document.get("version")
    if not isinstance(version, str) or "jsonfeed.org/version/" not in version:
        raise NotAFeed("not a feed (JSON, but not a JSON Feed: no jsonfeed.org version)")
    items = document.get("items")
    if not isinstance(items, list):
        raise NotAFeed("malformed feed, no entry readable (JSON Feed without an items list)")
    feed_authors = _names(document.get("authors")) or _names(document.get("author"))
    entries: list[RawEntry] = []
    rejected: list[str] = []
    for item in items:
        read = _json_item(item, feed_authors)
        if isinstance(read, str):
            rejected.append(read)
        else:
            entries.append(read)
    return RawFeed(title=document.get("title"), entries=entries, rejected=tuple(rejected))
