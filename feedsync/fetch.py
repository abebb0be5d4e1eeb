"""HTTP: conditional GETs for feeds, page fetches for articles. Network only, no storage.

Feeds and pages come from the hostile internet, so every request:

- streams its body and stops at a size cap counted AFTER decompression, decompressing
  itself with a bounded output (``zlib`` ``max_length``), so a gzip bomb stops at the cap
  without ever holding more than the cap in memory;
- runs under a total deadline besides httpx's connect/read timeouts (a server that
  trickles a byte a second is cut at the deadline);
- follows at most five redirects; the chain is reported, so a feed's permanent move can be
  recorded (see ``Response.moved_to``; ``decide.redirect`` rules on captive portals);
- names feedsync in its User-Agent and offers gzip and deflate only.

Links are attacker-controlled: every request carries a :class:`feedsync.guard.Guard`
(where it may connect, hop by hop), which feedsync's transport (feedsync/transport.py)
applies to every connection it makes or reuses, and in which it records the peer address
that served each hop (``Response.peer``: what the LAN rules are decided from).

Failures come back as :class:`FetchError` with a one-line reason fit for
``feeds.last_error``. When a request may go to its host (the cap, the spacing, a host's
block) is feedsync/politeness/'s concern, not this module's.
"""

from __future__ import annotations

import asyncio
import re
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from feedsync import __version__, timestamps
from feedsync.canonical import host_of
from feedsync.config import DEFAULT_USER_AGENT
from feedsync.connect import TrustStoreMissing
from feedsync.guard import EXTENSION, Guard, PrivateAddressRefused
from feedsync.transport import Transport

MAX_REDIRECTS = 5
ACCEPT_ENCODING = "gzip, deflate"  # what we decompress ourselves, with a bounded output
FEED_ACCEPT = (
    "application/atom+xml, application/rss+xml, application/rdf+xml, application/feed+json, "
    "application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, */*;q=0.5"
)
PAGE_ACCEPT = "text/html, application/xhtml+xml;q=0.9, */*;q=0.5"
PERMANENT = (301, 308)


class FetchError(Exception):
    """A request that did not give a usable body; ``str()`` is the one-line reason.

    ``permanent``: asking again will not help (410 Gone, a refused private address).
    ``retry_after``: the server's Retry-After. ``host_busy``: 429/503, the host asks us to
    slow down (not the fault of this feed or article). ``unreachable``: the host that
    could not be reached (its name did not resolve, it refused the connection): not the
    fault of this feed or article either, and no request to that host will fare better
    for a while (:class:`HostGate` settles the others of the pass with this reason).
    """

    def __init__(
        self,
        reason: str,
        *,
        permanent: bool = False,
        status: int | None = None,
        retry_after: timedelta | None = None,
        unreachable: str | None = None,
    ):
        super().__init__(reason)
        self.permanent = permanent
        self.status = status
        self.retry_after = retry_after
        self.unreachable = unreachable

    @property
    def host_busy(self) -> bool:
        return self.status in (429, 503)


@dataclass(frozen=True)
class Response:
    url: str  # after redirects
    status: int  # 200 or 304
    body: bytes
    content_type: str | None
    etag: str | None
    last_modified: str | None
    max_age: timedelta | None = None  # Cache-Control max-age: "fresh for this long"
    moved_to: str | None = None  # where the leading permanent redirects (301/308) lead
    moved_by_308: bool = False  # ... and every one of them was a 308
    peer: str | None = None  # the address that served the body (the last hop's)

    @property
    def not_modified(self) -> bool:
        return self.status == 304


def user_agent(template: str = DEFAULT_USER_AGENT) -> str:
    return template.replace("{version}", __version__)


