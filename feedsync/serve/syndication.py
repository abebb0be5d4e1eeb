"""Full-text feeds out: Atom (RFC 4287) and JSON Feed 1.1 of one feed, one category (a
folder and its subfolders) or all of them, and an OPML 2.0 subscribing a reader app to
them at once. A reader app then gets the article text feedsync extracted, not the
teaser the site's own feed carries.

The renderers are pure (articles in, bytes out); the handlers (bound to their URLs,
with ``[serve] window``, by feedsync/serve/routes.py) read through storage's Reading
role only and answer through :func:`web.keyed`, so a reader polling every few
minutes costs a 304 and no read of articles while nothing changed (the ETag comes from
the storage's content_key and the request, known before the window is read).

Everything in an article came from the internet: each text is escaped, and the
characters XML 1.0 forbids (C0 controls but tab and newlines, lone surrogates, U+FFFE/F)
are dropped, so a hostile title or body still gives a well-formed document. An entry's
id is the server URL of its article page (``<base>/article/<id>``, no token): the same
on every request, so a reader never shows an article twice.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from datetime import datetime
from email.utils import format_datetime
from typing import TYPE_CHECKING, NamedTuple
from xml.sax.saxutils import escape, quoteattr

from feedsync import __version__
from feedsync import opml as opml_paths
from feedsync.records import FeedHealth, NewsItem
from feedsync.serve import web
from feedsync.storage_errors import UnknownArticle

if TYPE_CHECKING:
    from feedsync.storage import Storage

WINDOW = 50  # articles a feed document holds; the server passes [serve] window
ATOM_TYPE = "application/atom+xml; charset=utf-8"
JSON_TYPE = "application/feed+json; charset=utf-8"
OPML_TYPE = "text/x-opml; charset=utf-8"
JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
EMPTY_UPDATED = "1970-01-01T00:00:00Z"  # a feed with no article yet: a fixed date

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

Feeds = dict[int, list[tuple[int, str, str | None]]]


def xml_text(text: str | None) -> str:
    """``text`` without the characters XML 1.0 cannot hold."""
    return _NOT_XML.sub("", text or "")


class Selection(NamedTuple):
    """What a feed document is of: its title, its path on this server (without the
    extension) and the filter for news_window."""

    title: str
    path: str
    feed_id: int | None = None
    category: str | None = None


class Document(NamedTuple):
    """A window of articles, ready to render."""

    selection: Selection
    items: Sequence[NewsItem]
    carried: Feeds  # the feeds that carried each article, by its id
    self_url: str
    home_url: str
    next_url: str | None
    article_base: str  # entry ids: article_base + "/article/<id>"


def paragraphs_html(body: str) -> str:
    """The extracted text as HTML: a paragraph per block of lines, a line break within
    one, every character escaped."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", xml_text(body)) if b.strip()]
    return "".join(
        "<p>" + "<br>".join(escape(line) for line in block.splitlines()) + "</p>"
        for block in blocks
    )


def published_of(item: NewsItem) -> str:
    """The date a reader shows: the feed's own, else when feedsync fetched it."""
    return item.published or item.fetched_at


def updated_of(item: NewsItem) -> str:
    return max(published_of(item), item.fetched_at)


def newest_updated(items: Sequence[NewsItem]) -> str:
    return max((updated_of(i) for i in items), default=EMPTY_UPDATED)


def entry_id(document: Document, item: NewsItem) -> str:
    return f"{document.article_base}/article/{item.id}"


def render_atom(document: Document) -> bytes:
    """An Atom feed document (RFC 4287) of the window, RFC 5005's next link to the
    page after it."""
    sel = document.selection
    out = [
        '<?xml version="1.0" encoding="utf-8"?>\n',
        '<feed xmlns="http://www.w3.org/2005/Atom">\n',
        f"<id>{escape(xml_text(document.self_url.split('?')[0]))}</id>\n",
        f"<title>{escape(xml_text(sel.title))}</title>\n",
        f"<updated>{escape(newest_updated(document.items))}</updated>\n",
        "<author><name>feedsync</name></author>\n",
        "<generator>feedsync</generator>\n",
        f'<link rel="self" type="application/atom+xml" href={quoteattr(document.self_url)}/>\n',
        f'<link rel="alternate" type="text/html" href={quoteattr(document.home_url)}/>\n',
    ]
    if document.next_url:
        out.append(f'<link rel="next" href={quoteattr(document.next_url)}/>\n')
    for item in document.items:
        out.append("<entry>\n")
        out.append(f"<id>{escape(entry_id(document, item))}</id>\n")
        out.append(f"<title>{escape(xml_text(item.title))}</title>\n")
        out.append(f'<link rel="alternate" href={quoteattr(xml_text(item.url))}/>\n')
        out.append(f"<published>{escape(published_of(item))}</published>\n")
        out.append(f"<updated>{escape(updated_of(item))}</updated>\n")
        if item.author:
            out.append(f"<author><name>{escape(xml_text(item.author))}</name></author>\n")
        for feed_id, url, title in document.carried.get(item.id, []):
            out.append(
                f"<category term={quoteattr(str(feed_id))}"
                f" label={quoteattr(xml_text(title or url))}"
                f" scheme={quoteattr(xml_text(url))}/>\n"
            )
        out.append(f'<content type="html">{escape(paragraphs_html(item.body))}</content>\n')
        out.append("</entry>\n")
    out.append("</feed>\n")
    return "".join(out).encode("utf-8")


