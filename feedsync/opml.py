"""OPML, the file format feed readers exchange subscription lists in.

**Reading** goes through lxml's HTML parser in recovery mode, the parser listparser
uses, read here directly (lxml comes with trafilatura): subscription lists from the
wild are often not well-formed XML (quotes inside attribute values, bare ``&``), and an
XML parser would refuse the whole file. listparser was used before and dropped; on
files that break the rules it was silent about what it left out: an outline whose
``description`` holds unescaped quotes right before ``xmlUrl`` (``..."word"xmlUrl="...``)
lost its feed without a word, and it gives no list of what it did not take. Reading the
outlines here, every outline is accounted for: imported, a repeat of one before it
(counted from the outlines read, so comments and empty ``xmlUrl=""`` are not repeats),
or not imported with its reason (an outline of ``type="source"`` or ``"include"`` links
another subscription list: its ``xmlUrl`` is no feed). A feed URL glued to the attribute
before it by a stray quote is still found (the HTML parser makes one attribute of both;
its name ends in ``xmlurl``); one the file writes that no outline yields (markup broken
beyond what the parser recovers) is named with its line and what was wrong around it.
``feed://host/x`` means ``http://host/x`` and ``feed:https://...`` the URL after
``feed:``, as feed readers take them.

**Folders** become a feed's category path, ``"News/World"`` for a feed two folders deep.
A ``/`` inside a folder's name must not split it: one with a space beside it stays as
it is (a folder "UI / UX" is the category "UI / UX"), and any other is written ``\\/``
(a folder "AC/DC" is the category ``AC\\/DC``). :func:`folders` and :func:`category`
are the two directions, also for ``feedsync add --category``.

**Writing** rebuilds the folders as nested outlines, so an export imported into another
reader, or back into feedsync, keeps them.
"""

from __future__ import annotations

import html
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html.entities import html5

from feedsync import __version__
from feedsync.canonical import canonical_url, without_feed_scheme
from feedsync.records import FeedHealth
from feedsync.terminal import clean

# Where a feed URL is written in the file: every "xmlUrl=" (any case, glued to what is
# before it or not, as the parser reads it) outside comments; those in a CDATA section
# (text to the parser) apart, since no outline can come of them.
_WRITTEN = re.compile(
    rb"(<!--.*?(?:-->|\Z))|(<!\[CDATA\[.*?(?:\]\]>|\Z))|xmlurl\s*=\s*", re.IGNORECASE | re.DOTALL
)
_XML_URL = re.compile(rb"xmlurl\s*=\s*", re.IGNORECASE)
_UNQUOTED = re.compile(rb"[^\s>]*")
_TAG_NAME = re.compile(rb"<([A-Za-z][\w:.-]*)")
_REFERENCE = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
_DECLARED = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
# An outline's start tag, and where an attribute's quoted value starts in it (after a
# space, or glued to the quote that closed the one before)
_OUTLINE_TAG = re.compile(rb"<outline\b[^<>]*>", re.IGNORECASE)
_ATTRIBUTE = re.compile(rb'(?<=[\s"])([A-Za-z_:][\w:.-]*)\s*=\s*"')
_NAMES = frozenset({b"text", b"title"})
# Outlines that link another subscription list, not a feed, even with an xmlUrl: "source"
# (listparser's reading of such lists), "include" (OPML 2.0's inclusion of another file)
_LIST_TYPES = frozenset({"source", "include"})


class OpmlError(Exception):
    """Not an OPML file; ``str()`` says why, in one line."""


@dataclass(frozen=True)
class OpmlFeed:
    url: str
    title: str | None
    category: str | None  # "News/World" for a feed two folders deep


@dataclass(frozen=True)
class Skipped:
    """An outline of the file that was not imported."""

    line: int | None  # where it is in the file
    what: str  # its feed URL as the file has it, or its text
    reason: str


@dataclass(frozen=True)
class OpmlList:
    feeds: tuple[OpmlFeed, ...]
    skipped: tuple[Skipped, ...]  # every outline not imported, with its reason, in order
    repeats: int  # of those, the outlines naming a feed an outline before them named


# ---------------------------------------------------------------- category paths


