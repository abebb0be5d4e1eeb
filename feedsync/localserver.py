"""A small HTTP server on 127.0.0.1 for ``feedsync demo`` and for the tests.

It serves a table of paths that the caller can change while it runs, answers conditional
GETs (ETag / If-None-Match, Last-Modified / If-Modified-Since) like a well-behaved news
site, and counts the requests per path, so a test can assert "this article was fetched
exactly once" from the server's side. Only ever binds the loopback address.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit


def send_answer(
    request: BaseHTTPRequestHandler,
    status: int,
    body: bytes,
    content_type: str | None,
    headers: dict[str, str] | None = None,
) -> None:
    """A whole answer, with its Content-Length (none and no body for a 304): what the
    server's table sends, and what a test's own handler (``Resource.handler``, a server
    of its own) sends when it has done whatever it is there to do."""
    request.send_response(status)
    if content_type:
        request.send_header("Content-Type", content_type)
    for name, value in (headers or {}).items():
        request.send_header(name, value)
    if status != 304:
        request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    if status != 304:
        request.wfile.write(body)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default listen backlog is 5: a pass opening 8 connections at once
    # had one dropped, and TCP sent its SYN again a second later
    request_queue_size = 128

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up early (size cap, deadline), or a socket a misbehaving
        test handler closed, is normal here, not news."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class _QuietServer6(_QuietServer):
    address_family = socket.AF_INET6


@dataclass
class Resource:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    conditional: bool = True  # send ETag / Last-Modified and honour them
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (to make requests overlap in tests)
    last_modified: float = field(default_factory=time.time)
    # writes the whole answer itself (status line, headers, body, timing): for servers
    # that misbehave on purpose (trickling, endless, resetting; see tests/hostile.py)
    handler: Callable[[BaseHTTPRequestHandler], None] | None = None

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha1(self.body).hexdigest()[:16] + '"'


class LocalServer:
    """``with LocalServer() as server: server.set("/feed.xml", b"...", "application/rss+xml")``

    ``address``: 127.0.0.1 (the default) or ::1, never another; ``port``: 0 for any free
    one (a test that needs one port on both loopback addresses gives it)."""

    def __init__(self, address: str = "127.0.0.1", port: int = 0) -> None:
        if address not in ("127.0.0.1", "::1"):
            raise ValueError(f"a local server listens on 127.0.0.1 or ::1, not {address}")
        self.address = address
        self._port = port
        self._routes: dict[str, Resource] = {}
        self._lock = threading.Lock()
        self.hits: Counter[str] = Counter()  # requests per path
        self.not_modified: Counter[str] = Counter()  # of which answered 304
        self.headers: dict[str, dict[str, str]] = {}  # the last request's headers, per path
        self.connections = 0  # TCP connections accepted (a client that reuses one: 1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ routes

    def set(
        self,
        path: str,
        body: bytes | str,
        content_type: str = "text/html; charset=utf-8",
        **options: object,
    ) -> str:
        """Serve ``body`` at ``path`` (replacing what was there); returns its URL."""
        data = body.encode("utf-8") if isinstance(body, str) else body
        with self._lock:
            self._routes[path] = Resource(body=data, content_type=content_type, **options)  # type: ignore[arg-type]
        return self.url(path)

    def hit_counts(self) -> dict[str, int]:
        """Requests per path, as of now: a copy taken under the lock the server's threads
        count under (iterating ``hits`` while a request lands raised "dictionary changed
        size during iteration" in a test)."""
        with self._lock:
            return dict(self.hits)

    def remove(self, path: str) -> None:
        with self._lock:
            self._routes.pop(path, None)

    def _lookup(self, target: str) -> tuple[str, Resource | None]:
        with self._lock:
            if target in self._routes:
                return target, self._routes[target]
            path = urlsplit(target).path
            return path, self._routes.get(path)

    # ------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self._httpd.server_port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def start(self) -> LocalServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: http.server writes the headers and then the body, and Nagle's
            # algorithm held the body until the client acknowledged the headers, which
            # its delayed ACK does after ~40 ms: every answer came ~40 ms late, a stall
            # no real news server (one write, or TCP_CORK) puts on a request
            disable_nagle_algorithm = True

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server.connections += 1

            def do_GET(self) -> None:
                server._answer(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        kind = _QuietServer6 if ":" in self.address else _QuietServer
        self._httpd = kind((self.address, self._port), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="feedsync-localserver",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------ answering

    def _answer(self, request: BaseHTTPRequestHandler) -> None:
        key, resource = self._lookup(request.path)
        with self._lock:
            self.hits[key] += 1
            self.headers[key] = dict(request.headers.items())
        if resource is None:
            send_answer(request, 404, b"not found", "text/plain")
            return
        if resource.delay:
            time.sleep(resource.delay)
        if resource.handler is not None:
            resource.handler(request)
            return
        headers = dict(resource.headers)
        if resource.conditional and resource.status == 200:
            headers["ETag"] = resource.etag
            headers["Last-Modified"] = formatdate(resource.last_modified, usegmt=True)
            if self._fresh(request, resource):
                with self._lock:
                    self.not_modified[key] += 1
                send_answer(request, 304, b"", None, headers)
                return
        send_answer(request, resource.status, resource.body, resource.content_type, headers)

    @staticmethod
    def _fresh(request: BaseHTTPRequestHandler, resource: Resource) -> bool:
        if_none_match = request.headers.get("If-None-Match")
        if if_none_match is not None:
            return resource.etag in [tag.strip() for tag in if_none_match.split(",")]
        since = request.headers.get("If-Modified-Since")
        if since:
            try:
                return parsedate_to_datetime(since).timestamp() >= int(resource.last_modified)
            except (TypeError, ValueError):
                return False
        return False


@contextlib.contextmanager
def dual_stack_with_dead_ipv6() -> Iterator[tuple[LocalServer, int]]:
    """A host on one port of both loopback addresses whose IPv6 side drops SYNs: a
    listener on [::1] with a full accept queue (nobody accepts; the kernel drops the SYNs
    that follow, as a broken IPv6 path does), the feed server on 127.0.0.1."""
    for _ in range(20):
        dead = socket.socket(socket.AF_INET6)
        dead.bind(("::1", 0))
        dead.listen(0)
        port = dead.getsockname()[1]
        try:
            server = LocalServer("127.0.0.1", port).start()
        except OSError:  # that port is taken on 127.0.0.1: another pair
            dead.close()
            continue
        filler = socket.create_connection(("::1", port))  # fills the queue of one
        try:
            yield server, port
        finally:
            server.stop()
            filler.close()
            dead.close()
        return
    raise RuntimeError("no port free on both loopback addresses")
