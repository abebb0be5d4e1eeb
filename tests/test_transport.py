"""The HTTP layer on a network that is not the lab's: DNS answers that change between
lookups, a LAN host's connection left open in the pool, a dual-stack host whose IPv6 drops
packets, servers that close idle connections or send bytes they should not.

A public address cannot exist on this machine: DNS answers are replaced at the standard
library (``socket.getaddrinfo``, which the event loop's resolver calls), 127.0.0.1 plays a
public address where a test says so, and [::1] stays what it is: the LAN.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from feedsync import discover, fetch, guard
from feedsync.guard import Guard
from feedsync.localserver import LocalServer, dual_stack_with_dead_ipv6


class FakeDNS:
    """Names answered from ``answers`` (a list of addresses each, changeable while the
    test runs), every other name as the real resolver says; counts the lookups."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.answers: dict[str, list[str]] = {}
        self.lookups: list[str] = []
        real = socket.getaddrinfo

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode("ascii") if isinstance(host, bytes) else host
            if name not in self.answers:
                return real(host, port, *args, **kwargs)
            self.lookups.append(name)
            return [
                (
                    socket.AF_INET6 if ":" in a else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (a, int(port), 0, 0) if ":" in a else (a, int(port)),
                )
                for a in self.answers[name]
            ]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    return FakeDNS(monkeypatch)


@pytest.fixture
def public_v4(monkeypatch: pytest.MonkeyPatch) -> None:
    """127.0.0.1 plays a public address (the publisher's server); ::1 is the LAN."""
    real = guard.is_private_address
    monkeypatch.setattr(guard, "is_private_address", lambda a: a != "127.0.0.1" and real(a))


@pytest.fixture
def lan() -> Iterator[LocalServer]:
    """A LAN host's server (a router's admin page): on [::1]."""
    with LocalServer("::1") as server:
        yield server


def _fetch(
    urls: list[tuple[str, Guard]],
    *,
    concurrency: int = 4,
    deadline: float = 10,
    timeout: float | None = None,
) -> list[fetch.Response | fetch.FetchError]:
    """GET each URL in turn with its guard, on one client (one pool); ``timeout``: the
    client's (connect: up to 10 s), ``deadline``: each request's in all."""

    async def main() -> list[fetch.Response | fetch.FetchError]:
        out: list[fetch.Response | fetch.FetchError] = []
        client_timeout = timeout or deadline
        async with fetch.make_client(timeout=client_timeout, concurrency=concurrency) as client:
            for url, rule in urls:
                try:
                    out.append(
                        await fetch.get(
                            client,
                            url,
                            max_bytes=100_000,
                            deadline=deadline,
                            accept=fetch.FEED_ACCEPT,
                            guard=rule,
                        )
                    )
                except fetch.FetchError as exc:
                    out.append(exc)
        return out

    return asyncio.run(main())


# ---------------------------------------------------------------- the guard on every path


def test_a_redirect_onto_the_lan_is_refused_on_a_connection_the_pool_kept(
    server: LocalServer, lan: LocalServer, dns: FakeDNS, public_v4: None
) -> None:
    """A LAN feed of nas.test leaves its connection idle in the pool; a feed on the
    internet then redirects to nas.test: the reused connection leads to a private
    address, so the hop is refused as a new connection would be, and nothing is sent."""
    port = lan.base_url.rsplit(":", 1)[1]
    dns.answers.update({"nas.test": ["::1"], "pub.test": ["127.0.0.1"]})
    lan.set("/feed.xml", "<rss/>", "application/rss+xml")
    lan.set("/admin", "the router's admin page")
    server.set("/moved.xml", "", status=302, conditional=False,
               headers={"Location": f"http://nas.test:{port}/admin"})  # fmt: skip
    public = server.url("/moved.xml").replace("127.0.0.1", "pub.test")
    first, second = _fetch(
        [(f"http://nas.test:{port}/feed.xml", Guard.feed()), (public, Guard.feed())]
    )
    assert isinstance(first, fetch.Response) and first.peer == "::1"
    assert isinstance(second, fetch.FetchError) and second.permanent
    assert str(second) == (
        "refused: a redirect from pub.test (127.0.0.1, on the internet) to nas.test, "
        "a private address (::1)"
    )
    assert lan.hits["/admin"] == 0
    assert lan.connections == 1  # the LAN feed's own, then nothing new


def test_a_redirect_to_the_feeds_own_name_that_now_answers_private_is_refused(
    server: LocalServer, lan: LocalServer, dns: FakeDNS, public_v4: None
) -> None:
    """The feed's own name on another port: a second lookup now answers a private
    address (rebinding). The hop is judged by the address it would connect to."""
    lan_port = lan.base_url.rsplit(":", 1)[1]
    lan.set("/admin", "the router's admin page")
    dns.answers["pub.test"] = ["127.0.0.1"]
    feed = server.set("/feed.xml", "", status=302, conditional=False,
                      headers={"Location": f"http://pub.test:{lan_port}/admin"})  # fmt: skip

    class Rebind(dict[str, list[str]]):
        def __getitem__(self, name: str) -> list[str]:  # first lookup public, then private
            answer = super().__getitem__(name)
            super().__setitem__(name, ["::1"])
            return answer

    dns.answers = Rebind(dns.answers)
    (result,) = _fetch([(feed.replace("127.0.0.1", "pub.test"), Guard.feed())])
    assert isinstance(result, fetch.FetchError) and result.permanent
    assert "to pub.test, a private address (::1)" in str(result)
    assert lan.hits["/admin"] == 0 and lan.connections == 0