def make_client(
    timeout: float, concurrency: int, *, agent: str = DEFAULT_USER_AGENT
) -> httpx.AsyncClient:
    """One client per pass: connection reuse across feeds and pages of a host. Where
    each request may connect is its own :class:`Guard`'s, not the client's.

    feedsync connects directly: ``HTTP(S)_PROXY``, ``ALL_PROXY`` and ``NO_PROXY`` are not
    used (``trust_env=False``; a proxy would hide the address the LAN rules are decided
    from), and neither is ``.netrc``."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    return httpx.AsyncClient(
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)),
        headers={"User-Agent": user_agent(agent), "Accept-Encoding": ACCEPT_ENCODING},
        transport=Transport(limits=limits),
        trust_env=False,
    )


async def warm_up() -> None:
    """What the first request of a process would otherwise do between its turn and its
    send: start the event loop's executor thread, on which names are resolved (tens of
    milliseconds on a busy machine). Done before any turn is taken, so that a request
    leaves when its turn says."""
    await asyncio.get_running_loop().run_in_executor(None, lambda: None)


# ---------------------------------------------------------------- hints


_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-)?max-age\s*=\s*\"?([0-9]+)", re.IGNORECASE)


def max_age(cache_control: str | None) -> timedelta | None:
    """Cache-Control max-age (or s-maxage), as a duration (capped: timestamps.hint);
    None when absent."""
    if not cache_control:
        return None
    found = [d for d in map(timestamps.hint, _MAX_AGE.findall(cache_control)) if d is not None]
    return max(found) if found else None


def retry_after(value: str | None, now: datetime) -> timedelta | None:
    """Retry-After in either form: delay-seconds or an HTTP date. None when unusable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():  # ASCII or not: timestamps.hint says what counts
        return timestamps.hint(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(max(when - now, timedelta(0)), timestamps.LONGEST_HINT)


# ---------------------------------------------------------------- the request


def _describe(exc: Exception, elapsed: float) -> str:
    """The one-line reason, with the time it really took where it timed out."""
    if isinstance(exc, httpx.TooManyRedirects):
        return f"more than {MAX_REDIRECTS} redirects"
    if isinstance(exc, TrustStoreMissing):
        return str(exc)
    if isinstance(exc, httpx.ConnectTimeout):
        return f"cannot connect: {exc}"
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return f"timed out after {round(elapsed, 1):g}s"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect: {exc or type(exc).__name__}"
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return f"connection broken: {exc or type(exc).__name__}"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return f"redirected to an unsupported address: {exc}"
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


class _Decoder:
    """Content-Encoding undone with a bounded output: never more than ``limit`` bytes."""

    def __init__(self, encoding: str | None, limit: int):
        coding = (encoding or "identity").strip().lower()
        self._limit = limit
        self.size = 0
        self._raw_fallback = False
        self._zlib: Any
        if coding in ("identity", ""):
            self._zlib = None
        elif coding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            self._zlib = zlib.decompressobj()  # zlib-wrapped; raw deflate: see _decode
            self._raw_fallback = True
        else:
            raise FetchError(f"unsupported Content-Encoding: {coding}")
        self._started = False

    def _count(self, data: bytes) -> bytes:
        self.size += len(data)
        if self.size > self._limit:
            raise FetchError(f"body larger than {self._limit} bytes (after decompression)")
        return data

    def feed(self, data: bytes) -> list[bytes]:
        if self._zlib is None:
            return [self._count(data)]
        out = []
        try:
            while data:
                piece = self._zlib.decompress(data, self._limit - self.size + 1)
                out.append(self._count(piece))
                data = self._zlib.unconsumed_tail
                self._started = True
        except zlib.error as exc:
            if not self._started and self._raw_fallback:
                # "deflate" sent as raw deflate (no zlib header): a common server bug
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                self._raw_fallback = False
                return self.feed(data)
            raise FetchError(f"cannot decompress the body: {exc}") from None
        return out

    def finish(self) -> list[bytes]:
        if self._zlib is None:
            return []
        return [self._count(self._zlib.flush())]


def _moved(response: httpx.Response) -> tuple[str | None, bool]:
    """Where the leading permanent redirects lead, and whether all were 308."""
    hops = response.history
    urls = [str(r.request.url) for r in hops] + [str(response.request.url)]
    count = 0
    while count < len(hops) and hops[count].status_code in PERMANENT:
        count += 1
    if count == 0:
        return None, False
    return urls[count], all(h.status_code == 308 for h in hops[:count])


async def get(
    client: httpx.AsyncClient,
    url: str,
    *,
    max_bytes: int,
    deadline: float,
    accept: str,
    etag: str | None = None,
    last_modified: str | None = None,
    guard: Guard,
) -> Response:
    """GET ``url`` within ``deadline`` seconds in all, where ``guard`` allows; 200 and
    304 come back as a :class:`Response`, the rest as FetchError."""
    headers = {"Accept": accept}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        async with asyncio.timeout(deadline):
            return await _get(client, url, headers, max_bytes, guard)
    except FetchError:
        raise
    except PrivateAddressRefused as exc:
        raise FetchError(str(exc), permanent=True) from None
    except TrustStoreMissing as exc:
        raise FetchError(str(exc)) from None
    except httpx.ConnectError as exc:
        reason = _describe(exc, loop.time() - started)
        raise FetchError(reason, unreachable=_failed_origin(exc)) from None
    except (httpx.HTTPError, TimeoutError, OSError) as exc:
        raise FetchError(_describe(exc, loop.time() - started)) from None
    except httpx.InvalidURL as exc:
        # the link itself, or a redirect's Location (``http://0177.0.0.1/``, a host name
        # IDNA refuses): it will not become valid by asking again
        raise FetchError(f"not a valid URL: {exc}".splitlines()[0], permanent=True) from None


def _failed_origin(exc: httpx.ConnectError) -> str | None:
    """Where a connection failed: the origin (:func:`origin_of`) of the hop that failed
    (a redirect may lead from a live host to a dead one)."""
    try:
        return origin_of(str(exc.request.url)) or None
    except RuntimeError:  # httpx sets the request on what it raises; just in case
        return None


def origin_of(url: str) -> str:
    """``host:port`` of a URL (the scheme's default port when none is given); '' when
    it has none. What "unreachable" is known of: a feed or a link to a dead port of a
    host (``https://news.example:1/``) must not settle the work of the host's live one."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return ""
    host = host_of(url)
    return f"{host}:{port}" if host else ""


async def _get(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], max_bytes: int, guard: Guard
) -> Response:
    extensions = {EXTENSION: guard}
    async with client.stream("GET", url, headers=headers, extensions=extensions) as response:
        status = response.status_code
        moved_to, by_308 = _moved(response)
        common = {
            "url": str(response.url),
            "etag": response.headers.get("etag"),
            "last_modified": response.headers.get("last-modified"),
            "max_age": max_age(response.headers.get("cache-control")),
            "moved_to": moved_to,
            "moved_by_308": by_308,
            "peer": guard.peer,
        }
        if status == 304:
            # Read to its end (a 304 has no body: h11 reads none, whatever the headers
            # say), or the pool closes the connection instead of keeping it for the next
            # feed of the host: a new connection for every feed of a steady-state pass.
            async for _ in response.aiter_raw():
                pass
            return Response(status=304, body=b"", content_type=None, **common)
        if status != 200:
            reason = response.reason_phrase or ""
            raise FetchError(
                f"HTTP {status} {reason}".strip(),
                permanent=status == 410,
                status=status,
                retry_after=retry_after(response.headers.get("retry-after"), datetime.now(UTC)),
            )
        length = response.headers.get("content-length", "")
        encoding = response.headers.get("content-encoding")
        if length.isascii() and length.isdigit() and not encoding and int(length) > max_bytes:
            raise FetchError(f"body larger than {max_bytes} bytes ({length} announced)")
        decoder = _Decoder(encoding, max_bytes)
        chunks: list[bytes] = []
        async for raw in response.aiter_raw():
            chunks.extend(decoder.feed(raw))
        chunks.extend(decoder.finish())
        return Response(
            status=200,
            body=b"".join(chunks),
            content_type=response.headers.get("content-type"),
            **common,
        )