def render_json(document: Document) -> bytes:
    """A JSON Feed 1.1 of the window; ``next_url`` to the page after it. The feeds that
    carried each article: ``tags`` (their titles) and ``_feedsync.feeds``."""
    sel = document.selection
    feed: dict[str, object] = {
        "version": JSON_FEED_VERSION,
        "title": xml_text(sel.title),
        "home_page_url": document.home_url,
        "feed_url": document.self_url,
        "authors": [{"name": "feedsync"}],
    }
    if document.next_url:
        feed["next_url"] = document.next_url
    items: list[dict[str, object]] = []
    for item in document.items:
        carried = document.carried.get(item.id, [])
        entry: dict[str, object] = {
            "id": entry_id(document, item),
            "url": xml_text(item.url),
            "title": xml_text(item.title),
            "content_html": paragraphs_html(item.body),
            "content_text": xml_text(item.body),
            "date_published": published_of(item),
            "date_modified": updated_of(item),
        }
        if item.author:
            entry["authors"] = [{"name": xml_text(item.author)}]
        if item.language:
            entry["language"] = xml_text(item.language)
        if carried:
            entry["tags"] = [xml_text(title or url) for _, url, title in carried]
            entry["_feedsync"] = {
                "feeds": [
                    {"id": fid, "url": xml_text(url), "title": xml_text(title) if title else None}
                    for fid, url, title in carried
                ]
            }
        items.append(entry)
    feed["items"] = items
    return (json.dumps(feed, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def render_opml(request: web.Request, feeds: Sequence[FeedHealth]) -> bytes:
    """OPML 2.0: an outline per feed (its full-text Atom on this server as ``xmlUrl``,
    the feed itself as ``htmlUrl``) in its category's folders, and one for all."""
    root = ET.Element("opml", version="2.0")
    head = ET.SubElement(root, "head")
    ET.SubElement(head, "title").text = "feedsync: full-text feeds"
    ET.SubElement(head, "docs").text = "http://opml.org/spec2.opml"
    body = ET.SubElement(root, "body")
    ET.SubElement(
        body,
        "outline",
        type="rss",
        text="All feeds",
        title="All feeds",
        xmlUrl=request.link("/feeds/all.atom"),
        htmlUrl=request.link("/"),
    )
    folders: dict[tuple[str, ...], ET.Element] = {(): body}
    for feed in sorted(feeds, key=lambda f: (f.category or "", f.title or f.url, f.id)):
        path = tuple(xml_text(name) for name in opml_paths.folders(feed.category))
        for depth in range(1, len(path) + 1):
            if path[:depth] not in folders:
                parent = folders[path[: depth - 1]]
                name = path[depth - 1]
                folders[path[:depth]] = ET.SubElement(parent, "outline", text=name, title=name)
        name = xml_text(feed.title or feed.url)
        ET.SubElement(
            folders[path],
            "outline",
            type="rss",
            text=name,
            title=name,
            xmlUrl=request.link(f"/feeds/{feed.id}.atom"),
            htmlUrl=xml_text(feed.url),
        )
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode")
    return ('<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n").encode("utf-8")


# ---------------------------------------------------------------- handlers


class BadRequest(Exception):
    """A one-line reason for a 400 or 404 (``status``)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def select(storage: Storage, path: str, extension: str) -> Selection:
    """The feed document ``path`` names: ``/feeds/all``, ``/feeds/<id>`` or
    ``/feeds/category/<folder>`` (a folder path may hold ``/``), plus ``extension``."""
    stem = path.removesuffix(extension)
    if stem == "/feeds/all":
        return Selection("feedsync: all feeds", stem)
    if stem.startswith("/feeds/category/"):
        name = stem.removeprefix("/feeds/category/")
        if not name or not storage.has_category(name):
            raise BadRequest(404, f"no category {name!r}")
        return Selection(f"feedsync: {name}", stem, category=name)
    ref = stem.removeprefix("/feeds/")
    if not ref.isdigit() or ref.startswith("0") or len(ref) > 18:
        raise BadRequest(404, f"no feed {ref!r}")
    found = storage.feed_name(int(ref))
    if found is None:
        raise BadRequest(404, f"no feed {ref}")
    return Selection(f"feedsync: {found}", stem, feed_id=int(ref))


def before_of(request: web.Request) -> int | None:
    """``?before=<article id>``: where a page after the first starts."""
    raw = request.query.get("before")
    if raw is None:
        return None
    if not raw.isdigit() or len(raw) > 18:
        raise BadRequest(400, "before must be an article id")
    return int(raw)


def window_of(
    storage: Storage, selection: Selection, before: int | None, window: int
) -> list[NewsItem]:
    try:
        return storage.news_window(
            feed_id=selection.feed_id,
            category=selection.category,
            before=before,
            limit=window,
        )
    except UnknownArticle as exc:
        raise BadRequest(400, f"before: {exc}") from None


def http_date(iso: str) -> str:
    return format_datetime(datetime.fromisoformat(iso.replace("Z", "+00:00")), usegmt=True)


def _feed(
    storage: Storage,
    request: web.Request,
    extension: str,
    content_type: str,
    render: Callable[[Document], bytes],
    window: int,
    dates: web.Dates | None,
    recent: web.Recent,
) -> web.Response:
    """A feed document under conditional GET decided before any read but the storage's
    content_key (``web.keyed``): a reader polling with the ETag (or the Last-Modified)
    it got costs a 304 and no read of articles while nothing changed, and no read at
    all within the freshness window of the document's last answer (``recent``)."""
    try:
        before = before_of(request)
    except BadRequest as exc:
        return web.text(exc.status, str(exc))

    def answer() -> web.Body | web.Response:
        try:
            selection = select(storage, request.path, extension)
            items = window_of(storage, selection, before, window)
        except BadRequest as exc:
            return web.text(exc.status, str(exc))
        path = selection.path + extension
        self_url = (
            request.link(path, before=str(before)) if before is not None else request.link(path)
        )
        next_url = request.link(path, before=str(items[-1].id)) if len(items) == window else None
        carried = storage.news_feeds_of([i.id for i in items])
        document = Document(
            selection, items, carried, self_url, request.link("/"), next_url, request.base
        )
        newest = max((i.fetched_at for i in items), default=None)
        return web.Body(render(document), http_date(newest) if newest else None)

    def tag() -> str:
        return web.key_etag(storage.content_key(), request, __version__, window)

    return web.keyed(request, tag, content_type, answer, dates=dates, recent=recent)


def feed_atom(
    storage: Storage,
    request: web.Request,
    window: int = WINDOW,
    dates: web.Dates | None = None,
    recent: web.Recent = web.NO_WINDOW,
) -> web.Response:
    """``/feeds/all.atom``, ``/feeds/<id>.atom``, ``/feeds/category/<folder>.atom``:
    the newest ``window`` articles, full text; ``?before=<id>``: the page after it.
    ``dates``: the server's memory of the Last-Modified it sent (``web.Dates``);
    ``recent``: its freshness window (``web.Recent``; the default: none)."""
    return _feed(storage, request, ".atom", ATOM_TYPE, render_atom, window, dates, recent)


def feed_json(
    storage: Storage,
    request: web.Request,
    window: int = WINDOW,
    dates: web.Dates | None = None,
    recent: web.Recent = web.NO_WINDOW,
) -> web.Response:
    """The same as JSON Feed 1.1 (``.json``)."""
    return _feed(storage, request, ".json", JSON_TYPE, render_json, window, dates, recent)


def opml(
    storage: Storage, request: web.Request, recent: web.Recent = web.NO_WINDOW
) -> web.Response:
    """``/feeds.opml``: every feed's full-text Atom, in its folders, and all of them
    (its ETag from content_key, which moves with a feed added, removed or renamed;
    ``recent``: the freshness window, as the feed documents')."""

    def answer() -> web.Body:
        return web.Body(render_opml(request, storage.feed_health()))

    def tag() -> str:
        return web.key_etag(storage.content_key(), request, __version__)

    return web.keyed(request, tag, OPML_TYPE, answer, recent=recent)
