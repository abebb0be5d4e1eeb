"""feedsync's HTTP transport under httpx: httpx's public transport API
(``httpx.AsyncBaseTransport``), on feedsync's own pool (feedsync/pool.py), HTTP/1.1
connections (feedsync/http11.py, h11) and dialer (feedsync/connect.py).

httpx stays the client (redirects, cookies, URLs, timeouts, its exceptions); what happens
on the wire is feedsync's, through public APIs only: the address guard must hold on every
connection a request can use, and the pool must know things httpcore's keeps to itself
(the address a pooled connection leads to, the bytes left on it). A request's
:class:`feedsync.guard.Guard` rides in its extensions (:data:`feedsync.guard.EXTENSION`),
which httpx hands from each hop to the next redirect; a request without one gets the
strictest rule (no private address anywhere).

A GET whose reused connection ends before the first byte of the answer (the server
closed it as the request went: keep-alive times run out) is sent once more, on a new
connection: the request never reached the server's application.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType

import httpx

from feedsync.guard import EXTENSION, Guard
from feedsync.http11 import Connection, Disconnected
from feedsync.pool import Pool

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_PORTS = {b"http": 80, b"https": 443}


class Transport(httpx.AsyncBaseTransport):
    def __init__(self, *, limits: httpx.Limits):
        self._pool = Pool(
            max_connections=limits.max_connections,
            max_keepalive=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await self._handle(request)
        except httpx.RequestError as exc:
            exc.request = request
            raise

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme = url.raw_scheme
        if scheme not in DEFAULT_PORTS:
            if not scheme:
                raise httpx.UnsupportedProtocol(
                    "Request URL is missing an 'http://' or 'https://' protocol."
                )
            raise httpx.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{scheme.decode('ascii', 'replace')}://'."
            )
        guard = request.extensions.get(EXTENSION)
        if not isinstance(guard, Guard):
            guard = Guard()
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        origin = (scheme, url.raw_host, url.port or DEFAULT_PORTS[scheme])
        pool = self._pool
        await pool.take_turn(timeouts.get("pool"))
        connection: Connection | None = None
        try:
            for attempt in (0, 1):
                connection = await pool.connection(origin, guard, timeouts, fresh=attempt > 0)
                try:
                    head = await connection.send(request, timeouts)
                    break
                except Disconnected:
                    reused = connection.reused
                    connection.close()
                    connection = None
                    if attempt or not reused or request.method not in IDEMPOTENT:
                        raise
        except BaseException:
            pool.give_back(connection, False)
            raise
        assert connection is not None
        guard.served(origin[1].decode("ascii"), connection.stream.peer)
        return httpx.Response(
            head.status_code,
            headers=list(head.headers),
            stream=_Body(pool, connection, timeouts.get("read")),
            extensions={
                "http_version": b"HTTP/" + head.http_version,
                "reason_phrase": head.reason,
            },
        )

    async def aclose(self) -> None:
        self._pool.close()

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.aclose()


class _Body(httpx.AsyncByteStream):
    """An answer's body as httpx reads it; closing it gives the connection back, for
    reuse only when the body was read to its end and nothing is left over."""

    def __init__(self, pool: Pool, connection: Connection, timeout: float | None):
        self._pool = pool
        self._connection = connection
        self._timeout = timeout
        self._complete = False
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._connection.body(self._timeout):
            yield chunk
        self._complete = True

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        reusable = self._complete and self._connection.finish(self._pool.keepalive_expiry)
        self._pool.give_back(self._connection, reusable)
