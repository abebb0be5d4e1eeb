"""The HTTP server of ``feedsync serve``: a thread per connection, h11 to read HTTP/1.1,
the storage read by one handler at a time.

Chosen by measurement (bench/drivers/http_servers.py; bench/analysis.md, "Choosing
feedsync serve's HTTP server"): the standard library's threads with h11, which feedsync
already has for its fetching, against aiohttp and uvicorn. No dependency, nothing
compiled to miss on armv7, the smallest idle RSS of the asynchronous and threaded
candidates alike, and more requests per second than one reader on a Pi can ask.

Why h11 rather than http.server: its receive buffer is bounded
(``max_incomplete_event_size``), so a 10 MB request line or header is refused (431)
after 16 KB were read, not read whole; a GET that carries a body closes the connection
after its answer instead of reading the body as the next request; keep-alive and HEAD
are framed by the protocol's rules, not by hand.

What a connection costs is bounded too: at most :data:`MAX_CONNECTIONS` at once (one
more is answered 503 and closed), an idle keep-alive connection is closed after
:data:`IDLE_TIMEOUT`, a request's head must arrive within :data:`HEAD_TIMEOUT` (a client
trickling a byte at a time holds no thread for long).

The storage (one SQLite connection, or PostgreSQL's) is used by one handler at a time,
under a lock held only while the handler reads and renders: the answer is bytes by the
time it is sent, so a slow client holds no read transaction and no lock.

Started by systemd's socket (``LISTEN_FDS``), it serves the socket it was given and
exits after ``[serve] idle_exit`` without a request: nobody reading costs no RAM, and the
next request starts it again. In the foreground it runs until SIGTERM or SIGINT, which
stop it within a second.
"""

from __future__ import annotations

import contextlib
import http
import logging
import os
import selectors
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, NamedTuple

import h11

from feedsync.serve import access
from feedsync.serve.request import checked, headers_of
from feedsync.serve.web import Handler, Request, Response, text

if TYPE_CHECKING:
    from feedsync.storage import Storage

log = logging.getLogger("feedsync.serve")

#: the request line and headers together, at most (h11 refuses more: 431)
MAX_HEAD = 16 * 1024
MAX_CONNECTIONS = 32
IDLE_TIMEOUT = 30.0  # seconds an idle keep-alive connection is kept
HEAD_TIMEOUT = 10.0  # seconds a request's line and headers may take to arrive
SEND_TIMEOUT = 60.0  # seconds a client may take to take an answer
#: after refusing a request it was still sending: read (and drop) this much of the rest,
#: for this long, so the client reads the refusal instead of a reset connection
LINGER_BYTES = 32 * 1024 * 1024
LINGER_SECONDS = 3.0
#: a refused connection's request is awaited this long (the accept loop waits with it)
REFUSE_SECONDS = 0.2

#: on every answer (the pages need nothing else: no script, no frame, no foreign source)
SECURITY_HEADERS = (
    (
        "Content-Security-Policy",
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
)


class Route(NamedTuple):
    """Who answers a path, and whether it is a page (a browser: a token in its URL is
    turned into a cookie) or a document for a feed reader (its URL keeps the token)."""

    handler: Handler
    page: bool


Router = Callable[[str], Route | None]


def systemd_socket(environ: Mapping[str, str] = os.environ) -> socket.socket | None:
    """The listening socket systemd passed (fd 3, ``LISTEN_FDS``/``LISTEN_PID``), or
    None when it passed none. The variables are unset: they were meant for this process,
    not for one it might start."""
    if environ.get("LISTEN_PID") != str(os.getpid()):
        return None
    count = environ.get("LISTEN_FDS", "")
    if not count.isdigit() or int(count) < 1:
        return None
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(name, None)
    sock = socket.socket(fileno=3)
    if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6):
        sock.detach()
        raise OSError(
            "the socket systemd passed is not a TCP one: ListenStream= must be an IP "
            "address and a port (127.0.0.1:8470)"
        )
    return sock


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (port 0: one the system picks)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # dualstack_ipv6 off: "::" means IPv6 only, as written; 0.0.0.0 is IPv4's
    return socket.create_server((host, port), family=family, backlog=64, reuse_port=False)