def folders(category: str | None) -> list[str]:
    """The folder names of a category path: split at each ``/`` with no space on either
    side that is not written ``\\/``."""
    if not category:
        return []
    names: list[str] = []
    name: list[str] = []
    i = 0
    while i < len(category):
        char = category[i]
        if char == "\\" and i + 1 < len(category) and category[i + 1] in "/\\":
            name.append(category[i + 1])
            i += 2
            continue
        spaced = (i > 0 and category[i - 1].isspace()) or (
            i + 1 < len(category) and category[i + 1].isspace()
        )
        if char == "/" and not spaced:
            names.append("".join(name))
            name = []
        else:
            name.append(char)
        i += 1
    names.append("".join(name))
    return [n.strip() for n in names if n.strip()]


def category(names: Sequence[str]) -> str | None:
    """The category path of folders ``names`` (:func:`folders` gives them back)."""
    parts = []
    for name in (n.strip() for n in names):
        if not name:
            continue
        out = []
        for i, char in enumerate(name):
            if char == "\\":
                out.append("\\\\")
            elif char == "/":
                spaced = (i > 0 and name[i - 1].isspace()) or (
                    i + 1 < len(name) and name[i + 1].isspace()
                )
                out.append("/" if spaced else "\\/")
            else:
                out.append(char)
        parts.append("".join(out))
    return "/".join(parts) or None


# ---------------------------------------------------------------- reading


def _xml_url(attributes: dict[str, str]) -> str | None:
    """The outline's feed URL: ``xmlUrl`` (any case), or an attribute whose name the
    parser glued to it after a stray quote (``word"xmlurl``)."""
    for name, value in attributes.items():
        if name.lower() == "xmlurl":
            return value
    for name, value in attributes.items():
        if name.lower().endswith("xmlurl"):
            return value
    return None


@dataclass(frozen=True)
class _Written:
    """One ``xmlUrl=`` as the file writes it."""

    offset: int  # of "xmlUrl=" in the file
    line: int
    value: str  # decoded, references resolved
    in_cdata: bool


def _resolved(value: str) -> str:
    """``value`` with its character references resolved as the parser does: only those
    closed by ";" (``&copy=2`` in a URL stays as written)."""

    def one(reference: re.Match[str]) -> str:
        text = reference.group(0)
        return html.unescape(text) if text[1] == "#" else html5.get(text[1:], text)

    return _REFERENCE.sub(one, value) if "&" in value else value


def _key(value: str) -> str:
    """What a written value and the parser's value of it are compared by."""
    return " ".join(value.split())


def _written(data: bytes, encoding: str) -> list[_Written]:
    """Every ``xmlUrl=`` in the file, outside comments, with its value and line (counted
    on from the one before: a list of 10,000 feeds is not counted from its start each)."""
    found: list[_Written] = []
    counted, line = 0, 1  # the line at offset ``counted``

    def add(start: int, end: int, in_cdata: bool) -> None:
        nonlocal counted, line
        quote = data[end : end + 1]
        if quote in (b'"', b"'"):
            close = data.find(quote, end + 1)
            raw = data[end + 1 : close if close >= 0 else len(data)]
        else:
            unquoted = _UNQUOTED.match(data, end)
            raw = unquoted.group(0) if unquoted else b""
        try:
            value = raw.decode(encoding, "replace")
        except LookupError:
            value = raw.decode("utf-8", "replace")
        line += data.count(b"\n", counted, start)
        counted = start
        found.append(_Written(start, line, _resolved(value), in_cdata))

    for match in _WRITTEN.finditer(data):
        if match.group(1) is not None:
            continue  # a comment: left out on purpose
        if match.group(2) is not None:
            for inner in _XML_URL.finditer(data, match.start(), match.end()):
                add(inner.start(), inner.end(), True)
            continue
        add(match.start(), match.end(), False)
    return found


