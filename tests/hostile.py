"""Servers that misbehave on purpose, as ``Resource.handler`` callables for LocalServer."""

from __future__ import annotations

import functools
import socket
import struct
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

Handler = Callable[[BaseHTTPRequestHandler], None]


def _start(request: BaseHTTPRequestHandler, headers: dict[str, str]) -> None:
    request.send_response(200)
    for name, value in headers.items():
        request.send_header(name, value)
    request.end_headers()
    request.close_connection = True


def trickle(seconds: float = 60) -> Handler:
    """A 200 whose body comes one byte every 0.2 s, for a minute."""

    def handle(request: BaseHTTPRequestHandler) -> None:
        _start(request, {"Content-Type": "application/rss+xml"})
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            request.wfile.write(b" ")
            request.wfile.flush()
            time.sleep(0.2)

    return handle


def endless(request: BaseHTTPRequestHandler) -> None:
    """A feed that never ends (no Content-Length), as fast as the client reads."""
    _start(request, {"Content-Type": "application/rss+xml"})
    request.wfile.write(b'<?xml version="1.0"?><rss version="2.0"><channel>')
    chunk = b"<item><title>again</title><link>http://e.com/x</link></item>" * 1000
    while True:
        request.wfile.write(chunk)


@functools.cache
def bomb_bytes(megabytes: int = 200) -> bytes:
    """``megabytes`` of zeros, gzipped: about a thousandth of that on the wire."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"\0" * 2**20
    parts = [packer.compress(zeros) for _ in range(megabytes)]
    return b"".join([*parts, packer.flush()])


def gzip_bomb(request: BaseHTTPRequestHandler) -> None:
    body = bomb_bytes()
    _start(
        request,
        {
            "Content-Type": "application/rss+xml",
            "Content-Encoding": "gzip",
            "Content-Length": str(len(body)),
        },
    )
    request.wfile.write(body)


def short_body(request: BaseHTTPRequestHandler) -> None:
    """Announces 100 kB, sends 100 bytes, hangs up."""
    _start(request, {"Content-Type": "application/rss+xml", "Content-Length": "100000"})
    request.wfile.write(b'<?xml version="1.0"?><rss version="2.0"><channel><title>cut')
    request.wfile.flush()


def reset(request: BaseHTTPRequestHandler) -> None:
    """Half a body, then a TCP reset."""
    _start(request, {"Content-Type": "application/rss+xml", "Content-Length": "10000"})
    request.wfile.write(b'<?xml version="1.0"?><rss version="2.0"><channel>' + b" " * 400)
    request.wfile.flush()
    request.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    request.connection.close()


def flaky(page: str, failures: int = 1) -> Handler:
    """A page that answers 500 to its first ``failures`` requests, then serves ``page``."""
    seen = [0]

    def handle(request: BaseHTTPRequestHandler) -> None:
        seen[0] += 1
        body = page.encode() if seen[0] > failures else b"try again later"
        request.send_response(200 if seen[0] > failures else 500)
        request.send_header("Content-Type", "text/html; charset=utf-8")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    return handle
