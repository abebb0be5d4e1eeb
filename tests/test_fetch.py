"""HTTP against the local server: conditional GET, caps, deadlines, errors, redirects,
https verified against the CA certificates (loaded on first use)."""

from __future__ import annotations

import asyncio
import http.server
import importlib.abc
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from feedsync import connect, fetch, guard
from feedsync.guard import Guard
from feedsync.localserver import LocalServer, send_answer

T = TypeVar("T")


def run(coro_factory: Any) -> Any:
    async def main() -> Any:
        async with fetch.make_client(timeout=5, concurrency=4) as client:
            return await coro_factory(client)

    return asyncio.run(main())


def get(url: str, **kwargs: Any) -> Coroutine[Any, Any, fetch.Response] | Any:
    options = {"max_bytes": 1_000_000, "deadline": 5.0, "accept": fetch.FEED_ACCEPT, **kwargs}
    return lambda client: fetch.get(
        client, url, guard=options.pop("guard", Guard.feed()), **options
    )


class _ImportAttempts(importlib.abc.MetaPathFinder):
    """Records every import that reaches the finders (one not in sys.modules yet)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        self.names.append(name)
        return None


def test_requests_import_nothing(server: LocalServer) -> None:
    """Once warm, a request imports nothing (an import that fails searches sys.path
    every time: ~0.4 ms of CPU per article page here, ten times that on a Pi)."""
    urls = [server.set(f"/page-{n}", "<html>page</html>") for n in range(6)]
    attempts = _ImportAttempts()

    async def main() -> None:
        async with fetch.make_client(timeout=5, concurrency=4) as client:
            options = {"max_bytes": 1_000_000, "deadline": 5.0, "accept": fetch.PAGE_ACCEPT}
            first = fetch.get(client, urls[0], guard=Guard.feed(), **options)
            await first  # warm: what a first request loads
            sys.meta_path.insert(0, attempts)
            try:
                await asyncio.gather(
                    *(fetch.get(client, url, guard=Guard.feed(), **options) for url in urls[1:])
                )
            finally:
                sys.meta_path.remove(attempts)

    asyncio.run(main())
    assert attempts.names == []


def test_conditional_get_round_trip(server: LocalServer) -> None:
    url = server.set("/feed.xml", "<rss/>", "application/rss+xml")
    first = run(get(url))
    assert first.status == 200 and first.body == b"<rss/>"
    assert first.etag and first.last_modified
    second = run(get(url, etag=first.etag, last_modified=first.last_modified))
    assert second.not_modified and second.body == b""
    assert server.not_modified["/feed.xml"] == 1
    # the validators are sent back exactly as received: a changed feed is a 200 again
    server.set("/feed.xml", "<rss>new</rss>", "application/rss+xml")
    third = run(get(url, etag=first.etag))
    assert third.status == 200 and third.etag != first.etag


def test_polls_of_one_host_share_a_connection_whether_200_or_304(server: LocalServer) -> None:
    """A pass polls many feeds of one host one after the other: one connection carries
    them all (on a Pi with HTTPS, a new connection per feed is a TLS handshake per
    feed). A 304 used to leave its connection unusable: every unchanged feed, most of a
    steady-state pass, opened a new one."""
    urls = [server.set(f"/feed-{n}.xml", "<rss/>", "application/rss+xml") for n in range(4)]

    async def main() -> list[fetch.Response]:
        async with fetch.make_client(timeout=5, concurrency=4) as client:
            found = [await get(url)(client) for url in urls]
            again = [
                await get(url, etag=f.etag, last_modified=f.last_modified)(client)
                for url, f in zip(urls, found, strict=True)
            ]
            return found + again

    answers = asyncio.run(main())
    assert [a.status for a in answers] == [200] * 4 + [304] * 4
    assert server.connections == 1


def test_a_cookie_a_response_sets_goes_with_the_next_request_of_the_pass(
    server: LocalServer,
) -> None:
    """Some sites answer a first visit with a cookie (consent, a load balancer's pin) and
    expect it back. The client keeps what a response sets for the rest of its pass, as
    httpx's jar does (feedsync's skips only the responses that set nothing)."""
    first = server.set("/consent", "<html>ok</html>", headers={"Set-Cookie": "seen=yes; Path=/"})
    plain = server.set("/plain", "<html>plain</html>")
    after = server.set("/after", "<html>after</html>")

    async def main() -> None:
        async with fetch.make_client(timeout=5, concurrency=4) as client:
            await get(plain)(client)
            assert "Cookie" not in server.headers["/plain"]
            await get(first)(client)
            await get(after)(client)

    asyncio.run(main())
    assert server.headers["/after"].get("Cookie") == "seen=yes"


class _ClosingServer:
    """A keep-alive server on 127.0.0.1 that answers one request per connection and then
    closes it without a word (no ``Connection: close``), as servers do with an idle
    connection when their keep-alive time is up."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/feed.xml"
        self.connections = 0
        self.closed = threading.Event()  # the latest connection is closed
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    received = conn.recv(4096)
                    if not received:  # the client went away before asking
                        break
                    request += received
                body = b"<rss/>"
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
            self.closed.set()


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    """The pool asks each idle connection, before it sends on it, whether the server has
    closed it; a wrong "no" sends the next poll into a dead connection and fails it. The
    answer is what the connection has already read (the end of it), not a system call."""
    server = _ClosingServer()

    async def main() -> list[fetch.Response]:
        async with fetch.make_client(timeout=5, concurrency=4) as client:
            first = await get(server.url)(client)
            deadline = asyncio.get_running_loop().time() + 10
            while not server.closed.is_set():  # the server hung up after answering
                assert asyncio.get_running_loop().time() < deadline, "the server never closed"
                await asyncio.sleep(0.01)
            # the end is in this side's kernel already (the server closed before it set
            # the event); the loop hands it to the transport at its next look at the
            # sockets, which the request passes through before the pool asks
            await asyncio.sleep(0)
            server.closed.clear()
            return [first, await get(server.url)(client)]

    try:
        answers = asyncio.run(main())
    finally:
        server.listener.close()
    assert [a.status for a in answers] == [200, 200]
    assert answers[1].body == b"<rss/>"
    assert server.connections == 2  # a new connection, not the closed one


