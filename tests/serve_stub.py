"""The real ``feedsync`` command, with handlers of the tests' own: the server's tests
(tests/test_serve_server.py, tests/test_serve_access.py) hold the server, the access
rule and the command to what a user sees, whatever the pages and feeds render.

    python tests/serve_stub.py --config FILE serve [--listen ADDR]

Before feedsync.serve.routes is imported, ``feedsync.serve.pages`` and
``feedsync.serve.syndication`` are this file's modules (sys.modules), so the real route
table, server, access check and command run with handlers that say plainly what they
saw: the articles the storage holds, the request's token, its query. Their shape is the
handler modules': ``pages.Pages(config, recent)``'s methods, ``syndication``'s functions.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from typing import TYPE_CHECKING

from feedsync.serve.web import Request, Response, conditional, etag_of

if TYPE_CHECKING:
    from feedsync.storage import Storage


def _html(body: str) -> Response:
    page = f"<!doctype html><title>stub</title>{body}\n".encode()
    return Response(200, "text/html; charset=utf-8", page)


def news_page(storage: Storage, request: Request) -> Response:
    titles = [item.title for item in storage.news_recent(50)]
    token = "yes" if request.token is not None else "no"
    return _html(
        f"<p>articles: {len(titles)}</p><p>token in links: {token}</p>"
        + "".join(f"<li>{title}</li>" for title in titles)
    )


def search_page(storage: Storage, request: Request) -> Response:
    query = request.query.get("q", "")
    return _html(f"<p>searched: {len(query)} characters</p>")


def article_page(storage: Storage, request: Request) -> Response:
    number = int(request.path.rsplit("/", 1)[1])
    if number == 666:
        raise RuntimeError("a handler's bug")
    item = storage.news_get(number)
    if item is None:
        return Response(404, "text/plain; charset=utf-8", b"404 no such article\n")
    return _html(f"<h1>{item.title}</h1>")


def feeds_page(storage: Storage, request: Request) -> Response:
    return _html(f"<p>feeds: {len(storage.feed_health())}</p>")


def failed_page(storage: Storage, request: Request) -> Response:
    return _html("<p>failed</p>")


def status_page(storage: Storage, request: Request) -> Response:
    return _html(f"<p>articles: {storage.counts().get('news', 0)}</p>")


def stylesheet(storage: Storage, request: Request) -> Response:
    return conditional(request, etag_of("css"), None, "text/css", lambda: b"body{}\n")


def feed_atom(storage: Storage, request: Request, window: int = 50, **_: object) -> Response:
    link = request.link(request.path)
    body = f'<feed xmlns="http://www.w3.org/2005/Atom"><link rel="self" href="{link}"/></feed>'
    return Response(200, "application/atom+xml", body.encode())


def feed_json(storage: Storage, request: Request, window: int = 50, **_: object) -> Response:
    return Response(
        200, "application/feed+json", b'{"version": "https://jsonfeed.org/version/1.1"}'
    )


def opml(storage: Storage, request: Request, **_: object) -> Response:
    body = f'<opml><body><outline xmlUrl="{request.link("/feeds/all.atom")}"/></body></opml>'
    return Response(200, "text/x-opml", body.encode())


class Pages:
    """serve-pages' shape: the page handlers as methods of one object made from the
    config and the freshness window (here: this file's functions, which keep none)."""

    def __init__(self, config: object, recent: object = None) -> None:
        self.news_page = news_page
        self.search_page = search_page
        self.article_page = article_page
        self.feeds_page = feeds_page
        self.failed_page = failed_page
        self.status_page = status_page
        self.stylesheet = stylesheet


def _install() -> None:
    here = sys.modules[__name__]
    pages = types.ModuleType("feedsync.serve.pages")
    pages.Pages = Pages  # type: ignore[attr-defined]
    syndication = types.ModuleType("feedsync.serve.syndication")
    for name in ("feed_atom", "feed_json", "opml"):
        setattr(syndication, name, getattr(here, name))
    sys.modules["feedsync.serve.pages"] = pages
    sys.modules["feedsync.serve.syndication"] = syndication
    import feedsync.serve as package

    package.pages = pages  # type: ignore[attr-defined]
    package.syndication = syndication  # type: ignore[attr-defined]


if __name__ == "__main__":
    _install()
    from feedsync.cli import entry

    entry()