def test_every_hop_is_judged_not_only_the_first_redirect(
    server: LocalServer, lan: LocalServer, dns: FakeDNS, public_v4: None
) -> None:
    """internet -> internet -> LAN: the third hop is refused."""
    lan_port = lan.base_url.rsplit(":", 1)[1]
    lan.set("/admin", "the router's admin page")
    dns.answers.update({"a.test": ["127.0.0.1"], "b.test": ["127.0.0.1"], "nas.test": ["::1"]})
    server.set("/one", "", status=302, conditional=False,
               headers={"Location": server.url("/two").replace("127.0.0.1", "b.test")})  # fmt: skip
    server.set("/two", "", status=302, conditional=False,
               headers={"Location": f"http://nas.test:{lan_port}/admin"})  # fmt: skip
    (result,) = _fetch([(server.url("/one").replace("127.0.0.1", "a.test"), Guard.feed())])
    assert isinstance(result, fetch.FetchError) and "to nas.test, a private address" in str(result)
    assert server.hits["/two"] == 1 and lan.hits["/admin"] == 0


def test_an_article_link_is_refused_on_a_connection_a_lan_feed_left_open(
    lan: LocalServer, dns: FakeDNS
) -> None:
    """A page whose entry came from the internet may not ride the pooled connection a
    LAN feed of that host opened: the guard is asked at reuse, with the peer address."""
    port = lan.base_url.rsplit(":", 1)[1]
    dns.answers["nas.test"] = ["::1"]
    lan.set("/feed.xml", "<rss/>", "application/rss+xml")
    lan.set("/admin", "the router's admin page")
    feed, page = _fetch(
        [
            (f"http://nas.test:{port}/feed.xml", Guard.feed()),
            (
                f"http://nas.test:{port}/admin",
                Guard.article(allow_private=False, lan_host=None, lan_hosts=()),
            ),
        ]
    )
    assert isinstance(feed, fetch.Response)
    assert isinstance(page, fetch.FetchError) and page.permanent
    assert lan.hits["/admin"] == 0


def test_a_public_page_cannot_lead_discovery_onto_the_lan(
    server: LocalServer, lan: LocalServer, dns: FakeDNS, public_v4: None
) -> None:
    """``feedsync add http://pub.test/`` of a page naming a feed at a LAN address: the
    candidate is refused, and no request reaches the LAN host."""
    lan_port = lan.base_url.rsplit(":", 1)[1]
    dns.answers.update({"pub.test": ["127.0.0.1"], "nas.test": ["::1"]})
    lan.set("/feed.xml", "<rss><channel><title>LAN</title></channel></rss>", "application/rss+xml")
    link = f"http://nas.test:{lan_port}/feed.xml"
    page = server.set(
        "/", f'<html><head><link rel="alternate" type="application/rss+xml" href="{link}">'
        "</head><body>news</body></html>",
    )  # fmt: skip
    with pytest.raises(discover.NoFeed, match="refused") as error:
        asyncio.run(
            discover.find_feed(
                page.replace("127.0.0.1", "pub.test"),
                deadline=5,
                max_bytes=100_000,
                agent="feedsync-test",
            )
        )
    assert "private address (::1)" in str(error.value)
    assert lan.hits["/feed.xml"] == 0 and lan.connections == 0


def test_a_lan_page_may_name_a_lan_feed(lan: LocalServer, dns: FakeDNS) -> None:
    port = lan.base_url.rsplit(":", 1)[1]
    dns.answers["nas.test"] = ["::1"]
    lan.set("/feed.xml", "<rss><channel><title>LAN</title></channel></rss>", "application/rss+xml")
    lan.set("/", '<html><head><link rel="alternate" type="application/rss+xml" '
            'href="/feed.xml"></head></html>')  # fmt: skip
    found = asyncio.run(
        discover.find_feed(
            f"http://nas.test:{port}/", deadline=5, max_bytes=100_000, agent="feedsync-test"
        )
    )
    assert found.url == f"http://nas.test:{port}/feed.xml"


# ---------------------------------------------------------------- Happy Eyeballs


def test_a_dual_stack_host_whose_ipv6_drops_packets_is_reached_over_ipv4(
    dns: FakeDNS,
) -> None:
    """The IPv6 address is tried first and never answers; the IPv4 one, started while
    the first still tries, connects: the feed is fetched, not "timed out"."""
    with dual_stack_with_dead_ipv6() as (server, port):
        server.set("/feed.xml", "<rss/>", "application/rss+xml")
        dns.answers["dual.test"] = ["::1", "127.0.0.1"]
        (result,) = _fetch([(f"http://dual.test:{port}/feed.xml", Guard.feed())])
    assert isinstance(result, fetch.Response), result
    assert result.body == b"<rss/>" and result.peer == "127.0.0.1"


