"""Connections kept open between the requests of a pass, each reused only where the
request's guard allows the address it leads to.

A pass polls many feeds of one host one after the other, and then fetches their pages:
one connection should carry them all (on a Pi with HTTPS, a new connection per request
is a TLS handshake per request). What this pool promises:

- **The guard on every connection, new or reused.** A new connection is made by
  :func:`feedsync.connect.open_stream` to an address the request's guard allowed; an idle
  one is handed to a request only when the guard allows the address it was made to
  (``Stream.peer``): a feed on the internet redirected to a LAN host never rides a
  connection that a LAN feed of that host left open.
- **No stale connection.** An idle one is reused only within ``keepalive_expiry`` of its
  last answer and only when the socket itself says nothing arrived
  (``Stream.reusable``); one that ends before the first byte of its answer anyway (the
  server closed it as the request went) is retried once by the transport, on a new
  connection (:meth:`Pool.connection` with ``fresh``).
- **No leftover bytes.** A connection with bytes left after a complete answer is closed
  (feedsync/http11.py says why).
- **Bounded**: at most ``max_connections`` requests at once (the others wait their turn,
  up to the request's ``pool`` timeout) and as many connections open, idle ones
  included: an idle one is closed, oldest first, to make room for a new one.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from feedsync import connect
from feedsync.guard import Guard
from feedsync.http11 import Connection

Origin = tuple[bytes, bytes, int]  # scheme, host, port


class Pool:
    def __init__(
        self,
        *,
        max_connections: int | None,
        max_keepalive: int | None,
        keepalive_expiry: float | None,
    ):
        # feedsync always gives its concurrency; httpx's None (no limit) is taken as 100
        self.max_connections = max_connections or 100
        self._max_keepalive = self.max_connections if max_keepalive is None else max_keepalive
        self.keepalive_expiry = keepalive_expiry
        self._turns = asyncio.Semaphore(self.max_connections)
        self._busy = 0  # connections carrying a request (or being made for one)
        self._idle: list[Connection] = []  # oldest first
        self._closed = False

    async def take_turn(self, seconds: float | None) -> None:
        """One of the ``max_connections`` turns; :meth:`give_back` ends it."""
        if self._closed:
            raise RuntimeError("the connection pool is closed")
        if not self._turns.locked():
            await self._turns.acquire()  # free: returns at once
        else:
            try:
                async with asyncio.timeout(seconds):
                    await self._turns.acquire()
            except TimeoutError:
                raise httpx.PoolTimeout("timed out waiting for a free connection") from None
        self._busy += 1

    async def connection(
        self,
        origin: Origin,
        guard: Guard,
        timeouts: dict[str, float | None],
        *,
        fresh: bool = False,
    ) -> Connection:
        """An idle connection to ``origin`` that ``guard`` allows, else a new one."""
        host = origin[1].decode("ascii")
        if not fresh:
            found = self._reuse(origin, host, guard)
            if found is not None:
                return found
        while self._idle and len(self._idle) + self._busy > self.max_connections:
            self._idle.pop(0).close()  # room for the new one: the oldest idle goes
        seconds = timeouts.get("connect")
        stream = await connect.open_stream(host, origin[2], guard, seconds)
        if origin[0] == b"https":
            try:
                stream = await stream.start_tls(host, seconds)
            except BaseException:
                stream.close()
                raise
        return Connection(stream, origin)

    def _reuse(self, origin: Origin, host: str, guard: Guard) -> Connection | None:
        now = time.monotonic()
        for index in range(len(self._idle) - 1, -1, -1):  # the most recent first
            connection = self._idle[index]
            if connection.origin != origin:
                continue
            if now > connection.expires or not connection.stream.reusable():
                del self._idle[index]
                connection.close()
                continue
            if not guard.allows(host, connection.stream.peer):
                continue  # another request may use it; this one makes its own
            del self._idle[index]
            return connection
        return None

    def give_back(self, connection: Connection | None, reusable: bool) -> None:
        """The request is over: its turn ends; its connection is kept if it can carry
        another, closed otherwise. Nothing here suspends, so this finishes even in a
        task being cancelled."""
        self._busy -= 1
        self._turns.release()
        if connection is None:
            return
        if reusable and not self._closed and self._max_keepalive > 0:
            self._idle.append(connection)
            while len(self._idle) > self._max_keepalive:
                self._idle.pop(0).close()
        else:
            connection.close()

    def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
