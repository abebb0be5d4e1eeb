"""The request and response every handler of ``feedsync serve`` speaks, and the
conditional GET they share (by the storage's content_key, and within the freshness
window without it: :func:`keyed`, :class:`Recent`). Pure: no socket, no storage.

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
import math
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

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


def _validators(
    etag: str, last_modified: str | None, cache_control: str
) -> tuple[tuple[str, str], ...]:
    headers = [("ETag", etag), ("Cache-Control", cache_control)]
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
    headers = _validators(etag, last_modified, f"private, max-age={max_age}")
    if fresh(request, etag, last_modified):
        return Response(304, content_type, b"", headers)
    return Response(200, content_type, render(), headers)


class Body(NamedTuple):
    """An answer :func:`keyed` tags: its bytes and, for a feed document, its
    Last-Modified (an HTTP date)."""

    body: bytes
    last_modified: str | None = None


K = TypeVar("K")
V = TypeVar("V")


class Bounded(Generic[K, V]):
    """What the server remembers across requests, ``size`` entries at most (the one put
    longest ago dropped first), under a lock: connection threads share it. The memory
    of :class:`Dates` and :class:`Recent`."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[K, V] = {}  # in insertion order: the oldest goes first
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = value
            while len(self._entries) > self._size:
                del self._entries[next(iter(self._entries))]

    def forget(self, key: K) -> None:
        with self._lock:
            self._entries.pop(key, None)


class Dates:
    """The Last-Modified of the answers this server made, by their :func:`key_etag`
    (the same tag, the same answer, so the same date), a few hundred at most: a client
    that sends If-Modified-Since alone gets its 304 without a read too, from the second
    time on (the first, after a start, reads as before)."""

    def __init__(self, size: int = 512) -> None:
        self._dates: Bounded[str, str] = Bounded(size)

    def get(self, etag: str) -> str | None:
        return self._dates.get(etag)

    def put(self, etag: str, date: str) -> None:
        self._dates.put(etag, date)


class Remembered(NamedTuple):
    """What :class:`Recent` holds of one URL's last keyed answer."""

    etag: str
    last_modified: str | None
    made_at: float  # the clock's reading just before the key was read for it


class Recent:
    """The freshness window (``[serve] fresh``), as HTTP caches and micro-caching
    servers keep one: per URL (its path and query, and the base and token its links
    carry: what :func:`key_etag` holds of the request), the tag its last keyed answer
    carried and when that answer was made (or confirmed by the key). For ``fresh``
    after, a request with that tag is a 304 without any read of the storage, not even
    the key (:func:`keyed`); after it, the key decides as before. So a reader polling
    every second while the daemon saves articles (each save a new key) costs one read
    a URL a window, not one a poll; what it shows may be up to ``fresh`` old, which
    Cache-Control says (``max-age``: what is left of the window).

    A few hundred URLs at most (the oldest dropped), like :class:`Dates`; ``clock``:
    seconds, monotonic (the wall clock may jump when the Pi's clock is set), injected
    by the tests. ``fresh`` 0: no window, and Cache-Control says no-cache."""

    def __init__(
        self,
        fresh: timedelta,
        size: int = 512,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.seconds = max(0.0, fresh.total_seconds())
        self.clock = clock
        self._urls: Bounded[tuple[object, ...], Remembered] = Bounded(size)

    @staticmethod
    def _url(request: Request) -> tuple[object, ...]:
        return (request.path, tuple(sorted(request.query.items())), request.base, request.token)

    def get(self, request: Request) -> tuple[Remembered, float] | None:
        """The URL's last answer and the seconds left of its window, while it lasts."""
        if not self.seconds:
            return None
        known = self._urls.get(self._url(request))
        if known is None:
            return None
        left = known.made_at + self.seconds - self.clock()
        return (known, left) if left > 0 else None

    def put(self, request: Request, etag: str, last_modified: str | None, made_at: float) -> None:
        if not self.seconds:
            return
        self._urls.put(self._url(request), Remembered(etag, last_modified, made_at))

    def forget(self, request: Request) -> None:
        """The URL answered something else (a 404: the article is gone): its last tag
        gets no 304 from the window."""
        self._urls.forget(self._url(request))

    def cache_control(self, left: float | None = None) -> str:
        """For an answer made now (``left`` None) or from the window (``left``: its
        seconds left, rounded down): a client's cache keeps it no longer than the
        server would answer 304 without asking the storage."""
        if not self.seconds:
            return "private, no-cache"
        return f"private, max-age={math.floor(self.seconds if left is None else left)}"


#: no window: every request with a tag asks the key (a handler called on its own)
NO_WINDOW = Recent(timedelta(0))


def keyed(
    request: Request,
    tag: Callable[[], str],
    content_type: str,
    answer: Callable[[], Body | Response],
    *,
    dates: Dates | None = None,
    recent: Recent = NO_WINDOW,
) -> Response:
    """Conditional GET decided before the answer is read. Within ``recent``'s window
    of the URL's last answer, a client that has its tag is a 304 without any read.
    Else ``tag()`` reads the key (a :func:`key_etag`), so a client that has it (or,
    with ``dates``, the date it was last made at) gets a 304 at the cost of the key
    alone; a repeat poll costs no read of articles. Else ``answer()`` reads and
    renders: a :class:`Body` is the 200 under that tag; a Response (an error, a page
    tagged by its own content) goes as it is."""
    remembered = recent.get(request)
    if remembered is not None:
        known, left = remembered
        if fresh(request, known.etag, known.last_modified):
            validators = _validators(known.etag, known.last_modified, recent.cache_control(left))
            return Response(304, content_type, b"", validators)
    made_at = recent.clock()  # before the key: the answer is at least as new as this
    etag = tag()
    cache_control = recent.cache_control()
    last_modified = dates.get(etag) if dates is not None else None
    if fresh(request, etag, last_modified):
        recent.put(request, etag, last_modified, made_at)
        return Response(304, content_type, b"", _validators(etag, last_modified, cache_control))
    made = answer()
    if isinstance(made, Response):
        recent.forget(request)
        return made
    if dates is not None and made.last_modified:
        dates.put(etag, made.last_modified)
    recent.put(request, etag, made.last_modified, made_at)
    headers = _validators(etag, made.last_modified, cache_control)
    if fresh(request, etag, made.last_modified):  # If-Modified-Since, its date not known
        return Response(304, content_type, b"", headers)
    return Response(200, content_type, made.body, headers)


#: A handler: it reads through the storage the server opened (its read methods only:
#: Reading, Feeds' listings, Upkeep's status) and answers.
Handler = Callable[["Storage", Request], Response]