def _what_was_wrong(data: bytes, written: _Written, before: int | None) -> str | None:
    """Why the parser made no outline of a feed URL the file writes, as far as the text
    around it shows; None when nothing shows. ``before``: the offset of the ``xmlUrl=``
    before this one."""
    if written.in_cdata:
        return "in a CDATA section, which is text, not an outline"
    start = data.rfind(b"<", 0, written.offset)
    tag = data[start : written.offset] if start >= 0 else b""
    name = _TAG_NAME.match(tag)
    if name is None or b">" in tag:
        return "outside any tag (in the text between tags)"
    if name.group(1).lower() != b"outline":
        spelled = name.group(1).decode("ascii", "replace")
        return f"in a <{spelled}> tag, not an <outline>"
    if before is not None and before > start:
        return "a second xmlUrl in one outline (only the first is read)"
    if tag.count(b'"') % 2:
        return "inside the value of an attribute before it (a closing quote missing?)"
    return None


def _not_read(data: bytes, encoding: str, read: list[tuple[str, int | None]]) -> list[Skipped]:
    """The feed URLs the file writes that no outline yields (markup broken beyond what
    the parser recovers), each with its line and what was wrong. ``read``: the xmlUrl
    and line of every outline the parser gave.

    Written values are paired with the outlines' values, on the same line first (a tag
    over several lines has its line where it ends). A value the parser spelled otherwise
    than it is written (a reference it left alone) leaves one outline unpaired for each:
    as many written ones with nothing wrong to be seen are taken for those."""
    on_line = Counter((_key(value), line) for value, line in read)
    by_value = Counter(_key(value) for value, _ in read)
    unpaired: list[tuple[_Written, int | None]] = []
    before: int | None = None
    for written in _written(data, encoding):
        if not written.in_cdata and on_line[(_key(written.value), written.line)] > 0:
            on_line[(_key(written.value), written.line)] -= 1
            by_value[_key(written.value)] -= 1
        else:
            unpaired.append((written, before))
        before = written.offset
    broken: list[tuple[_Written, str | None]] = []
    for written, previous in unpaired:
        if not written.in_cdata and by_value[_key(written.value)] > 0:
            by_value[_key(written.value)] -= 1
        else:
            broken.append((written, _what_was_wrong(data, written, previous)))
    spelled_otherwise = sum(n for n in by_value.values() if n > 0)
    said: list[Skipped] = []
    for written, why in broken:
        if why is None and spelled_otherwise > 0:
            spelled_otherwise -= 1
            continue
        reason = why or "in markup too broken to read as an outline"
        said.append(Skipped(written.line, written.value.strip() or "-", reason))
    return said


def _quotes_in_names(data: bytes) -> bytes:
    """``data`` with the quotes inside an outline's ``text`` or ``title`` value escaped:
    ``text="AT&T "quoted" blog"`` (written by hand, or by a tool that does not escape)
    was read as the title ``AT&T `` and two attributes named ``quoted"`` and ``blog"``.
    The value runs to the last quote before the next attribute (or the end of the tag).
    Nothing else changes, and no line: the lines said of skipped outlines stay true."""

    def one_tag(tag: re.Match[bytes]) -> bytes:
        text = tag.group(0)
        starts = list(_ATTRIBUTE.finditer(text))
        if not any(a.group(1).lower() in _NAMES for a in starts):
            return text
        end = len(text) - (2 if text.endswith(b"/>") else 1)
        out, done = [], 0
        for i, attribute in enumerate(starts):
            if attribute.group(1).lower() not in _NAMES:
                continue
            stop = starts[i + 1].start() if i + 1 < len(starts) else end
            value = text[attribute.end() : stop]
            closing = value.rfind(b'"')
            if closing <= 0 or b'"' not in value[:closing]:
                continue
            out += [text[done : attribute.end()], value[:closing].replace(b'"', b"&quot;")]
            done = attribute.end() + closing
        return b"".join([*out, text[done:]])

    return _OUTLINE_TAG.sub(one_tag, data)


