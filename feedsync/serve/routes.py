"""URL -> handler: the table of feedsync/serve/web.py's URLs, and nothing else answers.

The handler modules are imported here, at the top: a missing one (a broken install, a
half-merged branch) is an ImportError when the server starts, naming the module, never
a 404 or a 500 found later by a reader. The server itself takes any router of this shape
(:data:`Router`), so its own tests run with handlers of their own.

A handler gets the whole path and reads its parameters from it (``/article/12``,
``/feeds/3.atom``): the patterns here only choose which one answers.
"""

from __future__ import annotations

import re

from feedsync.serve import pages, syndication
from feedsync.serve.server import Route
from feedsync.serve.web import Handler

#: (pattern of the whole path, handler, page?), in web.py's order
TABLE: tuple[tuple[re.Pattern[str], Handler, bool], ...] = tuple(
    (re.compile(pattern), handler, page)
    for pattern, handler, page in (
        (r"/", pages.news_page, True),
        (r"/search", pages.search_page, True),
        (r"/article/\d{1,18}", pages.article_page, True),
        (r"/feeds", pages.feeds_page, True),
        (r"/failed", pages.failed_page, True),
        (r"/status", pages.status_page, True),
        (r"/style\.css", pages.stylesheet, False),
        (r"/feeds/(?:all|\d{1,18}|category/[^/]+(?:/[^/]+)*)\.atom", syndication.feed_atom, False),
        (r"/feeds/(?:all|\d{1,18}|category/[^/]+(?:/[^/]+)*)\.json", syndication.feed_json, False),
        (r"/feeds\.opml", syndication.opml, False),
    )
)


def route(path: str) -> Route | None:
    """The route of a decoded path; None: no such page (404)."""
    for pattern, handler, page in TABLE:
        if pattern.fullmatch(path):
            return Route(handler, page)
    return None