def test_a_read_that_gets_nothing_in_its_time_is_a_read_timeout() -> None:
    """Each read of a connection has its time; nothing in it is httpx's ReadTimeout.
    (feedsync's fetches reach their whole deadline first; this is the connection's.)"""
    silent = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers

    async def main() -> str:
        port = silent.getsockname()[1]
        stream = await connect.open_stream("127.0.0.1", port, Guard(private=True), 5)
        try:
            await stream.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 5)
            with pytest.raises(httpx.ReadTimeout) as timed_out:
                await stream.read(4096, 0.2)
            return str(timed_out.value)
        finally:
            stream.close()

    try:
        said = asyncio.run(main())
    finally:
        silent.close()
    assert said == "timed out reading"


def test_a_large_body_arrives_whole_through_the_read_ahead_limit(server: LocalServer) -> None:
    """A connection reads at most 256 KiB ahead of its reader, then lets the kernel hold
    the rest: a page several times that arrives byte for byte."""
    page = "".join(f"<p>paragraph {n:07d}</p>\n" for n in range(100_000))  # ~2.3 MB
    url = server.set("/big.html", page, "text/html")
    got = run(get(url, max_bytes=5_000_000, accept=fetch.PAGE_ACCEPT))
    assert got.body == page.encode()


def test_the_request_names_feedsync(server: LocalServer) -> None:
    seen: dict[str, str] = {}
    original = server._answer

    def spy(request: Any) -> None:
        seen.update(request.headers)
        original(request)

    server._answer = spy  # type: ignore[method-assign]
    run(get(server.set("/f", "x")))
    assert seen["User-Agent"].startswith("feedsync/")
    assert "gzip" in seen["Accept-Encoding"]


@pytest.mark.parametrize(("status", "permanent"), [(404, False), (500, False), (410, True)])
def test_http_errors_are_fetch_errors(server: LocalServer, status: int, permanent: bool) -> None:
    url = server.set("/x", "nope", status=status)
    with pytest.raises(fetch.FetchError, match=f"HTTP {status}") as error:
        run(get(url))
    assert error.value.permanent is permanent


