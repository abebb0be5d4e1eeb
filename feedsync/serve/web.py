"""The request and response every handler of ``feedsync serve`` speaks, and the
conditional GET they share. Pure: no socket, no storage.

The server (feedsync/serve/server.py) turns the bytes it received into a :class:`Request`
only after the access check and the request's own checks passed, so a handler sees a
path already decoded and free of control characters and ``..``; what it returns is a
:class:`Response`, which the server writes with the headers every answer carries (the
Content-Security-Policy among them).

URLs (feedsync/serve/routes.py maps them)::

    /                      the news, newest first        ?before=<article id>: the next page
    /search?q=...          search (feedsync search's query language)   &page=N
    /article/<id>          one article's text
    /feeds                 the feeds, their health and last error
    /failed                the articles that failed, with their reasons
    /status                RAM disk and card against their budgets, last save, queue
    /style.css             the one stylesheet
    /feeds/all.atom        every feed's articles, full text (also .json: JSON Feed 1.1)
    /feeds/<id>.atom       one feed's                         (also .json)
    /feeds/category/<name>.atom  one category's (folder)      (also .json)
    /feeds.opml            an OPML subscribing a reader app to all of the above

Every URL takes ``?token=...`` when the server asks for one (feedsync/serve/access.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from feedsync.storage import Storage


class Request(NamedTuple):
    """A request that passed the server's checks."""

    method: str  # "GET" or "HEAD"
    path: str  # percent-decoded, no query; never holds control characters or ".."
    query: Mapping[str, str]  # the first value of each parameter, decoded
    headers: Mapping[str, str]  # names in lower case
    base: str  # scheme://host[:port] as the client reached us, for absolute links
    token: str | None  # the token links for feed readers must carry (None: none asked)

    def link(self, path: str, **query: str) -> str:
        """An absolute URL to ``path`` on this server, with ``query`` and, when the
        server asks for one, the token (a feed reader cannot log in: its URLs carry it)."""
        from urllib.parse import quote, urlencode

        params = dict(query)
        if self.token is not None:
            params["token"] = self.token
        tail = f"?{urlencode(params)}" if params else ""
        return f"{self.base}{quote(path)}{tail}"


class Response(NamedTuple):
    """What a handler answers. ``headers``: beyond Content-Type and Content-Length,
    which the server sets from ``content_type`` and ``body``."""

    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


def text(status: int, message: str) -> Response:
    """A one-line plain-text answer (an error, a refusal)."""
    return Response(status, "text/plain; charset=utf-8", (message.rstrip("\n") + "\n").encode())


def etag_of(*parts: object) -> str:
    """A strong ETag from what the answer was made of (the articles' ids and times, the
    page's parameters): the same parts, the same tag."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=12).hexdigest()
    return f'"{digest}"'


def conditional(
    request: Request,
    etag: str,
    last_modified: str | None,
    content_type: str,
    render: Callable[[], bytes],
    *,
    max_age: int = 60,
) -> Response:
    """Answer 304 when the client already has this version (If-None-Match wins over
    If-Modified-Since, RFC 9110 13.2.2), else render the body. ``last_modified``: an
    HTTP date (``email.utils.format_datetime(..., usegmt=True)``) or None."""
    headers: list[tuple[str, str]] = [
        ("ETag", etag),
        ("Cache-Control", f"private, max-age={max_age}"),
    ]
    if last_modified:
        headers.append(("Last-Modified", last_modified))
    wanted = request.headers.get("if-none-match")
    if wanted is not None:
        tags = {t.strip().removeprefix("W/") for t in wanted.split(",")}
        if etag in tags or "*" in tags:
            return Response(304, content_type, b"", tuple(headers))
    elif last_modified and request.headers.get("if-modified-since") == last_modified:
        return Response(304, content_type, b"", tuple(headers))
    return Response(200, content_type, render(), tuple(headers))


#: A handler: it reads through the storage the server opened (its read methods only:
#: Reading, Feeds' listings, Upkeep's status) and answers.
Handler = Callable[["Storage", Request], Response]