def host_label(sock: socket.socket) -> str:
    """``host:port`` of a listening socket, as a URL writes it."""
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Server:
    """One listening socket, its connections, and the storage they read."""

    def __init__(
        self,
        sock: socket.socket,
        storage: Storage,
        router: Router,
        rule: access.Policy,
        *,
        idle_exit: timedelta | None = None,
    ) -> None:
        self.sock = sock
        self.storage = storage
        self.router = router
        self.rule = rule
        self.idle_exit = idle_exit
        self.label = host_label(sock)
        self.stop = threading.Event()
        self._storage_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._connections = 0
        self._in_flight = 0
        self._last_request = time.monotonic()

    # ------------------------------------------------------------ the loop

    def run(self) -> str:
        """Accept until stopped (or idle long enough, socket-activated); says why it
        ended: "stopped" or "idle"."""
        self.sock.setblocking(False)
        with selectors.DefaultSelector() as selector:
            selector.register(self.sock, selectors.EVENT_READ)
            while not self.stop.is_set():
                if selector.select(timeout=0.5):
                    self._accept()
                if self._idle():
                    return "idle"
        return "stopped"

    def _idle(self) -> bool:
        if self.idle_exit is None:
            return False
        with self._count_lock:
            quiet = time.monotonic() - self._last_request
            return self._in_flight == 0 and quiet >= self.idle_exit.total_seconds()

    def _accept(self) -> None:
        try:
            conn, peer = self.sock.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        with self._count_lock:
            full = self._connections >= MAX_CONNECTIONS
            if not full:
                self._connections += 1
        if full:
            self._refuse(conn)
            return
        thread = threading.Thread(
            target=self._connection, args=(conn, str(peer[0])), daemon=True, name="serve"
        )
        thread.start()

    @staticmethod
    def _refuse(conn: socket.socket) -> None:
        """A 503 to a connection past :data:`MAX_CONNECTIONS`. The request the client sent
        on connecting is read and dropped (for REFUSE_SECONDS at most) before the close:
        closing a socket with unread bytes resets the connection, and the client would
        see the reset instead of the 503 and its Retry-After."""
        with contextlib.suppress(OSError):
            conn.settimeout(1.0)
            extra = "".join(f"{name}: {value}\r\n" for name, value in SECURITY_HEADERS)
            conn.sendall(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                b"Connection: close\r\nRetry-After: 5\r\n" + extra.encode() + b"\r\n"
            )
            conn.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + REFUSE_SECONDS
            while (left := deadline - time.monotonic()) > 0:
                conn.settimeout(left)
                if not conn.recv(MAX_HEAD):
                    break
        conn.close()

    def close(self) -> None:
        """After :meth:`run`: the socket closed, the storage closed once no handler
        reads it (a connection thread still sending is cut by the exit)."""
        self.sock.close()
        with self._storage_lock:
            self.storage.close()

    # ------------------------------------------------------------ one connection

    def _connection(self, sock: socket.socket, peer: str) -> None:
        try:
            sock.setblocking(True)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._converse(sock, peer)
        except OSError:
            pass  # the client went away, or took too long: nothing to answer
        finally:
            with contextlib.suppress(OSError):
                sock.close()
            with self._count_lock:
                self._connections -= 1

    def _converse(self, sock: socket.socket, peer: str) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        head_started: float | None = None
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                self._protocol_error(sock, conn, exc, peer)
                return
            if event is h11.NEED_DATA:
                if head_started is None:
                    sock.settimeout(IDLE_TIMEOUT)
                else:
                    left = head_started + HEAD_TIMEOUT - time.monotonic()
                    if left <= 0:
                        return
                    sock.settimeout(left)
                data = sock.recv(65536)
                if head_started is None and data:
                    head_started = time.monotonic()
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                with self._count_lock:
                    self._in_flight += 1
                    self._last_request = time.monotonic()
                try:
                    self._answer(sock, conn, event, peer)
                finally:
                    with self._count_lock:
                        self._in_flight -= 1
                        self._last_request = time.monotonic()
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return
            if conn.our_state is h11.MUST_CLOSE:
                self._linger(sock)
                return
            if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                conn.start_next_cycle()
                head_started = None

    def _answer(
        self, sock: socket.socket, conn: h11.Connection, event: h11.Request, peer: str
    ) -> None:
        started = time.monotonic()
        target = event.target.decode("ascii", "replace")
        headers = headers_of(list(event.headers))
        # a GET with a body is answered without reading the body, then the connection
        # is closed: its body is never read as the next request
        with_body = "transfer-encoding" in headers or headers.get("content-length", "0") != "0"
        found = checked(event.method, event.target, headers, self.label)
        if isinstance(found, Response):
            response = found
        else:
            route = self.router(found.path)
            verdict = access.check(
                self.rule, peer, found.path, found.query, headers, page=route is None or route.page
            )
            if verdict.refusal is not None:
                response = verdict.refusal
                if response.status in (401, 403):
                    log.info("refused %s %s: %d", peer, access.redact(target), response.status)
            elif route is None:
                response = text(404, "404 no such page")
            else:
                response = self._handle(route.handler, found._replace(token=verdict.token))
        self._send(sock, conn, event.method == b"HEAD", response, close=with_body)
        log.debug(
            "%s %s %s %d %d bytes %.0f ms",
            peer,
            event.method.decode("ascii", "replace"),
            access.redact(target),
            response.status,
            len(response.body),
            (time.monotonic() - started) * 1000,
        )

    def _handle(self, handler: Handler, request: Request) -> Response:
        with self._storage_lock:
            try:
                return handler(self.storage, request)
            except Exception:
                log.exception("500 on %s", access.redact(request.path))
                return text(500, "500 internal error: the server's log says what went wrong")

    def _send(
        self,
        sock: socket.socket,
        conn: h11.Connection,
        head: bool,
        response: Response,
        *,
        close: bool,
    ) -> None:
        headers: list[tuple[str, str]] = [("Content-Type", response.content_type)]
        if response.status != 304:
            headers.append(("Content-Length", str(len(response.body))))
        headers.extend(SECURITY_HEADERS)
        headers.extend(response.headers)
        if response.status >= 300 and not any(
            k.lower() == "cache-control" for k, _ in response.headers
        ):
            headers.append(("Cache-Control", "no-store"))
        if close:
            headers.append(("Connection", "close"))
        try:
            reason = http.HTTPStatus(response.status).phrase
        except ValueError:
            reason = ""
        out = conn.send(h11.Response(status_code=response.status, headers=headers, reason=reason))
        chunks = [out or b""]
        if not head and response.status != 304 and response.body:
            chunks.append(conn.send(h11.Data(data=response.body)) or b"")
        chunks.append(conn.send(h11.EndOfMessage()) or b"")
        sock.settimeout(SEND_TIMEOUT)
        sock.sendall(b"".join(chunks))  # one write: no Nagle delay between head and body

    def _protocol_error(
        self, sock: socket.socket, conn: h11.Connection, exc: h11.RemoteProtocolError, peer: str
    ) -> None:
        """A request h11 cannot read: one line, with h11's status (431: too long), then
        the connection closed, after reading what the client is still sending."""
        status = exc.error_status_hint
        if status == 431:
            message = f"431 request line or headers too long (more than {MAX_HEAD // 1024} KB)"
        else:
            message = f"{status} bad request: not HTTP/1.1 as it must be written"
        log.info("refused %s: %s", peer, message)
        if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            response = text(status, message)
            with contextlib.suppress(h11.LocalProtocolError):
                self._send(sock, conn, False, response, close=True)
        self._linger(sock)

    @staticmethod
    def _linger(sock: socket.socket) -> None:
        """Close the sending side, and read (dropping it) what the client still sends,
        bounded: closed with unread data, the socket would send a reset, and the client
        could lose the answer before reading it."""
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + LINGER_SECONDS
            drained = 0
            while drained < LINGER_BYTES:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                chunk = sock.recv(65536)
                if not chunk:
                    break
                drained += len(chunk)


def stop_on_signals(server: Server) -> None:
    """SIGTERM (systemctl stop) and SIGINT (Ctrl-C) end the loop within half a second."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: server.stop.set())
