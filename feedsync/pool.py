"""Connections kept open between the requests of a pass: the pool under feedsync's httpx
clients.

A pass polls many feeds of one host one after the other, and then fetches their pages:
one connection should carry them all (on a Pi with HTTPS, a new connection per request is
a TLS handshake per request). httpcore's pool did that, and its bookkeeping cost ~25% of
the CPU of a pass in which every feed answered 304: an anyio lock, events and cancel
scopes around every request, and every connection it held asked for its state at every
request and at every close. This pool does what feedsync asks of one and no more:

- HTTP/1.1 only (what feedsync offers in its TLS handshakes, see ``addresses.ssl_context``);
- at most ``max_connections`` requests at once (the others wait their turn, up to the
  request's ``pool`` timeout), and at most ``max_connections`` connections open, idle
  ones included: an idle one is closed, oldest first, to make room for a new one;
- an idle connection is kept for the next request to its origin (scheme, host, port), at
  most ``max_keepalive`` of them, and reused only within ``keepalive_expiry`` seconds of
  its last answer; one the server has closed meanwhile is never reused (its end is
  already in the buffer of :class:`feedsync.addresses._Stream`, so that is a look, not a
  system call). An idle connection is closed when a request finds it expired, when room
  is needed, or when the client closes at the end of its pass; the server closing it
  closes it too (asyncio's transport closes on the end). Nothing walks the idle ones at
  every request, as httpcore did.

The connections themselves are httpcore's (:class:`httpcore.AsyncHTTP11Connection`: h11,
the protocol), made by :class:`feedsync.addresses.GuardedBackend`; every error a request
can meet is httpcore's own, which httpx maps to its exceptions as before. Each one's state
lock is an asyncio lock (:func:`_connection`): this pool gives a connection to one request
at a time, so nothing ever waits on it, and httpcore's own, an anyio lock, loaded anyio's
event-loop backend at the first request of a process (~20 ms of CPU, a tenth of a no-op
``feedsync run``) and looked the backend up at every request.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

import httpcore

Connection = httpcore.AsyncHTTP11Connection


def _connection(
    origin: httpcore.Origin, stream: httpcore.AsyncNetworkStream, keepalive_expiry: float | None
) -> Connection:
    """httpcore's HTTP/1.1 connection on ``stream``, its state lock an asyncio one (see
    the module's docstring; the lock guards only the connection's state, which one
    request at a time changes)."""
    connection = Connection(origin=origin, stream=stream, keepalive_expiry=keepalive_expiry)
    connection._state_lock = asyncio.Lock()  # type: ignore[assignment]
    return connection


class ConnectionPool:
    """What httpx's transport sends its requests to (``handle_async_request``)."""

    def __init__(
        self,
        *,
        backend: httpcore.AsyncNetworkBackend,
        ssl_context: ssl.SSLContext,
        max_connections: int | None,
        max_keepalive: int | None,
        keepalive_expiry: float | None,
    ):
        self._backend = backend
        self._ssl_context = ssl_context
        # feedsync always gives its concurrency; httpx's None (no limit) is taken as 100
        self._max_connections = max_connections or 100
        self._max_keepalive = self._max_connections if max_keepalive is None else max_keepalive
        self._keepalive_expiry = keepalive_expiry
        self._turns = asyncio.Semaphore(self._max_connections)
        self._busy = 0  # connections carrying a request (or being made for one)
        self._idle: list[Connection] = []  # oldest first
        self._closed = False

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        scheme = request.url.scheme
        if scheme not in (b"http", b"https"):
            shown = scheme.decode("ascii", "replace")
            if not shown:
                raise httpcore.UnsupportedProtocol(
                    "Request URL is missing an 'http://' or 'https://' protocol."
                )
            raise httpcore.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{shown}://'."
            )
        if self._closed:
            raise RuntimeError("the connection pool is closed")
        await self._take_turn(request)
        self._busy += 1
        try:
            connection = await self._connection_for(request)
        except BaseException:
            self._busy -= 1
            self._turns.release()
            raise
        try:
            response = await connection.handle_async_request(request)
        except BaseException:
            # httpcore has ended the exchange: the connection is idle again or closed
            await self._put_back(connection)
            raise
        return httpcore.Response(
            status=response.status,
            headers=response.headers,
            content=_Body(response.stream, self, connection),
            extensions=response.extensions,
        )

    async def _take_turn(self, request: httpcore.Request) -> None:
        if not self._turns.locked():
            await self._turns.acquire()  # free: returns at once
            return
        timeout = request.extensions.get("timeout", {}).get("pool")
        try:
            async with asyncio.timeout(timeout):
                await self._turns.acquire()
        except TimeoutError:
            raise httpcore.PoolTimeout("timed out waiting for a free connection") from None

    async def _connection_for(self, request: httpcore.Request) -> Connection:
        """An idle connection to the request's origin, or a new one."""
        origin = request.url.origin
        found: Connection | None = None
        expired: list[Connection] = []
        for index in range(len(self._idle) - 1, -1, -1):  # the most recent first
            connection = self._idle[index]
            if not connection.can_handle_request(origin):
                continue
            del self._idle[index]
            if connection.has_expired():  # its time is up, or the server closed it
                expired.append(connection)
                continue
            found = connection
            break
        for connection in expired:  # after the walk: no await while the list is walked
            await connection.aclose()
        if found is not None:
            return found
        while self._idle and len(self._idle) + self._busy > self._max_connections:
            await self._idle.pop(0).aclose()  # room for the new one: the oldest idle goes
        timeout = request.extensions.get("timeout", {}).get("connect")
        host = origin.host.decode("ascii")
        stream = await self._backend.connect_tcp(host, origin.port, timeout=timeout)
        if origin.scheme == b"https":
            server_name = request.extensions.get("sni_hostname") or host
            stream = await stream.start_tls(
                self._ssl_context, server_hostname=server_name, timeout=timeout
            )
        return _connection(origin, stream, self._keepalive_expiry)

    async def _put_back(self, connection: Connection) -> None:
        """The request is over: its turn ends at once (before any await, so that a
        cancelled request cannot keep it); its connection is kept if it can carry
        another, closed otherwise. Closing one of addresses._Stream suspends nothing, so
        this finishes even in a task being cancelled."""
        self._busy -= 1
        self._turns.release()
        if connection.is_idle() and not self._closed and self._max_keepalive > 0:
            self._idle.append(connection)
            while len(self._idle) > self._max_keepalive:
                await self._idle.pop(0).aclose()
        elif not connection.is_closed():
            await connection.aclose()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.aclose()

    async def __aenter__(self) -> ConnectionPool:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.aclose()


class _Body:
    """A response's body as httpx reads it; closing it gives the connection back."""

    def __init__(self, stream: Any, pool: ConnectionPool, connection: Connection):
        self._stream = stream  # httpcore's: async-iterable, with aclose
        self._pool = pool
        self._connection = connection
        self._done = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        chunks: AsyncIterator[bytes] = self._stream.__aiter__()  # no layer of our own
        return chunks

    async def aclose(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            await self._stream.aclose()  # httpcore: idle again if the exchange is complete
        finally:
            await self._pool._put_back(self._connection)