def test_bodies_over_the_cap_are_refused(server: LocalServer) -> None:
    url = server.set("/big", "x" * 5000)
    with pytest.raises(fetch.FetchError, match="larger than 1000 bytes"):
        run(get(url, max_bytes=1000))


def test_a_slow_server_is_cut_at_the_deadline(server: LocalServer) -> None:
    url = server.set("/slow", "late", delay=2)
    with pytest.raises(fetch.FetchError, match=r"timed out after (\d+\.\d)s") as error:
        run(get(url, deadline=0.3))
    # the time it really took, not a figure from the configuration
    assert 0.3 <= float(error.value.args[0].split()[-1].rstrip("s")) < 2


def test_connection_refused_is_a_one_line_error() -> None:
    with LocalServer() as gone:
        url = gone.url("/feed")
    with pytest.raises(fetch.FetchError, match="cannot connect") as error:
        run(get(url))
    assert "\n" not in str(error.value)


def test_redirects_are_followed_and_loops_stopped(server: LocalServer) -> None:
    target = server.set("/new", "here")
    server.set("/old", "", status=301, headers={"Location": target}, conditional=False)
    moved = run(get(server.url("/old")))
    assert moved.url == target and moved.body == b"here"
    server.set("/a", "", status=302, headers={"Location": "/b"}, conditional=False)
    server.set("/b", "", status=302, headers={"Location": "/a"}, conditional=False)
    with pytest.raises(fetch.FetchError, match="more than 5 redirects"):
        run(get(server.url("/a")))


def test_page_clients_refuse_private_addresses_before_any_request(server: LocalServer) -> None:
    url = server.set("/admin", "router admin")

    async def main() -> fetch.Response:
        async with fetch.make_client(timeout=5, concurrency=2) as client:
            return await fetch.get(
                client, url, max_bytes=1000, deadline=5, accept=fetch.PAGE_ACCEPT, guard=Guard()
            )

    with pytest.raises(
        fetch.FetchError, match=r"refused: 127\.0\.0\.1 is at a private address"
    ) as error:
        asyncio.run(main())
    assert error.value.permanent
    assert server.hits["/admin"] == 0  # the guard is in the connection: nothing was sent


@pytest.mark.parametrize(
    ("address", "private"),
    [
        ("127.0.0.1", True),
        ("10.1.2.3", True),
        ("192.168.0.1", True),
        ("172.16.5.4", True),
        ("169.254.169.254", True),
        ("224.0.0.1", True),
        ("0.0.0.0", True),
        ("::1", True),
        ("fe80::1", True),
        ("fd00::1", True),
        ("::ffff:127.0.0.1", True),
        ("100.64.0.1", True),  # carrier-grade NAT (RFC 6598), a Tailscale network
        ("100.127.255.254", True),
        ("198.18.0.1", True),  # benchmarking
        ("93.184.216.34", False),
        ("100.128.0.1", False),  # just past the CGNAT range
        ("2606:2800:220:1:248:1893:25c8:1946", False),
        ("not-an-ip", True),
    ],
)
def test_private_addresses(address: str, private: bool) -> None:
    assert guard.is_private_address(address) is private


# ---------------------------------------------------------------- the LAN rule
# A public address cannot exist on this machine: where a test needs one, the resolver
# (DNS answers: tests/fakedns.py, tests/test_transport.py) or the address check for
# 127.0.0.1 is replaced, nothing else.


def test_a_feed_records_the_address_that_served_it(server: LocalServer) -> None:
    url = server.set("/feed.xml", "<rss/>", "application/rss+xml")

    async def main() -> list[str | None]:
        async with fetch.make_client(timeout=5, concurrency=2) as client:
            peers = []
            for _ in range(2):  # the second one on the pooled connection
                response = await fetch.get(
                    client, url, max_bytes=1000, deadline=5, accept=fetch.FEED_ACCEPT,
                    guard=Guard.feed(),
                )  # fmt: skip
                peers.append(response.peer)
            return peers

    assert asyncio.run(main()) == ["127.0.0.1", "127.0.0.1"]
    assert server.connections == 1


