"""Where a request may connect: article links are attacker-controlled, so the page clients
connect through :class:`GuardedBackend`, which resolves the host itself, refuses loopback,
private, link-local, multicast and reserved addresses, and connects to the very address
it checked, so a DNS answer that changes between check and connect (rebinding) cannot
slip through, on any redirect hop. Feeds are the owner's choice and may be on the LAN;
an article may be too when one of its feeds is (:func:`on_the_lan`), or with
``[fetch] allow_private``. fetch.py builds its clients on :class:`GuardedTransport`.
"""

from __future__ import annotations

import contextvars
import functools
import ipaddress
import os
import select
import socket
import ssl
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpcore
import httpx


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
    """The addresses ``host`` resolves to (an IP literal: itself)."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


# The host of the URL a request was asked for (set by :func:`get` for its redirects).
ORIGIN: contextvars.ContextVar[str | None] = contextvars.ContextVar("origin", default=None)


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves, checks, then connects to the checked address (no second lookup).

    ``connected`` (the feeds client's): the address each host was first reached at in
    this pass, written here, where the connection is made. It decides whether a feed is
    on the LAN (:func:`on_the_lan`), and it guards the feeds' redirects: a feed's own
    host may be anywhere (the owner chose it), but a redirect leads onto a private
    address only from a feed that is itself on one."""

    def __init__(self, allow_private: bool, connected: dict[str, str] | None = None):
        self._inner = httpcore.AnyIOBackend()
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
            with anyio.fail_after(timeout):
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
        error: Exception | None = None
        for address in addresses:
            try:
                stream = await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                error = exc
            else:
                if self._connected is not None:
                    self._connected.setdefault(host, address)  # once per pass
                return _Stream(stream)
        raise error or httpcore.ConnectError(f"no address for {host}")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not used")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One TLS context per process, shared by every client, with the CA certificates
    not loaded yet: :func:`trusting` loads them before the first TLS handshake. Loading
    the bundle costs ~25-50 ms of CPU on x86 (several times that on a Pi), and a pass
    whose feeds are all http, or a cron run with nothing due, never needs it. The same
    settings as ``ssl.create_default_context()`` (what httpx builds): hostname checked,
    certificate required."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
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
        # httpx builds its httpcore pool without a network backend option; rebuild it
        # with ours (tests/test_fetch.py fails loudly should httpx change this).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(allow_private, connected),
        )


async def host_is_private(host: str) -> bool:
    """Whether ``host`` is on the LAN by its name alone: every one of its addresses
    private (a name that answers one public and one loopback address is not)."""
    try:
        addresses = await resolve(host)
    except OSError:
        return False
    return bool(addresses) and all(is_private_address(a) for a in addresses)


async def on_the_lan(host: str, connected: Mapping[str, str]) -> bool:
    """Whether a feed's host counts as on the LAN, which lets its articles be fetched
    from private addresses: the address this pass's poll of it actually connected to;
    for a feed not polled in this pass, all of its addresses private. Never a lookup of
    its own when the feed was polled: a name whose answers change between lookups
    (DNS rebinding) or mix a public and a loopback address cannot steer it."""
    address = connected.get(host)
    if address is not None:
        return is_private_address(address)
    return await host_is_private(host)


class _Stream(httpcore.AsyncNetworkStream):
    """A connection's stream with its socket looked up once. Before each request the
    connection pool asks every idle connection whether the server has closed it
    ("is_readable"); httpcore's anyio stream answers by building the socket's attribute
    table anew (a getpeername() system call among them) each time, which cost more CPU
    per feed than opening a new connection on the loopback. Everything else is the
    inner stream's."""

    def __init__(self, inner: httpcore.AsyncNetworkStream):
        self._inner = inner
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore.AsyncNetworkStream:
        context = trusting(ssl_context)  # the CA certificates, before the first handshake
        return _Stream(await self._inner.start_tls(context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return _readable(self._socket)
        if info == "socket":
            return self._socket
        return self._inner.get_extra_info(info)


def _readable(sock: socket.socket | None) -> bool:
    """Whether a read would return at once: data, or the end a closed connection gives
    (a socket gone counts as readable, so that the pool drops its connection)."""
    if sock is None or sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))
