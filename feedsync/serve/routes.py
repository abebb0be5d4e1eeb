"""URL -> handler: the table of feedsync/serve/web.py's URLs, and nothing else answers.

The handler modules are imported here, at the top: a missing one (a broken install, a
half-merged branch) is an ImportError when the server starts, naming the module, never
a 404 or a 500 found later by a reader. The server itself takes any router of this shape
(:data:`feedsync.serve.server.Router`), so its own tests run with handlers of their own.

A handler gets the whole path and reads its parameters from it (``/article/12``,
``/feeds/3.atom``): the patterns here only choose which one answers.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from feedsync.serve import pages, syndication, web
from feedsync.serve.server import Route, Router

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.serve.web import Handler

#: a feed document: all of them, one feed by its id, one category (a folder: "News/World")
_FEEDS = r"/feeds/(?:all|\d{1,18}|category/[^/]+(?:/[^/]+)*)"


def router(config: Config, *, clock: Callable[[], float] = time.monotonic) -> Router:
    """The route of a decoded path (None: no such page, a 404), for this config.
    ``clock``: the freshness window's (``[serve] fresh``, ``web.Recent``), seconds."""
    # one window for every keyed answer: the news pages, an article, a search, the
    # feed documents and the OPML (not /feeds, /failed, /status: tagged by content)
    recent = web.Recent(config.serve.fresh, clock=clock)
    page = pages.Pages(config, recent)
    window = config.serve.window
    dates = web.Dates()  # the Last-Modified the feed documents were sent with
    atom = functools.partial(syndication.feed_atom, window=window, dates=dates, recent=recent)
    json_feed = functools.partial(syndication.feed_json, window=window, dates=dates, recent=recent)
    opml = functools.partial(syndication.opml, recent=recent)
    # (pattern of the whole path, handler, page?), in web.py's order
    table: tuple[tuple[str, Handler, bool], ...] = (
        (r"/", page.news_page, True),
        (r"/search", page.search_page, True),
        (r"/article/\d{1,18}", page.article_page, True),
        (r"/feeds", page.feeds_page, True),
        (r"/failed", page.failed_page, True),
        (r"/status", page.status_page, True),
        (r"/style\.css", page.stylesheet, False),
        (_FEEDS + r"\.atom", atom, False),
        (_FEEDS + r"\.json", json_feed, False),
        (r"/feeds\.opml", opml, False),
    )
    compiled = [(re.compile(pattern), handler, is_page) for pattern, handler, is_page in table]

    def route(path: str) -> Route | None:
        for pattern, handler, is_page in compiled:
            if pattern.fullmatch(path):
                return Route(handler, is_page)
        return None

    return route
