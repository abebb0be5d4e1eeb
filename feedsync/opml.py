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
its name ends in ``xmlurl``). ``feed://host/x`` means ``http://host/x`` and ``feed:https://...`` the
URL after ``feed:``, as feed readers take them.

**Folders** become a feed's category path, ``"News/World"`` for a feed two folders deep.
A ``/`` inside a folder's name must not split it: one with a space beside it stays as
it is (a folder "UI / UX" is the category "UI / UX"), and any other is written ``\\/``
(a folder "AC/DC" is the category ``AC\\/DC``). :func:`folders` and :func:`category`
are the two directions, also for ``feedsync add --category``.

**Writing** rebuilds the folders as nested outlines, so an export imported into another
reader, or back into feedsync, keeps them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from feedsync import __version__
from feedsync.canonical import canonical_url
from feedsync.records import FeedHealth
from feedsync.terminal import clean

_COMMENT = re.compile(rb"<!--.*?-->", re.DOTALL)
_XML_URL = re.compile(rb"\sxmlUrl\s*=", re.IGNORECASE)
_DECLARED = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
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


def _feed_url(url: str) -> str:
    """``feed://host/x`` -> ``http://host/x``; ``feed:https://...`` -> ``https://...``."""
    stripped = url.strip()
    lowered = stripped.lower()
    if lowered.startswith("feed:http://") or lowered.startswith("feed:https://"):
        return stripped[5:]
    if lowered.startswith("feed://"):
        return "http://" + stripped[7:]
    return stripped


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


def read(data: bytes) -> OpmlList:
    from lxml import etree  # only when importing

    declared = _DECLARED.match(data)
    encoding = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        parser = etree.HTMLParser(recover=True, encoding=encoding, no_network=True)
    except LookupError:
        parser = etree.HTMLParser(recover=True, encoding="utf-8", no_network=True)
    root = etree.fromstring(data, parser) if data.strip() else None
    if root is None or (root.tag != "opml" and not root.findall(".//opml")):
        raise OpmlError("not an OPML subscription list (no <opml> element in it)")

    feeds: dict[str, OpmlFeed] = {}
    first_line: dict[str, int | None] = {}
    repeats = 0
    skipped: list[Skipped] = []
    read_urls = 0

    def visit(element: etree._Element, path: list[str]) -> None:
        nonlocal read_urls, repeats
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
            read_urls += 1
            title = clean(attributes.get("title") or attributes.get("text") or "", one_line=True)
            kind = attributes.get("type", "").strip()
            if kind.lower() in _LIST_TYPES:
                what = clean(_feed_url(raw), one_line=True) or title or "-"
                reason = f'a link to another subscription list (type="{kind}"), not a feed'
                skipped.append(Skipped(child.sourceline, what, reason))
            elif not raw.strip():
                skipped.append(Skipped(child.sourceline, title or "-", 'no feed URL (xmlUrl="")'))
            else:
                url = canonical_url(_feed_url(raw))
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
    # a feed URL in the text that no outline yields: markup broken beyond recovery
    listed = len(_XML_URL.findall(_COMMENT.sub(b"", data)))
    if listed > read_urls:
        skipped.append(
            Skipped(
                None,
                f"{listed - read_urls} more xmlUrl= in the file",
                "in markup too broken to read as an outline",
            )
        )
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
