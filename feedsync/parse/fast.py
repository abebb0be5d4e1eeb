"""fastfeedparser, for the documents it reads exactly as feedparser would.

:func:`fast_route` decides from one expat pass over the bytes whether a document is one
of those (well-formed UTF-8 or ASCII RSS 2.0/0.9x, RSS 1.0 or Atom 1.0, an XML content
type, every field feedsync keeps written in the one way both read alike: :class:`_Shape`
walks the elements in that same pass); :func:`read_fast` reads it and turns
fastfeedparser's values into feedparser's with feedparser's own functions, or gives up
(None) on anything it cannot tell apart, and the referee (referee.py) reads the document.
tests/test_parse_referee.py holds the two paths to the very same result, on feedparser's
own test corpus too; docs/architecture.md, "Two feed readers", says what is routed where,
and why.
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


class _OffShape(Exception):
    """Something in the document that the two readers may read differently: the walk stops
    there, and feedparser reads the document."""


# Namespaces the walk knows (spelled exactly: fastfeedparser matches some of them exactly,
# and feedparser lowercases them); a field-like element in any other one is feedparser's.
_ATOM_NS = "http://www.w3.org/2005/Atom"
_RSS1_NS = "http://purl.org/rss/1.0/"
_DC, _ITUNES, _MEDIA, _CONTENT_MODULE = "dc", "itunes", "media", "content"
_KNOWN_NS = {
    "": "",
    _RSS1_NS: _RSS1_NS,
    _ATOM_NS: _ATOM_NS,
    "http://purl.org/dc/elements/1.1/": _DC,
    "http://www.itunes.com/dtds/podcast-1.0.dtd": _ITUNES,
    "http://www.itunes.com/DTDs/PodCast-1.0.dtd": _ITUNES,
    "http://search.yahoo.com/mrss/": _MEDIA,
    "http://search.yahoo.com/mrss": _MEDIA,
    "http://purl.org/rss/1.0/modules/content/": _CONTENT_MODULE,
}
# Namespaces whose elements feedparser reads as its own (it gives them no prefix)
_FEEDPARSER_OWN = frozenset({"", _RSS1_NS, _ATOM_NS})

# What either reader makes of an element, by its local name lowercased, in any namespace:
# fastfeedparser reads an RSS item's children by local name whatever their namespace, and
# feedparser lowercases every name and maps a dozen namespaces onto its own fields.
_F_TITLE, _F_LINK, _F_SUMMARY, _F_CONTENT, _F_GUID, _F_DATE, _F_AUTHOR, _F_ENTRY, _F_TTL, _F_BOX = (
    range(10)
)
_CLASS_OF = {
    "title": _F_TITLE,
    "link": _F_LINK,
    **dict.fromkeys(("description", "summary", "abstract"), _F_SUMMARY),
    **dict.fromkeys(("content", "encoded", "body", "fullitem"), _F_CONTENT),
    **dict.fromkeys(("guid", "id"), _F_GUID),
    **dict.fromkeys(
        (
            "pubdate",
            "published",
            "issued",
            "date",
            "updated",
            "modified",
            "lastbuilddate",
            "created",
            "expirationdate",
        ),
        _F_DATE,
    ),
    **dict.fromkeys(
        ("author", "creator", "name", "email", "managingeditor", "contributor"), _F_AUTHOR
    ),
    **dict.fromkeys(("item", "entry"), _F_ENTRY),
    "ttl": _F_TTL,
    **dict.fromkeys(("image", "textinput", "source", "channel"), _F_BOX),
}
# feedparser's title, and its summary (the first of them; later ones are its content)
_FEEDPARSER_TITLES = frozenset({"", _RSS1_NS, _ATOM_NS, _DC, _MEDIA})
_LATER_SUMMARIES = frozenset(
    {("", "description"), (_RSS1_NS, "description"), (_ATOM_NS, "summary"),
     (_ITUNES, "summary"), (_MEDIA, "description"), (_DC, "description")}
)  # fmt: skip

# an RSS item's author; fastfeedparser reads an RSS 1.0 item's by name, not <itunes:author>
_RSS_AUTHORS = frozenset({("", "author"), (_DC, "creator"), (_ITUNES, "author")})
_RDF_AUTHORS = frozenset({("", "author"), (_DC, "creator")})
_Key = tuple[str, str]  # (namespace as the walk knows it, local name as written)
_Attrs = dict[str, str]

# Flags of an open element (the walk's stack), inherited by what it holds but _TEXT
_TEXT, _IMAGE, _SOURCE, _IN_ENTRY, _IN_AUTHOR, _CHANNEL = 1, 2, 4, 8, 16, 32
_A_LINK, _A_SUMMARY, _AN_ENTRY = 64, 128, 256  # work at their end
_INHERITED = _IMAGE | _SOURCE | _IN_ENTRY | _IN_AUTHOR
_AT_END = _A_LINK | _A_SUMMARY | _AN_ENTRY


class _Entry:
    """What the walk has seen of the entry it is in."""

    __slots__ = (
        "atom_link_first", "authors", "content", "deep_title", "first_summary_empty",
        "guids", "later_summary", "links", "names", "published", "summaries", "titles",
        "updated",
    )  # fmt: skip

    def __init__(self) -> None:
        self.titles = self.links = self.summaries = self.guids = self.authors = 0
        self.published = self.updated = self.names = 0
        self.deep_title = self.content = self.later_summary = self.atom_link_first = False
        self.first_summary_empty = False


class _Shape:
    """The elements of a feed, walked once (the handlers of the expat pass that checks it
    is well-formed), and held to the one way of writing each field feedsync keeps that
    both readers read alike: the channel's title and ttl; each entry's title, link,
    summary, GUID, date and author; the entries themselves. Anything else raises
    :class:`_OffShape`, and feedparser reads the document. Linear: a few dict look-ups
    an element, and the text of each entry's link and first summary (told empty or not).

    The shape (tests/test_parse_referee.py holds each rule to the readers):

    - entries: RSS ``<item>`` children of the one ``<channel>``, RSS 1.0 ``<item>`` and
      Atom ``<entry>`` children of the root, none inside another; no item or entry
      anywhere else (feedparser takes any element so named, in any case, for an entry);
    - fields are text (no element or comment inside: fastfeedparser reads the text
      before the first), in the feed's own namespace and in lower case as the specs
      write them, with no attribute that changes how they read (``type`` other than
      Atom's ``text`` and ``html``, ``mode``: feedparser decodes base64);
    - each field once per entry where feedparser keeps the last and fastfeedparser the
      first: the GUID, the date (an RSS ``<pubDate>`` and a ``<dc:date>``; Atom's
      ``<published>`` and ``<updated>``), the author (``<author>``, ``<dc:creator>``
      or, but in RSS 1.0, ``<itunes:author>``; an Atom ``<author>`` with one
      ``<name>``), the RSS ``<link>`` (not blank: feedparser then takes no permalink
      GUID for it; ``<atom:link>`` of another rel after it) or the one Atom link
      feedparser takes (rel ``alternate``, HTML);
    - the title first where both keep the first: more title-like elements only deeper
      in the entry (``<media:title>``) or ones feedparser ignores (``<itunes:title>``);
    - the summary first (``<description>``, Atom's ``<summary>``): one later
      summary-like element is content to feedparser, unless content came before (one
      after content overwrites the summary), and the first must not be empty when
      there is another (fastfeedparser then takes the next);
    - the channel's title once, a direct child of the channel (or of an Atom feed),
      title-like elements otherwise only in ``<image>`` and ``<textinput>``; ``<ttl>``
      at most once, a child of the channel.
    """

    def __init__(self, parser: Any, root: str) -> None:
        self.parser = parser
        if root == _ATOM_10:
            self.core = _ATOM_NS
        elif root == _RDF:
            self.core = _RSS1_NS
        else:
            self.core = ""
        self.atom = self.core == _ATOM_NS
        # flags of the open elements, the root's first; an Atom feed is its own channel
        self.stack = [_CHANNEL if self.atom else 0]
        self.channels = 1 if self.atom else 0
        self.entries = 0
        self.entry_depth = 0  # depth of the open entry's children; 0 outside entries
        self.entry = _Entry()
        self.title = 0  # the feed's title elements
        self.ttl = 0
        self.typed_html = False  # an Atom entry's title or summary of type="html"
        self.html_title = False  # the Atom feed's title is type="html"
        # the text of the entry's link, and of its first summary (told empty or not)
        self.text: list[str] = []
        parser.buffer_text = True  # that text in one piece, or few
        self.names: dict[str, tuple[int | None, _Key | None]] = {}
        core = self.core
        self.title_key, self.link_key = (core, "title"), (core, "link")
        self.summary_key = (core, "summary" if self.atom else "description")
        self.guid_key = (core, "id" if self.atom else "guid")
        # Atom: <published>, <updated>; RSS: <pubDate>, <dc:date>; RSS 1.0: <dc:date>
        self.published_key = {_ATOM_NS: (core, "published"), "": ("", "pubDate")}.get(core)
        self.updated_key = (core, "updated") if self.atom else (_DC, "date")
        self.authors = _RDF_AUTHORS if core == _RSS1_NS else _RSS_AUTHORS
        # the rule for each class of field inside an entry (by _F_* number): its flags,
        # or raise
        self.rules = (
            self.entry_title, self.entry_link, self.entry_summary, self.entry_content,
            self.entry_guid, self.entry_date, self.entry_author, self.entry_other,
            self.entry_other, self.entry_box,
        )  # fmt: skip
        parser.StartElementHandler = self.start
        parser.EndElementHandler = self.end
        parser.CommentHandler = self.comment
        parser.ProcessingInstructionHandler = self.instruction

    def read_text(self) -> None:
        """Keep the text of the element that starts, until it ends (:meth:`end`)."""
        self.text.clear()
        self.parser.CharacterDataHandler = self.text.append

    def comment(self, data: str) -> None:
        if self.stack[-1] & _TEXT:
            raise _OffShape("a comment in a field")

    def instruction(self, target: str, data: str) -> None:
        if self.stack[-1] & _TEXT:
            raise _OffShape("a processing instruction in a field")

    def start(self, name: str, attributes: dict[str, str]) -> None:
        stack = self.stack
        parent = stack[-1]
        if parent & _TEXT:
            raise _OffShape(f"an element inside a field: {name}")
        named = self.names.get(name)
        if named is None:  # once per name: a feed has a few dozen
            uri, _, local = name.rpartition(" ")
            ns = _KNOWN_NS.get(uri)
            named = self.names[name] = (
                _CLASS_OF.get(local.lower()),
                None if ns is None else (ns, local),
            )
        kind, key = named
        flags = parent & _INHERITED
        if kind is None or parent & _SOURCE:
            if kind == _F_ENTRY:
                raise _OffShape(f"an entry inside an Atom source: {name}")
            stack.append(flags)
            return
        if key is None:
            if parent & _IN_ENTRY or kind in (_F_TITLE, _F_TTL, _F_ENTRY):
                raise _OffShape(f"a field-like element in a namespace not known here: {name}")
            stack.append(flags)
            return
        if parent & _IN_ENTRY:
            if parent & _IMAGE and kind != _F_TITLE:
                if kind != _F_LINK or attributes:
                    raise _OffShape(f"a {key[1]} inside an item's image")
                flags |= _TEXT  # an image's link: neither reader's entry link
            else:
                depth = len(stack)
                direct = depth == self.entry_depth
                flags |= self.rules[kind](self.entry, key, attributes, direct, parent, depth)
        else:
            flags |= self.in_feed(kind, key[0], key[1], attributes, len(stack), parent)
        stack.append(flags)

    def end(self, name: str) -> None:
        flags = self.stack.pop()
        if not flags & _AT_END:
            return
        if flags & _AN_ENTRY:
            self.entry_ends()
            return
        self.parser.CharacterDataHandler = None
        text = "".join(self.text)
        if flags & _A_LINK:
            if not text.strip():
                # feedparser then does not take a permalink GUID for the link: the entry
                # has none; fastfeedparser's empty link cannot say it had one
                raise _OffShape("an empty <link>")
        else:
            # fastfeedparser then takes the next summary-like element (a blank one, not)
            self.entry.first_summary_empty = not text

    def in_feed(
        self, kind: int, ns: str, local: str, attributes: dict[str, str], depth: int, parent: int
    ) -> int:
        """A field-like element outside the entries: only the feed's title, its ttl, the
        entries and the channel matter."""
        core = self.core
        if kind == _F_ENTRY:
            # RSS: a child of the channel; RSS 1.0: of the root; Atom: of the feed
            where = 0 if core == _RSS1_NS else _CHANNEL
            if (ns, local) != (core, "entry" if self.atom else "item") or depth != (
                2 if core == "" else 1
            ):
                raise _OffShape(f"an entry fastfeedparser may not find: {local}")
            if parent & _CHANNEL != where:
                raise _OffShape("an item outside the channel")
            self.entries += 1
            self.entry = _Entry()
            self.entry_depth = depth + 1
            return _IN_ENTRY | _AN_ENTRY
        if kind == _F_BOX:
            if (ns, local) == (core, "channel") and depth == 1 and not self.atom:
                self.channels += 1
                if self.channels > 1:
                    raise _OffShape("two channels")
                return _CHANNEL
            if ns == core and local in ("image", "textinput", "textInput") and not self.atom:
                return _IMAGE  # feedparser: the image's fields, fastfeedparser: not the feed's
            if ns in _FEEDPARSER_OWN:
                raise _OffShape(f"a {local} where feedparser may not expect it")
            return 0
        if parent & _IMAGE:
            if kind == _F_ENTRY:
                raise _OffShape("an entry inside an image")
            return 0
        if kind == _F_TITLE:
            if ns not in _FEEDPARSER_TITLES:
                return 0  # <itunes:title>: neither reads it as the feed's
            if not parent & _CHANNEL or (ns, local) != (core, "title") or self.title:
                raise _OffShape("a feed title fastfeedparser may read otherwise")
            self.title += 1
            if self.atom:
                self.html_title = self.text_type(attributes)
            elif attributes:
                raise _OffShape("a feed title with attributes")
            return _TEXT
        if kind == _F_TTL:
            if (ns, local) != ("", "ttl") or not parent & _CHANNEL or self.atom or attributes:
                raise _OffShape("a ttl fastfeedparser may read otherwise")
            self.ttl += 1
            return _TEXT
        return 0  # the feed's link, description, dates...: feedsync does not keep them

    def text_type(self, attributes: dict[str, str]) -> bool:
        """Whether an Atom text construct is HTML; raises for a type the fast path does
        not convert (xhtml, a MIME type: feedparser decodes base64) or a mode."""
        kind = attributes.get("type", "text")
        if kind not in ("text", "html") or "mode" in attributes:
            raise _OffShape(f"an Atom text of type {kind!r}")
        return kind == "html"

    def entry_title(
        self, entry: _Entry, key: _Key, attributes: _Attrs, direct: bool, *_: int
    ) -> int:
        if not direct:
            entry.deep_title = True  # feedparser keeps the entry's own over it
            return 0
        if key[0] not in _FEEDPARSER_TITLES and entry.titles:
            return 0  # after the title, and feedparser ignores it: <itunes:title>
        if key != self.title_key or entry.titles:
            raise _OffShape(f"a title fastfeedparser may read otherwise: {key[1]}")
        entry.titles += 1
        if self.atom:
            self.typed_html |= self.text_type(attributes)
        elif attributes:
            raise _OffShape("an RSS title with attributes")
        return _TEXT

    def entry_link(
        self, entry: _Entry, key: _Key, attributes: _Attrs, direct: bool, *_: int
    ) -> int:
        if not direct:
            raise _OffShape("a link deeper in an entry")
        if self.atom:
            return self.atom_link(key, attributes)
        if key == (_ATOM_NS, "link"):
            rel = attributes.get("rel")
            if rel is None or rel.lower() == "alternate":
                raise _OffShape("an <atom:link> feedparser may take for the link")
            if not entry.links:
                entry.atom_link_first = True  # fastfeedparser then finds no <link>
            return 0
        if key != self.link_key or attributes or entry.links or entry.atom_link_first:
            raise _OffShape(f"a link fastfeedparser may read otherwise: {key[1]}")
        entry.links += 1
        self.read_text()
        return _TEXT | _A_LINK

    def entry_summary(
        self, entry: _Entry, key: _Key, attributes: _Attrs, direct: bool, *_: int
    ) -> int:
        if not entry.summaries:
            if key != self.summary_key or not direct:
                raise _OffShape(f"a summary fastfeedparser may read otherwise: {key[1]}")
            if self.atom:
                self.typed_html |= self.text_type(attributes)
            elif attributes:
                raise _OffShape("an RSS description with attributes")
            entry.summaries += 1
            self.read_text()
            return _TEXT | _A_SUMMARY
        if entry.content or key not in _LATER_SUMMARIES:
            raise _OffShape(f"a summary feedparser may read otherwise: {key[1]}")
        entry.summaries += 1
        # feedparser makes it content, and the next summary-like element overwrites
        entry.content = True
        if direct:
            entry.later_summary = True
        return 0

    def entry_content(
        self, entry: _Entry, key: _Key, attributes: _Attrs, direct: bool, *_: int
    ) -> int:
        if key[0] not in _FEEDPARSER_OWN and key[0] != _CONTENT_MODULE:
            return 0  # <media:content>: neither reads it as content
        if not direct or key not in ((_CONTENT_MODULE, "encoded"), (self.core, "content")):
            raise _OffShape(f"content feedparser may read otherwise: {key[1]}")
        entry.content = True
        return 0

    def entry_guid(
        self, entry: _Entry, key: _Key, attributes: _Attrs, direct: bool, *_: int
    ) -> int:
        if not direct or key != self.guid_key or entry.guids:
            raise _OffShape(f"a GUID fastfeedparser may read otherwise: {key[1]}")
        entry.guids += 1
        return _TEXT

    def entry_date(
        self, entry: _Entry, key: _Key, attributes: _Attrs, direct: bool, *_: int
    ) -> int:
        if direct and key == self.published_key and not entry.published:
            entry.published += 1
            return _TEXT
        if direct and key == self.updated_key and not entry.updated:
            entry.updated += 1
            return _TEXT
        raise _OffShape(f"a date fastfeedparser may read otherwise: {key[1]}")

    def entry_author(
        self, entry: _Entry, key: _Key, attributes: _Attrs, direct: bool, parent: int, depth: int
    ) -> int:
        if self.atom:
            if key == (_ATOM_NS, "author") and direct and not entry.authors:
                entry.authors += 1
                entry.names = 0
                return _IN_AUTHOR
            if (
                key == (_ATOM_NS, "name")
                and parent & _IN_AUTHOR
                and depth == self.entry_depth + 1
                and not entry.names
            ):
                entry.names += 1
                return _TEXT
        elif direct and not entry.authors and not attributes and key in self.authors:
            entry.authors += 1
            return _TEXT
        raise _OffShape(f"an author fastfeedparser may read otherwise: {key[1]}")

    def entry_box(self, entry: _Entry, key: _Key, attributes: _Attrs, direct: bool, *_: int) -> int:
        if key[0] not in _FEEDPARSER_OWN:
            return 0  # <itunes:image>, <media:...>: neither reads it as a field
        if key == (self.core, "source") and direct:
            return _SOURCE if self.atom else _TEXT
        if key == ("", "image") and direct and self.core == "":
            return _IMAGE
        raise _OffShape(f"a {key[1]} in an entry")

    def entry_other(self, entry: _Entry, key: _Key, *_: Any) -> int:
        raise _OffShape(f"a {key[1]} in an entry")  # an entry, a ttl

    def atom_link(self, key: tuple[str, str], attributes: dict[str, str]) -> int:
        """An Atom entry's link. feedparser takes the last of rel="alternate" (the rel
        when none is given) and an HTML type (when none is given); fastfeedparser the
        first of rel="alternate" as written, else the first with an href. Fast only
        when both land on the same one: exactly one such link, and when it has no rel,
        no link with an href before it."""
        entry = self.entry
        if key != (_ATOM_NS, "link") or {"url", "uri", "link"} & attributes.keys():
            raise _OffShape("an Atom link fastfeedparser may read otherwise")
        rel, kind = attributes.get("rel"), attributes.get("type")
        href = attributes.get("href")
        if rel is None or rel.lower() == "alternate":
            if (
                entry.links
                or rel not in (None, "alternate")
                or kind not in (None, "text/html")
                or not href
                or (rel is None and entry.atom_link_first)
            ):
                raise _OffShape("an Atom alternate link fastfeedparser may read otherwise")
            entry.links += 1
        elif href:
            entry.atom_link_first = True  # fastfeedparser's link when no alternate follows
        return 0

    def entry_ends(self) -> None:
        entry = self.entry
        if entry.deep_title and not entry.titles:
            raise _OffShape("a title only deeper in an entry")  # feedparser takes it
        if entry.later_summary and entry.first_summary_empty:
            raise _OffShape("an empty summary and another")  # fastfeedparser takes the next
        if self.atom and entry.atom_link_first and not entry.links:
            raise _OffShape("an Atom entry whose only links are not its link")
        if self.atom and entry.authors and entry.names != 1:
            raise _OffShape("an Atom author without one name")


class _Sniff:
    """What one expat pass says of a document: its declared encoding, whether it has a
    DOCTYPE, its root element, its :class:`_Shape`; ``ok`` when expat (feedparser's
    strict parser, namespaces on) read it to the end without an error and the shape held
    (``off_shape`` says where it did not)."""

    __slots__ = ("declared", "doctype", "off_shape", "ok", "root", "shape")

    def __init__(self, body: bytes) -> None:
        self.declared: str | None = None
        self.doctype = False
        self.root: str | None = None
        self.shape: _Shape | None = None
        self.off_shape: str | None = None
        parser = pyexpat.ParserCreate(namespace_separator=" ")
        parser.XmlDeclHandler = self._declaration
        parser.StartDoctypeDeclHandler = self._doctype

        def root(name: str, attributes: dict[str, str]) -> None:
            self.root = name
            if name not in _FAST_ROOTS:
                raise _OffShape(f"the root {name}")  # feedparser's: no need to read on
            self.shape = _Shape(parser, name)

        parser.StartElementHandler = root
        try:
            parser.Parse(body, True)
            self.ok = True
        except _OffShape as off:
            self.ok, self.off_shape = False, str(off)
        except Exception:  # ExpatError; LookupError for an encoding Python does not know
            self.ok = False

    def _declaration(self, version: str, encoding: str | None, standalone: int) -> None:
        self.declared = encoding

    def _doctype(self, *args: Any) -> None:
        self.doctype = True


def fast_route(body: bytes, content_type: str | None) -> tuple[str, _Shape] | None:
    """Whether fastfeedparser reads ``body`` as feedparser would: None when not (feedparser
    reads it), else the problem feedparser would report ('' for none) and the document's
    :class:`_Shape`.

    Fast only for what both read alike: an XML content type, UTF-8 (or ASCII) declared
    and real, well-formed for expat with namespaces (what feedparser's strict parser is),
    no DOCTYPE, the root of RSS (0.9x, 2.0), RSS 1.0 or Atom 1.0, and every field that
    feedsync keeps written in the shape both read alike.
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
    if not sniff.ok or sniff.doctype or sniff.shape is None:
        return None
    shape = sniff.shape
    declared = _codec(sniff.declared) if sniff.declared else "utf-8"
    http = _codec(charset) if charset else None
    if ascii_only:
        # every encoding both parsers may read ASCII in reads it the same
        if declared is None or (charset and http is None):
            return None
        return "", shape
    if declared != "utf-8":
        return None
    if http is not None:
        return ("", shape) if http == "utf-8" else None
    if not textual:
        return "", shape
    if sniff.declared is None:
        return None  # feedparser then asks chardet, if it is installed
    # text/xml without a charset is US-ASCII (RFC 3023): feedparser says so, reads UTF-8
    override = "CharacterEncodingOverride: document declared as us-ascii, but parsed as utf-8"
    return override, shape


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
    module: ModuleType, found: list[Any], channel: Any, body: bytes, shape: _Shape, base: str
) -> tuple[Any, list[RawEntry], int] | None:
    """(feed title, entries, how many were past the cap) as feedparser would have read
    them, or None when this document has something fastfeedparser reads otherwise and
    that cannot be told apart per entry (see docs/architecture.md, "Two feed readers"):
    what the walk (``shape``) cannot see, the values and the entries as fastfeedparser
    found them.

    Linear in the document: what is asked of the whole body is asked once, before the
    entries (a search of the body per entry made a 20,000-entry feed take 73 s of CPU
    here), and only the newest MAX_ENTRIES entries, chosen by their dates alone, get
    any further work."""
    if b"xml:base" in body or not _plain_dates(body):
        return None
    count = len(found)
    if count != shape.entries:
        return None  # an entry one reader finds and the other does not
    atom = shape.atom
    if atom:
        # Atom: every entry has its <id>; feedparser takes it for a permalink
        ids = len(_ATOM_ID.findall(body))
        if ids != count + (channel.get("id") is not None):
            return None
        # fastfeedparser does not say which entry's title or summary is type="html"
        typed_html = shape.typed_html
        permalink = True
    elif shape.core == _RSS1_NS:
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
        if shape.core == "" and guids == 0:
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
        elif link and link == guid and shape.core == "":
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
    title = channel.get("title")
    if shape.html_title and _has_markup(title or ""):
        return None  # an Atom feed's title of type="html": feedparser sanitises it
    return title_of(title), entries, len(found) - len(kept)


def read_fast(body: bytes, url: str, content_type: str | None) -> RawFeed | None:
    """The document as fastfeedparser reads it, or None when it is feedparser's to read
    (see :func:`fast_route`) or fastfeedparser refuses it."""
    module = _fastfeedparser()
    if module is None:
        return None
    route = fast_route(body, content_type)
    if route is None:
        return None
    problem, shape = route
    try:
        result = module.parse(
            body,
            include_content=False,
            include_tags=False,
            include_media=False,
            include_enclosures=False,
        )
        read = _fast_entries(module, result["entries"], result["feed"], body, shape, url)
    except Exception:  # anything it cannot read, the referee reads
        return None
    if read is None:
        return None
    title, entries, beyond = read
    ttl = None
    if shape.ttl:
        # fastfeedparser does not read it: the one <ttl> of the channel, read from the
        # bytes when written plainly (no CDATA, no reference, none elsewhere)
        written = _TTL.search(body)
        if written is None or body.count(b"<ttl") != 1 or b"&" in written.group(1):
            return None
        ttl = written.group(1).decode("utf-8", "replace")
    return RawFeed(title=title, entries=entries, problem=problem or None, ttl=ttl, beyond=beyond)
