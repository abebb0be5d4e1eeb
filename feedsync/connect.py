"""Where connections are made: names resolved, every address checked by the request's
:class:`feedsync.guard.Guard` before a SYN leaves, then raced as RFC 8305 (Happy
Eyeballs) says, and the socket kept on asyncio's own transport (:class:`Stream`).

Why each part is here:

- **The guard in the dialer** (as Miniflux's ``Dialer.Control``): the connection is made to
  the very address that was checked, so a name whose answers change between lookups
  (DNS rebinding) cannot slip a private address through; the address is kept on the
  stream (``Stream.peer``) so that a pooled connection's reuse is judged by where it
  really leads (feedsync/pool.py).
- **Happy Eyeballs**: a dual-stack host whose IPv6 path drops packets (common at home,
  with half-working IPv6) must not cost the whole connect timeout. The addresses are
  tried IPv6 first, families interleaved; the next one starts
  :data:`ATTEMPT_DELAY` after the previous one (at once when it fails) while the others
  keep trying; the first connection made wins and the connect budget is shared.
- **The stream** reads and writes with asyncio's transport and protocol: the cheapest way
  to move bytes in Python, and one that knows whether the peer has closed. Before a
  pooled connection is reused, :meth:`Stream.reusable` looks at what arrived and asks
  the socket itself (``poll``), since the event loop may not have read a FIN yet when
  the machine is busy.
- **TLS** settings are ``ssl.create_default_context()``'s (as httpx's), built at the first
  handshake of a process: loading the CA bundle costs ~25-50 ms of CPU on x86 (several
  times that on a Pi), which a pass of http feeds, or a cron run with nothing due, never
  needs.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import os
import select
import socket
import ssl
import sys
from pathlib import Path

import httpx

from feedsync.guard import Guard, PrivateAddressRefused

#: RFC 8305's "Connection Attempt Delay": the next address is tried this long after the
#: previous one started, while the previous one keeps trying
ATTEMPT_DELAY = 0.25

#: bytes read ahead of the reader before the connection stops reading (back-pressure)
_READ_AHEAD = 256 * 1024


async def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (an IP literal: itself), in the resolver's
    order, asked on the event loop's executor thread through the standard library's
    ``socket.getaddrinfo`` (the one seam tests replace answers at). ``host`` is canonical
    already (ASCII, IDNA-encoded): passed as bytes, so the IDNA codec is not loaded."""
    try:
        name: str | bytes = host.encode("ascii")
    except UnicodeEncodeError:
        name = host
    infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def interleave(addresses: list[str]) -> list[str]:
    """RFC 8305 section 4: IPv6 first, then the families alternate."""
    six = [a for a in addresses if ":" in a]
    four = [a for a in addresses if ":" not in a]
    ordered: list[str] = []
    for pair in zip(six, four, strict=False):
        ordered.extend(pair)
    longer = six if len(six) > len(four) else four
    ordered.extend(longer[min(len(six), len(four)) :])
    return ordered


