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
import threading
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


def key_etag(key: str, request: Request, *settings: object) -> str:
    """A strong ETag known before any article is read: the storage's content_key (it
    changes whenever articles or a feed's names change, ``Reading.content_key``), what
    the request asked (its path and query, and the base and token the answer's links
    carry) and ``settings`` (the code's version, ``[serve] window``). An answer made of
    nothing else is the same whenever this tag is: a client that has it gets a 304
    without a read (:func:`keyed`)."""
    query = sorted(request.query.items())
    return etag_of("key", key, request.path, query, request.base, request.token, *settings)


def fresh(request: Request, etag: str, last_modified: str | None) -> bool:
    """Whether the client already has this version: If-None-Match names the tag (or
    ``*``), or, only when it sends no If-None-Match (RFC 9110 13.2.2), If-Modified-Since
    is ``last_modified``."""
    wanted = request.headers.get("if-none-match")
    if wanted is not None:
        tags = {t.strip().removeprefix("W/") for t in wanted.split(",")}
        return etag in tags or "*" in tags
    return bool(last_modified) and request.headers.get("if-modified-since") == last_modified


def _validators(etag: str, last_modified: str | None, max_age: int) -> tuple[tuple[str, str], ...]:
    headers = [("ETag", etag), ("Cache-Control", f"private, max-age={max_age}")]
    if last_modified:
        headers.append(("Last-Modified", last_modified))
    return tuple(headers)


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
    headers = _validators(etag, last_modified, max_age)
    if fresh(request, etag, last_modified):
        return Response(304, content_type, b"", headers)
    return Response(200, content_type, render(), headers)


class Body(NamedTuple):
    """An answer :func:`keyed` tags: its bytes and, for a feed document, its
    Last-Modified (an HTTP date)."""

    body: bytes
    last_modified: str | None = None


class Dates:
    """The Last-Modified of the answers this server made, by their :func:`key_etag`
    (the same tag, the same answer, so the same date), a few hundred at most: a client
    that sends If-Modified-Since alone gets its 304 without a read too, from the second
    time on (the first, after a start, reads as before)."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._dates: dict[str, str] = {}  # in insertion order: the oldest goes first
        self._lock = threading.Lock()

    def get(self, etag: str) -> str | None:
        with self._lock:
            return self._dates.get(etag)

    def put(self, etag: str, date: str) -> None:
        with self._lock:
            self._dates.pop(etag, None)
            self._dates[etag] = date
            while len(self._dates) > self._size:
                del self._dates[next(iter(self._dates))]


def keyed(
    request: Request,
    etag: str,
    content_type: str,
    answer: Callable[[], Body | Response],
    *,
    dates: Dates | None = None,
    max_age: int = 60,
) -> Response:
    """Conditional GET decided before the answer is read: ``etag`` is a
    :func:`key_etag`, so a client that has it (or, with ``dates``, the date it was
    last made at) gets a 304 at the cost of the key alone; a repeat poll costs no read
    of articles. Else ``answer()`` reads and renders: a :class:`Body` is the 200 under
    that tag; a Response (an error, a page tagged by its own content) goes as it is."""
    known = dates.get(etag) if dates is not None else None
    if fresh(request, etag, known):
        return Response(304, content_type, b"", _validators(etag, known, max_age))
    made = answer()
    if isinstance(made, Response):
        return made
    if dates is not None and made.last_modified:
        dates.put(etag, made.last_modified)
    headers = _validators(etag, made.last_modified, max_age)
    if fresh(request, etag, made.last_modified):  # If-Modified-Since, its date not known
        return Response(304, content_type, b"", headers)
    return Response(200, content_type, made.body, headers)


#: A handler: it reads through the storage the server opened (its read methods only:
#: Reading, Feeds' listings, Upkeep's status) and answers.
Handler = Callable[["Storage", Request], Response]
