"""One HTTP/1.1 connection: h11 (the protocol, as a state machine) on a
:class:`feedsync.connect.Stream`.

h11's public API is all feedsync needs of HTTP/1.1, and it tells what a pool must know
and httpcore keeps to itself: whether bytes are left on the connection once an answer is
complete (``trailing_data``). A 304 that carries a body, a ``Content-Length`` shorter
than the body, or two answers in one write leave such bytes, which the next request on
the connection would otherwise take for its own answer: such a connection is closed,
never reused (:meth:`Connection.finish`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import h11
import httpx

from feedsync.connect import Stream

READ_SIZE = 64 * 1024


class Disconnected(httpx.RemoteProtocolError):
    """The connection ended before the first byte of an answer: on a reused connection,
    the server had closed it (its keep-alive time ran out) as the request went."""


class Connection:
    """Carries one request at a time; ``reused`` once it has carried one."""

    __slots__ = ("_h11", "expires", "origin", "reused", "stream")

    def __init__(self, stream: Stream, origin: tuple[bytes, bytes, int]):
        self.stream = stream
        self.origin = origin
        self._h11 = h11.Connection(h11.CLIENT)
        self.reused = False
        self.expires = 0.0  # monotonic time after which an idle connection is not reused

    async def send(self, request: httpx.Request, timeouts: dict[str, float | None]) -> h11.Response:
        """Send ``request`` and read its answer's head (1xx answers skipped)."""
        conn = self._h11
        write = timeouts.get("write")
        try:
            head = conn.send(
                h11.Request(
                    method=request.method,
                    target=request.url.raw_path,
                    headers=request.headers.raw,
                )
            )
            assert head is not None
            await self.stream.write(head, write)
            async for chunk in request.stream:  # type: ignore[union-attr]
                data = conn.send(h11.Data(data=chunk))
                if data:
                    await self.stream.write(data, write)
            end = conn.send(h11.EndOfMessage())
            if end:
                await self.stream.write(end, write)
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc)) from None
        except httpx.WriteError as exc:
            # the server may have answered and closed (a 4xx before the body): read it
            if conn.their_state is not h11.SEND_RESPONSE or not self.reused:
                raise
            raise Disconnected(f"connection broken: {exc}") from None
        while True:
            event = await self._next(timeouts.get("read"))
            if isinstance(event, h11.Response):
                return event
            if not isinstance(event, h11.InformationalResponse):
                raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__}")

    async def body(self, seconds: float | None) -> AsyncIterator[bytes]:
        """The answer's body, as it arrives."""
        while True:
            event = await self._next(seconds)
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return

    async def _next(self, seconds: float | None) -> h11.Event:
        conn = self._h11
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc)) from None
            if event is h11.NEED_DATA:
                try:
                    data = await self.stream.read(READ_SIZE, seconds)
                except httpx.ReadError:
                    if conn.their_state is h11.SEND_RESPONSE and self._nothing_read():
                        raise Disconnected("the server reset the connection") from None
                    raise
                if not data and conn.their_state is h11.SEND_RESPONSE and self._nothing_read():
                    raise Disconnected("Server disconnected without sending a response.")
                try:
                    conn.receive_data(data)
                except h11.RemoteProtocolError as exc:
                    raise httpx.RemoteProtocolError(str(exc)) from None
                continue
            assert event is not h11.PAUSED  # one request at a time: never paused here
            return event  # type: ignore[return-value]

    def _nothing_read(self) -> bool:
        return not self._h11.trailing_data[0]

    def finish(self, keepalive: float | None) -> bool:
        """The exchange is over: whether the connection may carry another request (both
        sides done, the server did not ask to close, and no byte is left over)."""
        conn = self._h11
        if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return False
        conn.start_next_cycle()
        leftover, closed = conn.trailing_data
        if leftover or closed:
            return False
        self.reused = True
        self.expires = time.monotonic() + (keepalive if keepalive is not None else 5.0)
        return True

    def close(self) -> None:
        self.stream.close()
