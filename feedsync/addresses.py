"""Where a request may connect: article links are attacker-controlled, so the page clients
connect through :class:`GuardedBackend`, which resolves the host itself, refuses loopback,
private, link-local, multicast and reserved addresses, and connects to the very address
it checked, so a DNS answer that changes between check and connect (rebinding) cannot
slip through, on any redirect hop. Which addresses a request may use is its
:class:`feedsync.guard.Guard`'s rule. fetch.py builds its clients on
:class:`GuardedTransport`.

The connections themselves are here too (:class:`_Stream`): httpcore's network stream on
asyncio's own transport, the cheapest way under feedsync's pool (feedsync/pool.py) to
read and write a socket.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import ipaddress
import os
import socket
import ssl
import sys
import threading
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from feedsync.guard import Guard
from feedsync.pool import ConnectionPool


class PrivateAddressRefused(httpcore.ConnectError):
    """Raised by the guarded backend; surfaces as a permanent FetchError."""


def is_private_address(address: str) -> bool:
    """Loopback, private (RFC 1918, ULA), link-local, multicast, unspecified, reserved."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True  # not an address we understand: do not connect to it
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return bool(
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_unspecified
        or ip.is_reserved
        # what is not on the public internet: carrier-grade NAT (100.64.0.0/10, a
        # provider's or a Tailscale network), benchmarking, documentation ranges
        or not ip.is_global
    )


async def resolve(host: str, port: int = 443) -> list[str]:
    """The addresses ``host`` resolves to (an IP literal: itself), asked on the event
    loop's executor thread (``host`` is canonical already: ASCII, IDNA-encoded)."""
    try:  # bytes: the standard library's IDNA codec (and stringprep) is not loaded
        name: str | bytes = host.encode("ascii")
    except UnicodeEncodeError:
        name = host
    infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


