"""fastfeedparser, for the documents it reads exactly as feedparser would.

:func:`fast_route` decides from one expat pass over the bytes whether a document is one
of those (well-formed UTF-8 or ASCII RSS 2.0/0.9x, RSS 1.0 or Atom 1.0, an XML content
type); :func:`read_fast` reads it and turns fastfeedparser's values into feedparser's
with feedparser's own functions, or gives up (None) on anything it cannot tell apart,
and the referee (referee.py) reads the document. tests/test_parse_referee.py holds the
two paths to the very same result; docs/architecture.md, "Two feed readers", says what is
routed where, and why.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import pyexpat
import re
from datetime import UTC, datetime
from types import ModuleType, SimpleNamespace
from typing import Any
from urllib.parse import uses_relative

from feedsync.parse.raw import RawEntry, RawFeed, newest


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


@functools.cache
def _fastfeedparser() -> ModuleType | None:
    """fastfeedparser, or None where it cannot be imported (then feedparser reads all)."""
    try:
        import fastfeedparser
    except Exception:  # not installed, or its lxml broken: the referee reads everything
        return None
    module: ModuleType = fastfeedparser
    return module


def load() -> None:
    """Import fastfeedparser now rather than at the first document (the daemon's start:
    :func:`feedsync.pipeline.load_pass_modules`). Where it cannot be imported, feedparser
    reads every document, as it would have at the first one."""
    _fastfeedparser()


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


def _has_markup(value: str) -> bool:
    """Whether ``value`` holds what feedparser's sanitiser may change: ``<``, ``&`` or a
    carriage return (three ``in``, each a memchr: ~40 times faster on a summary than a
    frozenset's ``isdisjoint``, which hashes every character)."""
    return "<" in value or "&" in value or "\r" in value


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
        if not isinstance(value, str) or not _has_markup(value):
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
) -> tuple[Any, list[RawEntry], int] | None:
    """(feed title, entries, how many were past the cap) as feedparser would have read
    them, or None when this document has something fastfeedparser reads otherwise and
    that cannot be told apart per entry (see docs/architecture.md, "Two feed readers").

    Linear in the document: what is asked of the whole body is asked once, before the
    entries (a search of the body per entry made a 20,000-entry feed take 73 s of CPU
    here), and only the newest MAX_ENTRIES entries, chosen by their dates alone, get
    any further work."""
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
    # feedparser would take an entry's <content> or <content:encoded> for its summary
    has_content = b"<content" in body or b":encoded" in body
    dates = [
        _iso_datetime(raw.get("published")) or _iso_datetime(raw.get("updated")) for raw in found
    ]
    kept = newest(dates)
    entries = []
    for index in kept:
        raw = found[index]
        link, guid = raw.get("link"), raw.get("id")
        title, summary = raw.get("title"), raw.get("description")
        published = raw.get("published")
        if root == "rss" and guids == 0:
            guid = None  # fastfeedparser names an entry without one by its link
        elif guid is None:
            return None
        elif published and _DATELIKE.fullmatch(guid) and dated_by(guid, published):
            return None  # fastfeedparser may have taken the guid for the entry's date
        if atom and typed_html and _has_markup(f"{title}{summary}"):
            return None
        if not summary and has_content:
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
                date=dates[index],
                summary=as_fp.text(summary) if atom else as_fp.html(summary),
                author=as_fp.text(raw.get("author")),
                guid=as_fp.text(guid) if not permalink else guid,
            )
        )
    return title_of(channel.get("title")), entries, len(found) - len(kept)


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
    title, entries, beyond = read
    ttl = _TTL.search(body) if b"<ttl>" in body else None
    return RawFeed(
        title=title,
        entries=entries,
        problem=problem or None,
        ttl=ttl.group(1).decode("utf-8", "replace") if ttl else None,
        beyond=beyond,
    )
