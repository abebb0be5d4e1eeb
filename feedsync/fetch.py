"""HTTP: conditional GETs for feeds, page fetches for articles. Network only, no storage.

Every request streams its body and stops at a size cap (counted after decompression),
runs under a total deadline as well as httpx's connect/read timeouts, and follows at most
five redirects. Failures come back as :class:`FetchError` with a one-line reason fit for
``feeds.last_error``. :class:`HostLimiter` bounds concurrent requests per host, for feed
polls and article fetches alike, so 200 new articles from one site never hammer it.
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

import httpx

from feedsync import __version__

USER_AGENT = f"feedsync/{__version__} (+https://github.com/feedsync/feedsync)"
MAX_REDIRECTS = 5
FEED_ACCEPT = (
    "application/atom+xml, application/rss+xml, application/rdf+xml, application/xml;q=0.9, "
    "text/xml;q=0.9, */*;q=0.5"
)
PAGE_ACCEPT = "text/html, application/xhtml+xml;q=0.9, */*;q=0.5"


class FetchError(Exception):
    """A request that did not give a usable body; ``str()`` is the one-line reason.

    ``permanent`` means asking again will not help (410 Gone, not an HTML page).
    """

    def __init__(
        self,
        reason: str,
        *,
        permanent: bool = False,
        status: int | None = None,
        retry_after: timedelta | None = None,
    ):
        super().__init__(reason)
        self.permanent = permanent
        self.status = status
        self.retry_after = retry_after  # the server's Retry-After, when it gave one


@dataclass(frozen=True)
class Response:
    url: str  # after redirects
    status: int  # 200 or 304
    body: bytes
    content_type: str | None
    etag: str | None
    last_modified: str | None
    max_age: timedelta | None = None  # Cache-Control max-age: "fresh for this long"

    @property
    def not_modified(self) -> bool:
        return self.status == 304


def make_client(timeout: float, concurrency: int) -> httpx.AsyncClient:
    """One client per pass: connection reuse across feeds and pages of the same host."""
    return httpx.AsyncClient(
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)),
        headers={"User-Agent": USER_AGENT},
        limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
    )


class HostLimiter:
    """At most ``per_host`` requests in flight to one host, ``total`` overall."""

    def __init__(self, total: int, per_host: int):
        self._total = asyncio.Semaphore(total)
        self._per_host: defaultdict[str, asyncio.Semaphore] = defaultdict(
            lambda: asyncio.Semaphore(per_host)
        )

    @asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[None]:
        async with self._total, self._per_host[host]:
            yield


_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-)?max-age\s*=\s*\"?(\d+)", re.IGNORECASE)


def max_age(cache_control: str | None) -> timedelta | None:
    """Cache-Control max-age (or s-maxage), as a duration; None when absent."""
    if not cache_control:
        return None
    found = [int(n) for n in _MAX_AGE.findall(cache_control)]
    return timedelta(seconds=max(found)) if found else None


def retry_after(value: str | None, now: datetime) -> timedelta | None:
    """Retry-After in either form: delay-seconds or an HTTP date. None when unusable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return timedelta(seconds=int(value))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(when - now, timedelta(0))


def _describe(exc: Exception, timeout: float) -> str:
    if isinstance(exc, httpx.TooManyRedirects):
        return f"more than {MAX_REDIRECTS} redirects"
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return f"timed out after {timeout:g}s"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect: {exc or type(exc).__name__}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection broken: {exc or type(exc).__name__}"
    if isinstance(exc, httpx.DecodingError):
        return f"cannot decode the response: {exc}"
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


async def get(
    client: httpx.AsyncClient,
    url: str,
    *,
    max_bytes: int,
    deadline: float,
    accept: str,
    etag: str | None = None,
    last_modified: str | None = None,
) -> Response:
    """GET ``url`` within ``deadline`` seconds in all; 200 and 304 come back as a
    :class:`Response`, the rest as FetchError."""
    headers = {"Accept": accept}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    try:
        async with asyncio.timeout(deadline):
            return await _get(client, url, headers, max_bytes)
    except FetchError:
        raise
    except (httpx.HTTPError, TimeoutError, OSError) as exc:
        raise FetchError(_describe(exc, deadline)) from None


async def _get(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], max_bytes: int
) -> Response:
    async with client.stream("GET", url, headers=headers) as response:
        status = response.status_code
        if status == 304:
            return Response(
                url=str(response.url),
                status=304,
                body=b"",
                content_type=None,
                etag=response.headers.get("etag"),
                last_modified=response.headers.get("last-modified"),
                max_age=max_age(response.headers.get("cache-control")),
            )
        if status != 200:
            reason = response.reason_phrase or ""
            raise FetchError(
                f"HTTP {status} {reason}".strip(),
                permanent=status == 410,
                status=status,
                retry_after=retry_after(response.headers.get("retry-after"), datetime.now(UTC)),
            )
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise FetchError(f"body larger than {max_bytes} bytes")
            chunks.append(chunk)
        return Response(
            url=str(response.url),
            status=200,
            body=b"".join(chunks),
            content_type=response.headers.get("content-type"),
            etag=response.headers.get("etag"),
            last_modified=response.headers.get("last-modified"),
            max_age=max_age(response.headers.get("cache-control")),
        )