# The host of the URL a request was asked for (set by :func:`get` for its redirects).
ORIGIN: contextvars.ContextVar[str | None] = contextvars.ContextVar("origin", default=None)
# The request's guard (set by fetch.get): stand-in until the transport reads the extension
GUARD: contextvars.ContextVar[Guard | None] = contextvars.ContextVar("guard", default=None)


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves, checks, then connects to the checked address (no second lookup).

    ``connected`` (the feeds client's): the address each host was first reached at in
    this pass, written here, where the connection is made. It guards the feeds'
    redirects: a feed's own host may be anywhere (the owner chose it), but a redirect
    leads onto a private address only from a feed that is itself on one."""

    def __init__(self, allow_private: bool, connected: dict[str, str] | None = None):
        self._allow_private = allow_private
        self._connected = connected

    def _check_redirect(self, host: str, addresses: list[str]) -> None:
        origin = ORIGIN.get()
        if self._connected is None or origin is None or host == origin:
            return
        private = [a for a in addresses if is_private_address(a)]
        came_from = self._connected.get(origin)
        if private and (came_from is None or not is_private_address(came_from)):
            raise PrivateAddressRefused(
                f"refused: a redirect from {origin}, on the internet, to {host}, "
                f"a private address ({private[0]})"
            )

    async def connect_tcp(  # the signature is httpcore's
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                addresses = await resolve(host, port)
        except (OSError, TimeoutError) as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        if not self._allow_private:
            refused = [a for a in addresses if is_private_address(a)]
            if refused:
                raise PrivateAddressRefused(
                    f"refused: {host} resolves to a private address ({refused[0]})"
                )
        self._check_redirect(host, addresses)
        guard = GUARD.get()  # stand-in until the transport asks the guard itself
        if guard is not None:
            for address in addresses:
                if not guard.allows(host, address):
                    raise PrivateAddressRefused(guard.refusal(host, address))
        error: Exception | None = None
        for address in addresses:
            try:
                stream = await _connect(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                error = exc
            else:
                if self._connected is not None:
                    self._connected.setdefault(host, address)  # once per pass
                return stream
        raise error or httpcore.ConnectError(f"no address for {host}")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not used")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One TLS context per process, shared by every client, with the CA certificates
    not loaded yet: :func:`trusting` loads them before the first TLS handshake. Loading
    the bundle costs ~25-50 ms of CPU on x86 (several times that on a Pi), and a pass
    whose feeds are all http, or a cron run with nothing due, never needs it. The same
    settings as ``ssl.create_default_context()`` (what httpx builds): hostname checked,
    certificate required."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.set_alpn_protocols(["http/1.1"])  # all feedsync/pool.py speaks
    keylog = os.environ.get("SSLKEYLOGFILE")
    if keylog and not sys.flags.ignore_environment:
        context.keylog_filename = keylog
    return context


_trust_lock = threading.Lock()
_trusted: set[int] = set()  # the ids of the contexts whose CA certificates are loaded


def trusting(context: ssl.SSLContext) -> ssl.SSLContext:
    """``context`` with the CA certificates httpx would trust loaded, once: those of
    ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set, else certifi's bundle."""
    if id(context) in _trusted:
        return context
    with _trust_lock:
        if id(context) not in _trusted:
            if os.environ.get("SSL_CERT_FILE"):
                context.load_verify_locations(cafile=os.environ["SSL_CERT_FILE"])
            elif os.environ.get("SSL_CERT_DIR"):
                context.load_verify_locations(capath=os.environ["SSL_CERT_DIR"])
            else:
                import certifi  # httpx's own dependency

                context.load_verify_locations(cafile=certifi.where())
            _trusted.add(id(context))
    return context


class GuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(
        self, *, allow_private: bool, limits: httpx.Limits, connected: dict[str, str] | None
    ):
        super().__init__(limits=limits, verify=ssl_context())
        # httpx sends every request to its ``_pool``: feedsync's own, on the guarded
        # backend (feedsync/pool.py says why). Should httpx stop doing so, the tests of
        # refused private addresses (test_fetch.py) and of the pool (test_pool.py) fail.
        self._pool = ConnectionPool(  # type: ignore[assignment]
            backend=GuardedBackend(allow_private, connected),
            ssl_context=ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
        )


class _Protocol(asyncio.Protocol):
    """A connection's incoming bytes, kept until :class:`_Stream` reads them, and its
    state: whether the peer closed it, whether writes must wait (flow control). It holds
    the connection's transport, the one place that knows it: after a TLS handshake
    :meth:`_Stream.start_tls` puts the TLS layer there."""

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
        self.transport = transport  # type: ignore[assignment]

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


#: bytes read ahead of the reader before the connection stops reading (back-pressure)
_READ_AHEAD = 256 * 1024


def _reason(exc: BaseException) -> str:
    """A socket error in a few words ("Connection refused"), as the user reads it after
    "cannot connect:" or "connection broken:"; a TLS error as ssl words it."""
    if isinstance(exc, OSError) and not isinstance(exc, ssl.SSLError) and exc.errno:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


def _time_out(waiter: asyncio.Future[None], error: type[Exception], message: str) -> None:
    if not waiter.done():
        waiter.set_exception(error(message))


async def _wait(
    waiter: asyncio.Future[None], seconds: float | None, error: type[Exception], message: str
) -> None:
    """``waiter`` done, or ``error(message)`` raised after ``seconds`` (a timer handle:
    cheaper than a timeout scope, and a connection reads ~10 times per page; the error
    is built only if the timer fires)."""
    if seconds is None:
        await waiter
        return
    timer = asyncio.get_running_loop().call_later(seconds, _time_out, waiter, error, message)
    try:
        await waiter
    finally:
        timer.cancel()


class _Stream(httpcore.AsyncNetworkStream):
    """A connection on asyncio's own transport, for httpcore: what its anyio stream does,
    without anyio's layers on every read and write (a task-group-aware timeout scope
    each, a stream wrapper over asyncio's transport), ~15% of a pass's CPU when every
    feed answers 304, start-up excluded. Before it reuses an idle connection the pool
    (feedsync/pool.py) asks whether the server has closed it ("is_readable"): the
    transport has already read whatever arrived (bytes or the end), so that is a look at
    the buffer, not a system call (httpcore's anyio stream built the socket's attribute
    table anew, with a getpeername(), each time; a poll() per idle connection after
    that)."""

    def __init__(self, protocol: _Protocol):
        self._protocol = protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        protocol = self._protocol
        if not protocol.chunks and not protocol.eof:
            protocol.waiter = asyncio.get_running_loop().create_future()
            try:
                await _wait(protocol.waiter, timeout, httpcore.ReadTimeout, "timed out reading")
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
            raise httpcore.ReadError(_reason(protocol.error))
        return b""  # the end: the server closed the connection

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if not buffer:
            return
        protocol = self._protocol
        if protocol.transport.is_closing() or protocol.error is not None:
            raise httpcore.WriteError("the connection is closed")
        protocol.transport.write(buffer)
        drained = protocol.drained
        if drained is not None and not drained.done():  # the kernel's buffer is full
            await _wait(drained, timeout, httpcore.WriteTimeout, "timed out writing")
            if protocol.error is not None:
                raise httpcore.WriteError(_reason(protocol.error))

    async def aclose(self) -> None:
        self._protocol.transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore.AsyncNetworkStream:
        context = trusting(ssl_context)  # the CA certificates, before the first handshake
        protocol = self._protocol
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):  # (asyncio's own would say "aborted")
                transport = await loop.start_tls(
                    protocol.transport, protocol, context, server_hostname=server_hostname
                )
        except TimeoutError as exc:
            protocol.transport.close()
            raise httpcore.ConnectTimeout(f"TLS handshake timed out: {exc}") from exc
        except OSError as exc:  # ssl.SSLError is one
            protocol.transport.close()
            raise httpcore.ConnectError(_reason(exc)) from exc
        if transport is None:  # the connection closed during the handshake
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        # asyncio does not call connection_made again for the TLS layer: the protocol is
        # told here, so that its flow control pauses that layer and reads and writes go
        # through it
        protocol.transport = transport
        return _Stream(protocol)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            protocol = self._protocol
            return bool(protocol.chunks) or protocol.eof or protocol.transport.is_closing()
        transport = self._protocol.transport
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        return None


async def _connect(
    address: str,
    port: int,
    seconds: float | None,
    local_address: str | None,
    socket_options: Iterable[Any] | None,
) -> _Stream:
    """A TCP connection to ``address`` (already checked), as a :class:`_Stream`."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(seconds):
            transport, protocol = await loop.create_connection(
                _Protocol,
                host=address,
                port=port,
                local_addr=(local_address, 0) if local_address else None,
            )
    except TimeoutError as exc:
        raise httpcore.ConnectTimeout(f"timed out connecting to {address}") from exc
    except OSError as exc:
        raise httpcore.ConnectError(_reason(exc)) from exc
    for option in socket_options or ():  # (httpx asks for none; asyncio sets TCP_NODELAY)
        transport.get_extra_info("socket").setsockopt(*option)
    return _Stream(protocol)