def _feed_redirecting_to(server: LocalServer, target: str) -> str:
    return server.set("/moved.xml", "", status=302, headers={"Location": target}, conditional=False)


def _poll_feed(url: str) -> fetch.Response:
    async def main() -> fetch.Response:
        async with fetch.make_client(timeout=5, concurrency=2) as client:
            return await fetch.get(
                client, url, max_bytes=1000, deadline=5, accept=fetch.FEED_ACCEPT,
                guard=Guard.feed(),
            )  # fmt: skip

    return asyncio.run(main())


def test_a_feed_on_the_internet_cannot_redirect_onto_the_lan(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = guard.is_private_address
    # the feed's server (127.0.0.1) plays a public one; [::1] stays what it is
    monkeypatch.setattr(guard, "is_private_address", lambda a: a != "127.0.0.1" and real(a))
    port = server.base_url.rsplit(":", 1)[1]
    feed = _feed_redirecting_to(server, f"http://[::1]:{port}/router-admin")
    with pytest.raises(fetch.FetchError, match=r"refused: a redirect from 127\.0\.0\.1 ") as error:
        _poll_feed(feed)
    assert error.value.permanent and "private address (::1)" in str(error.value)


def test_a_feed_on_the_lan_may_redirect_within_the_lan(server: LocalServer) -> None:
    server.set("/feed.xml", "<rss/>", "application/rss+xml")
    port = server.base_url.rsplit(":", 1)[1]
    feed = _feed_redirecting_to(server, f"http://localhost:{port}/feed.xml")
    assert _poll_feed(feed).body == b"<rss/>"


# ---------------------------------------------------------------- https


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An https server on 127.0.0.1 with a self-signed certificate for that address:
    (its feed's URL, the certificate to trust)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip

    class Feed(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<rss><channel><title>over TLS</title></channel></rss>"
            send_answer(self, 200, body, "application/rss+xml")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Feed)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/feed.xml", cert
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fresh_trust() -> Iterator[None]:
    """The process's TLS context made anew, its CA certificates not loaded yet (as in a
    new process), before and after the test."""
    connect.tls_context.cache_clear()
    yield
    connect.tls_context.cache_clear()


def test_https_is_verified_against_the_ca_certificates_of_ssl_cert_file(
    tls_server: tuple[str, Path], fresh_trust: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert = tls_server
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # as httpx honours it
    response = run(get(url))
    assert response.status == 200 and b"over TLS" in response.body
    assert connect.tls_context().cert_store_stats()["x509_ca"] == 1  # that one alone


def test_https_with_a_certificate_nobody_vouches_for_is_refused(
    tls_server: tuple[str, Path], fresh_trust: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = tls_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(fetch.FetchError, match="CERTIFICATE_VERIFY_FAILED"):
        run(get(url))


def test_plain_http_never_builds_the_tls_context(server: LocalServer, fresh_trust: None) -> None:
    """A pass whose feeds are all http (or a cron run with nothing due) does not pay for
    reading the CA bundle (~25-50 ms of CPU here, several times that on a Pi)."""
    url = server.set("/plain.xml", "<rss/>", "application/rss+xml")
    assert run(get(url)).status == 200
    assert connect.tls_context.cache_info().currsize == 0


def test_the_tls_settings_are_the_standard_librarys_defaults(
    fresh_trust: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same flags as ``ssl.create_default_context()`` (what httpx builds; on Python
    3.13+ VERIFY_X509_STRICT and VERIFY_X509_PARTIAL_CHAIN among them), not a context
    of feedsync's own making that misses the ones a new Python adds."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    ours, default = connect.tls_context(), ssl.create_default_context()
    assert ours.verify_flags == default.verify_flags
    assert ours.options == default.options
    assert ours.verify_mode == ssl.CERT_REQUIRED and ours.check_hostname
    assert ours.minimum_version == default.minimum_version


def test_a_missing_ssl_cert_file_is_one_line_naming_it(
    tls_server: tuple[str, Path], fresh_trust: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url, _ = tls_server
    missing = tmp_path / "no-such-bundle.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    with pytest.raises(fetch.FetchError) as error:
        run(get(url))
    assert str(error.value) == f"SSL_CERT_FILE names {missing}, which is not a file"