def read(data: bytes) -> OpmlList:
    from lxml import etree  # only when importing

    data = _quotes_in_names(data)

    declared = _DECLARED.match(data)
    encoding = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        parser = etree.HTMLParser(recover=True, encoding=encoding, no_network=True)
    except LookupError:
        encoding = "utf-8"
        parser = etree.HTMLParser(recover=True, encoding=encoding, no_network=True)
    root = etree.fromstring(data, parser) if data.strip() else None
    if root is None or (root.tag != "opml" and not root.findall(".//opml")):
        raise OpmlError("not an OPML subscription list (no <opml> element in it)")

    feeds: dict[str, OpmlFeed] = {}
    first_line: dict[str, int | None] = {}
    repeats = 0
    skipped: list[Skipped] = []
    read_urls: list[tuple[str, int | None]] = []  # every xmlUrl an outline gave, and its line

    def visit(element: etree._Element, path: list[str]) -> None:
        nonlocal repeats
        for child in element:
            if not isinstance(child.tag, str):
                continue  # a comment, a processing instruction
            if child.tag != "outline":
                visit(child, path)  # <body>, and what recovery put around outlines
                continue
            attributes = {str(k): str(v) for k, v in child.attrib.items()}
            name = clean(attributes.get("text") or attributes.get("title") or "", one_line=True)
            raw = _xml_url(attributes)
            has_children = any(isinstance(c.tag, str) for c in child)
            if raw is None:
                if has_children:
                    visit(child, [*path, name] if name else path)
                elif attributes.get("type", "").lower() not in ("", "folder"):
                    what = attributes.get("url") or attributes.get("htmlurl") or name or "-"
                    reason = f"no feed URL (xmlUrl) in this outline of type {attributes['type']}"
                    skipped.append(Skipped(child.sourceline, what, reason))
                continue
            read_urls.append((raw, child.sourceline))
            title = clean(attributes.get("title") or attributes.get("text") or "", one_line=True)
            kind = attributes.get("type", "").strip()
            if kind.lower() in _LIST_TYPES:
                what = clean(without_feed_scheme(raw), one_line=True) or title or "-"
                reason = f'a link to another subscription list (type="{kind}"), not a feed'
                skipped.append(Skipped(child.sourceline, what, reason))
            elif not raw.strip():
                skipped.append(Skipped(child.sourceline, title or "-", 'no feed URL (xmlUrl="")'))
            else:
                url = canonical_url(without_feed_scheme(raw))
                if url is None:
                    reason = "not an http(s) feed URL"
                    skipped.append(Skipped(child.sourceline, clean(raw, one_line=True), reason))
                else:
                    if url in feeds:
                        repeats += 1
                        where = first_line[url]
                        reason = "a repeat of the feed " + (
                            f"on line {where}" if where else "listed before it"
                        )
                        skipped.append(Skipped(child.sourceline, url, reason))
                    else:
                        feeds[url] = OpmlFeed(url, title or None, category(path))
                        first_line[url] = child.sourceline
            if has_children:  # a feed that is also a folder (rare): its children too
                visit(child, [*path, title] if title else path)

    visit(root, [])
    # the feed URLs the file writes that no outline yields: markup broken beyond recovery
    skipped += _not_read(data, encoding, read_urls)
    skipped.sort(key=lambda s: s.line if s.line is not None else sys.maxsize)  # stable
    return OpmlList(tuple(feeds.values()), tuple(skipped), repeats)


# ---------------------------------------------------------------- writing


def write(feeds: Iterable[FeedHealth], title: str = "feedsync subscriptions") -> str:
    root = ET.Element("opml", version="2.0")
    head = ET.SubElement(root, "head")
    ET.SubElement(head, "title").text = title
    ET.SubElement(head, "docs").text = "http://opml.org/spec2.opml"
    body = ET.SubElement(root, "body")
    made: dict[tuple[str, ...], ET.Element] = {(): body}

    def folder(path: tuple[str, ...]) -> ET.Element:
        if path not in made:
            name = path[-1]
            made[path] = ET.SubElement(folder(path[:-1]), "outline", text=name, title=name)
        return made[path]

    for feed in sorted(feeds, key=lambda f: (f.category or "", f.title or f.url)):
        # no control characters: the file is printed to a terminal, and XML 1.0 refuses
        # them (another reader would reject the whole file)
        name = clean(feed.title or feed.url, one_line=True)
        path = tuple(folders(clean(feed.category or "", one_line=True)))
        ET.SubElement(folder(path), "outline", type="rss", text=name, title=name, xmlUrl=feed.url)
    ET.indent(root)
    comment = f"<!-- exported by feedsync {__version__} -->\n"
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        + comment
        + ET.tostring(root, encoding="unicode")
        + "\n"
    )
