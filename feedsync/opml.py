"""OPML, the file format feed readers exchange subscription lists in.

Reading uses listparser (maintained, pure Python): nested folders become a feed's
category path ("News/World"). Writing rebuilds the folders as nested outlines, so an
export imported into another reader, or back into feedsync, keeps them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass

from feedsync import __version__
from feedsync.canonical import canonical_url
from feedsync.records import FeedHealth
from feedsync.terminal import clean

_XML_URL = re.compile(rb"xmlUrl\s*=", re.IGNORECASE)


class OpmlError(Exception):
    """Not an OPML file; ``str()`` says why, in one line."""


@dataclass(frozen=True)
class OpmlFeed:
    url: str
    title: str | None
    category: str | None  # "News/World" for a feed two folders deep


@dataclass(frozen=True)
class OpmlList:
    feeds: tuple[OpmlFeed, ...]
    merged: int  # entries of the file that repeated a feed already listed in it
    unusable: tuple[str, ...]  # feed URLs that are not http(s)


def read(data: bytes) -> OpmlList:
    import listparser  # only when importing

    result = listparser.parse(data)
    if not result.feeds and (result.bozo or not result.get("meta")):
        reason = result.get("bozo_exception") or "no <outline xmlUrl=...> in it"
        raise OpmlError(f"not an OPML subscription list ({str(reason).splitlines()[0]})")
    feeds: dict[str, OpmlFeed] = {}
    unusable = []
    for item in result.feeds:
        url = canonical_url(item.url)
        if url is None:
            unusable.append(item.url)
            continue
        path = "/".join(item.categories[0]) if item.categories and item.categories[0] else None
        feeds.setdefault(url, OpmlFeed(url=url, title=item.title or None, category=path))
    listed = len(_XML_URL.findall(data))
    return OpmlList(
        tuple(feeds.values()), max(listed - len(feeds) - len(unusable), 0), tuple(unusable)
    )


def write(feeds: Iterable[FeedHealth], title: str = "feedsync subscriptions") -> str:
    root = ET.Element("opml", version="2.0")
    head = ET.SubElement(root, "head")
    ET.SubElement(head, "title").text = title
    ET.SubElement(head, "docs").text = "http://opml.org/spec2.opml"
    body = ET.SubElement(root, "body")
    folders: dict[str, ET.Element] = {"": body}

    def folder(path: str) -> ET.Element:
        if path not in folders:
            parent, _, name = path.rpartition("/")
            folders[path] = ET.SubElement(folder(parent), "outline", text=name, title=name)
        return folders[path]

    for feed in sorted(feeds, key=lambda f: (f.category or "", f.title or f.url)):
        # no control characters: the file is printed to a terminal, and XML 1.0 refuses
        # them (another reader would reject the whole file)
        name = clean(feed.title or feed.url, one_line=True)
        ET.SubElement(
            folder(clean(feed.category or "", one_line=True)),
            "outline",
            type="rss",
            text=name,
            title=name,
            xmlUrl=feed.url,
        )
    ET.indent(root)
    comment = f"<!-- exported by feedsync {__version__} -->\n"
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        + comment
        + ET.tostring(root, encoding="unicode")
        + "\n"
    )