def test_a_host_that_answers_on_no_address_says_how_long_it_tried(dns: FakeDNS) -> None:
    with dual_stack_with_dead_ipv6() as (server, port):
        server.stop()  # nobody on 127.0.0.1 either: that one is refused at once
        dns.answers["dead.test"] = ["::1"]
        (result,) = _fetch(
            [(f"http://dead.test:{port}/feed.xml", Guard.feed())], timeout=1, deadline=5
        )
    assert isinstance(result, fetch.FetchError)
    said = str(result)
    assert (
        said.startswith("cannot connect: timed out after ")
        and "connecting to dead.test ([::1])" in said
    )
    elapsed = float(said.split("after ")[1].split("s ")[0])
    assert 0.9 <= elapsed < 5  # the time it really took, not a configured figure


# ---------------------------------------------------------------- connections that die


class RawServer:
    """A server on 127.0.0.1 whose every connection is handled by ``serve(conn, n)``
    (``n``: the connection's number, from 1); counts connections and requests."""

    def __init__(self, serve: Callable[[socket.socket, int], None]):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/feed.xml"
        self.connections = 0
        self._serve = serve
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(
                target=self._handle, args=(conn, self.connections), daemon=True
            ).start()

    def _handle(self, conn: socket.socket, number: int) -> None:
        with conn:
            self._serve(conn, number)

    def close(self) -> None:
        self.listener.close()


def read_request(conn: socket.socket) -> bool:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return False
        data += chunk
    return True


def answer(body: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\nContent-Length: %d\r\n\r\n%s"
        % (
            len(body),
            body,
        )
    )


def test_a_get_on_a_connection_the_server_closed_as_it_went_is_sent_again() -> None:
    """The server reads the second request of a kept connection and closes without a
    word (its keep-alive time ran out as the request arrived): the GET goes again, once,
    on a new connection, and the feed is polled, not failed."""

    def serve(conn: socket.socket, number: int) -> None:
        if read_request(conn):
            conn.sendall(answer(b"<rss>%d</rss>" % number))
        read_request(conn)  # the next request on this connection: dropped unanswered

    server = RawServer(serve)
    try:
        results = _fetch([(server.url, Guard.feed()), (server.url, Guard.feed())])
    finally:
        server.close()
    assert [r.body for r in results if isinstance(r, fetch.Response)] == [
        b"<rss>1</rss>",
        b"<rss>2</rss>",
    ]
    assert server.connections == 2


def test_a_connection_the_server_closed_is_not_reused_while_the_loop_was_busy() -> None:
    """The server closes an idle connection; the event loop has not read the FIN yet (a
    busy machine: the loop was blocked) when the next poll asks the pool. The socket
    itself is asked, and a new connection is made: no request is sent into the dead one."""
    closed = threading.Event()

    def serve(conn: socket.socket, number: int) -> None:
        if read_request(conn):
            conn.sendall(answer(b"<rss/>"))
        conn.shutdown(socket.SHUT_RDWR)
        closed.set()

    server = RawServer(serve)

    async def main() -> list[bytes]:
        async with fetch.make_client(timeout=5, concurrency=2) as client:
            options: dict[str, Any] = {"max_bytes": 1000, "deadline": 5, "accept": "*/*"}
            first = await fetch.get(client, server.url, guard=Guard.feed(), **options)
            assert closed.wait(10), "the server never closed"  # blocks the loop on purpose
            second = await fetch.get(client, server.url, guard=Guard.feed(), **options)
            return [first.body, second.body]

    try:
        assert asyncio.run(main()) == [b"<rss/>", b"<rss/>"]
    finally:
        server.close()
    assert server.connections == 2


@pytest.mark.parametrize(
    "first",
    [
        # a 304 that carries a body
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 68\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 19\r\n\r\n<rss>poisoned</rss>",
        # a Content-Length shorter than the body
        b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n<rss/>"
        b"HTTP/1.1 200 OK\r\nContent-Length: 19\r\n\r\n<rss>poisoned</rss>",
        # two answers in one write
        answer(b"<rss/>") + answer(b"<rss>poisoned</rss>"),
    ],
    ids=["304-with-body", "short-content-length", "two-answers-in-one-write"],
)
def test_bytes_left_after_an_answer_never_become_the_next_answer(first: bytes) -> None:
    """The next feed on the connection would take them for its own answer: the
    connection is closed, and the next request gets a connection and an answer of its
    own."""

    def serve(conn: socket.socket, number: int) -> None:
        while read_request(conn):
            conn.sendall(first if number == 1 else answer(b"<rss>true</rss>"))

    server = RawServer(serve)
    try:
        results = _fetch([(server.url, Guard.feed()), (server.url, Guard.feed())])
    finally:
        server.close()
    second = results[1]
    assert isinstance(second, fetch.Response) and second.body == b"<rss>true</rss>"
    assert server.connections == 2