async def open_stream(host: str, port: int, guard: Guard, seconds: float | None) -> Stream:
    """A TCP connection to ``host``, to an address ``guard`` allows: resolved, checked,
    raced (Happy Eyeballs), within ``seconds`` seconds in all."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        async with asyncio.timeout(seconds):
            found = await resolve(host, port)
    except TimeoutError:
        raise httpx.ConnectTimeout(f"timed out resolving {host}") from None
    except OSError as exc:
        raise httpx.ConnectError(f"cannot resolve {host}: {_reason(exc)}") from exc
    allowed = [a for a in found if guard.allows(host, a)]
    if not allowed:
        if found:
            raise PrivateAddressRefused(guard.refusal(host, found[0]))
        raise httpx.ConnectError(f"cannot resolve {host}: no address")
    left = None if seconds is None else max(0.0, seconds - (loop.time() - started))
    return await _race(host, interleave(allowed), port, left, started)


async def _race(
    host: str, addresses: list[str], port: int, seconds: float | None, started: float
) -> Stream:
    loop = asyncio.get_running_loop()
    todo = list(addresses)
    running: set[asyncio.Task[Stream]] = set()
    errors: list[str] = []
    try:
        async with asyncio.timeout(seconds):
            while todo or running:
                if todo:
                    running.add(asyncio.create_task(_attempt(todo.pop(0), port)))
                done, running = await asyncio.wait(
                    running,
                    timeout=ATTEMPT_DELAY if todo else None,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                won = None
                for task in done:
                    if task.exception() is None:
                        if won is None:
                            won = task.result()
                        else:
                            task.result().close()
                    else:
                        errors.append(str(task.exception()))
                if won is not None:
                    return won
    except TimeoutError:
        elapsed = loop.time() - started
        tried = ", ".join(_shown(a) for a in addresses[: len(addresses) - len(todo)])
        raise httpx.ConnectTimeout(
            f"timed out after {elapsed:.1f}s connecting to {host} ({tried})"
        ) from None
    finally:
        for task in running:
            task.cancel()
        for task in running:  # a connection made as it was cancelled is closed
            with contextlib.suppress(BaseException):  # cancelled or failed: nothing open
                (await task).close()
    raise httpx.ConnectError("; ".join(dict.fromkeys(errors)) or f"no address for {host}")


async def _attempt(address: str, port: int) -> Stream:
    loop = asyncio.get_running_loop()
    try:
        _, protocol = await loop.create_connection(_Protocol, host=address, port=port)
    except OSError as exc:
        raise httpx.ConnectError(_reason(exc)) from None
    return Stream(protocol, address)


def _shown(address: str) -> str:
    return f"[{address}]" if ":" in address else address


class _Protocol(asyncio.Protocol):
    """A connection's incoming bytes, kept until :class:`Stream` reads them, and its
    state: whether the peer closed it, whether writes must wait (flow control). It holds
    the connection's transport, the one place that knows it: after a TLS handshake
    :meth:`Stream.start_tls` puts the TLS layer there."""

    transport: asyncio.Transport  # set by connection_made, before anything else is called

    def __init__(self) -> None:
        self.chunks: collections.deque[bytes] = collections.deque()
        self.buffered = 0
        self.paused = False  # reading paused: the reader is behind
        self.eof = False
        self.error: BaseException | None = None  # why the connection was lost
        self.waiter: asyncio.Future[None] | None = None  # a read waiting for bytes
        self.drained: asyncio.Future[None] | None = None  # a write waiting for room

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered > _READ_AHEAD and not self.paused:
            self.transport.pause_reading()  # the reader is behind: the kernel holds the rest
            self.paused = True
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()
        self._wake_writer()

    def pause_writing(self) -> None:
        if self.drained is None or self.drained.done():
            self.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        self._wake_writer()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def _wake_writer(self) -> None:
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)


def _reason(exc: BaseException) -> str:
    """A socket error in a few words ("Connection refused"), as the user reads it after
    "cannot connect:" or "connection broken:"; a TLS error as ssl words it."""
    if isinstance(exc, OSError) and not isinstance(exc, ssl.SSLError) and exc.errno:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


def _time_out(waiter: asyncio.Future[None], error: Exception) -> None:
    if not waiter.done():
        waiter.set_exception(error)


async def _wait(waiter: asyncio.Future[None], seconds: float | None, error: Exception) -> None:
    """``waiter`` done, or ``error`` raised after ``seconds`` (a timer handle: cheaper
    than a timeout scope, and a connection reads ~10 times per page)."""
    if seconds is None:
        await waiter
        return
    timer = asyncio.get_running_loop().call_later(seconds, _time_out, waiter, error)
    try:
        await waiter
    finally:
        timer.cancel()


class Stream:
    """One connection's bytes, and where it leads (``peer``: the address it was made to,
    checked by the guard before the SYN)."""

    __slots__ = ("_protocol", "peer")

    def __init__(self, protocol: _Protocol, peer: str):
        self._protocol = protocol
        self.peer = peer

    async def read(self, max_bytes: int, seconds: float | None) -> bytes:
        """Up to ``max_bytes``; b"" at the end (the peer closed the connection)."""
        protocol = self._protocol
        if not protocol.chunks and not protocol.eof:
            protocol.waiter = asyncio.get_running_loop().create_future()
            try:
                await _wait(protocol.waiter, seconds, httpx.ReadTimeout("timed out reading"))
            finally:
                protocol.waiter = None
        if protocol.chunks:
            chunk = protocol.chunks.popleft()
            if len(chunk) > max_bytes:
                protocol.chunks.appendleft(chunk[max_bytes:])
                chunk = chunk[:max_bytes]
            protocol.buffered -= len(chunk)
            if protocol.paused and protocol.buffered <= _READ_AHEAD:
                protocol.paused = False
                if not protocol.transport.is_closing():
                    protocol.transport.resume_reading()
            return chunk
        if protocol.error is not None:
            raise httpx.ReadError(_reason(protocol.error))
        return b""

    async def write(self, data: bytes, seconds: float | None) -> None:
        if not data:
            return
        protocol = self._protocol
        if protocol.transport.is_closing() or protocol.error is not None:
            raise httpx.WriteError("the connection is closed")
        protocol.transport.write(data)
        drained = protocol.drained
        if drained is not None and not drained.done():  # the kernel's buffer is full
            await _wait(drained, seconds, httpx.WriteTimeout("timed out writing"))
            if protocol.error is not None:
                raise httpx.WriteError(_reason(protocol.error))

    def reusable(self) -> bool:
        """Whether an idle connection can carry another request: nothing arrived since
        its last answer (bytes it should not have sent, or its end), not in asyncio's
        buffer and not in the kernel's (``poll``: the event loop may not have read a FIN
        that is already there when the machine is busy)."""
        protocol = self._protocol
        if protocol.chunks or protocol.eof or protocol.transport.is_closing():
            return False
        sock = protocol.transport.get_extra_info("socket")
        if sock is None:
            return False
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN | select.POLLPRI)
        return not poller.poll(0)  # readable, hung up or in error: not reusable

    def close(self) -> None:
        self._protocol.transport.close()

    async def start_tls(self, server_hostname: str, seconds: float | None) -> Stream:
        context = tls_context()
        protocol = self._protocol
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(seconds):
                transport = await loop.start_tls(
                    protocol.transport, protocol, context, server_hostname=server_hostname
                )
        except TimeoutError:
            protocol.transport.close()
            raise httpx.ConnectTimeout("TLS handshake timed out") from None
        except OSError as exc:  # ssl.SSLError is one
            protocol.transport.close()
            raise httpx.ConnectError(_reason(exc)) from exc
        if transport is None:  # the connection closed during the handshake
            raise httpx.ConnectError("the connection closed during the TLS handshake")
        # asyncio does not call connection_made again for the TLS layer: the protocol is
        # told here, so that its flow control pauses that layer and reads and writes go
        # through it
        protocol.transport = transport
        return self


class TrustStoreMissing(httpx.ConnectError):
    """``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` names what is not there."""


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context per process: ``ssl.create_default_context()``'s settings (what
    httpx builds: hostname checked, certificate required, and on Python 3.13+ its strict
    X.509 flags), trusting ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set, else certifi's
    bundle (httpx's own choice); HTTP/1.1 offered in ALPN, all feedsync speaks."""
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile and not Path(cafile).is_file():
        raise TrustStoreMissing(f"SSL_CERT_FILE names {cafile}, which is not a file")
    if capath and not Path(capath).is_dir():
        raise TrustStoreMissing(f"SSL_CERT_DIR names {capath}, which is not a directory")
    if cafile is None and capath is None:
        import certifi  # httpx's own dependency, declared in pyproject.toml

        cafile = certifi.where()
    try:
        context = ssl.create_default_context(cafile=cafile, capath=capath)
    except ssl.SSLError as exc:
        raise TrustStoreMissing(
            f"cannot read the CA certificates in {cafile or capath}: {exc}"
        ) from None
    context.set_alpn_protocols(["http/1.1"])
    keylog = os.environ.get("SSLKEYLOGFILE")
    if keylog and not sys.flags.ignore_environment:
        context.keylog_filename = keylog
    return context
