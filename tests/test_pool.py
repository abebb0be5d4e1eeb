"""The connection pool under the clients (feedsync/pool.py), against real servers on
127.0.0.1: turns given back whatever ends a request, no more requests or connections at
once than the concurrency. (Reuse of one connection across a host's feeds and never
reusing one the server closed are in tests/test_fetch.py.)"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpcore
import httpx
import pytest

from feedsync import addresses, fetch
from feedsync.guard import Guard
from feedsync.localserver import LocalServer, send_answer
from feedsync.pool import ConnectionPool


async def _get(client: httpx.AsyncClient, url: str, deadline: float = 10.0) -> fetch.Response:
    return await fetch.get(
        client,
        url,
        max_bytes=1_000_000,
        deadline=deadline,
        accept=fetch.FEED_ACCEPT,
        guard=Guard.feed(),
    )


def test_a_request_cut_at_its_deadline_gives_its_turn_back(server: LocalServer) -> None:
    """With one connection allowed, a request cut at its deadline (a server that does not
    answer in time) must not keep its turn: the next feed is polled, not refused with
    "timed out waiting for a free connection"."""
    slow = server.set("/slow.xml", "<rss/>", "application/rss+xml", delay=30)
    fast = server.set("/fast.xml", "<rss/>", "application/rss+xml")

    async def main() -> fetch.Response:
        async with fetch.make_client(timeout=5, concurrency=1) as client:
            with pytest.raises(fetch.FetchError, match="timed out"):
                await _get(client, slow, deadline=0.3)
            return await _get(client, fast)

    assert asyncio.run(main()).status == 200


def test_a_refused_connection_gives_its_turn_back(server: LocalServer) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{closed.getsockname()[1]}/feed.xml"
    closed.close()  # nobody listens there now: the connection is refused
    fast = server.set("/fast.xml", "<rss/>", "application/rss+xml")

    async def main() -> fetch.Response:
        async with fetch.make_client(timeout=5, concurrency=1) as client:
            with pytest.raises(fetch.FetchError, match=r"cannot connect|refused"):
                await _get(client, dead)
            return await _get(client, fast)

    assert asyncio.run(main()).status == 200


class _Gate:
    """A handler that counts the requests it holds at once and holds each until
    released (or 10 s), so that requests sent together are seen together."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held = 0
        self.most = 0
        self.release = threading.Event()

    def __call__(self, request: BaseHTTPRequestHandler) -> None:
        with self.lock:
            self.held += 1
            self.most = max(self.most, self.held)
        self.release.wait(10)
        with self.lock:
            self.held -= 1
        send_answer(request, 200, b"<rss/>", "application/rss+xml")


def test_no_more_requests_at_once_than_the_concurrency(server: LocalServer) -> None:
    gate = _Gate()
    urls = [server.set(f"/feed-{n}.xml", b"", handler=gate) for n in range(5)]

    async def main() -> list[int]:
        async with fetch.make_client(timeout=15, concurrency=2) as client:
            polls = [asyncio.ensure_future(_get(client, url, deadline=15)) for url in urls]
            deadline = time.monotonic() + 10
            while gate.held < 2:  # the first two are at the server
                assert time.monotonic() < deadline, f"only {gate.held} request(s) arrived"
                await asyncio.sleep(0.01)
            gate.release.set()
            return [r.status for r in await asyncio.gather(*polls)]

    assert asyncio.run(main()) == [200] * 5
    assert gate.most == 2


def _open_connections_to(ports: set[int]) -> int:
    """Established TCP connections of this machine whose far end is one of ``ports``
    (the clients' side of connections to those servers)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote_port = int(fields[2].split(":")[1], 16)
        if remote_port in ports and fields[3] == "01":
            count += 1
    return count


@pytest.fixture
def three_servers() -> Iterator[list[LocalServer]]:
    servers = [LocalServer().start() for _ in range(3)]
    yield servers
    for s in servers:
        s.stop()


def test_connections_kept_open_never_exceed_the_concurrency(
    three_servers: list[LocalServer],
) -> None:
    """Idle connections count: a pass that reaches many hosts one after the other keeps
    at most ``concurrency`` connections open (file descriptors, and the servers' own
    slots), closing the oldest idle one to open a new one, and then uses the ones it
    kept again."""
    gate = _Gate()
    urls = [s.set("/feed.xml", "<rss/>", "application/rss+xml") for s in three_servers[:2]]
    urls.append(three_servers[2].set("/feed.xml", b"", handler=gate))
    ports = {int(url.split(":")[2].split("/")[0]) for url in urls}

    async def main() -> int:
        async with fetch.make_client(timeout=15, concurrency=2) as client:
            for url in urls[:2]:
                assert (await _get(client, url)).status == 200
            third = asyncio.ensure_future(_get(client, urls[2], deadline=15))
            deadline = time.monotonic() + 10
            while gate.held < 1:  # the third host's request is at its server
                assert time.monotonic() < deadline, "the third request never arrived"
                await asyncio.sleep(0.01)
            while (open_now := _open_connections_to(ports)) > 2:
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.01)  # a closed socket closes on the loop's turn
            gate.release.set()
            assert (await third).status == 200
            for url in urls[1:]:  # the two kept are the two latest hosts': used again
                assert (await _get(client, url)).status == 200
            return open_now

    assert asyncio.run(main()) == 2
    assert [s.connections for s in three_servers] == [1, 1, 1]


def test_an_idle_connection_past_its_keepalive_time_is_not_reused(server: LocalServer) -> None:
    """A server forgets an idle connection after its own keep-alive time; one idle longer
    than ``keepalive_expiry`` is closed and a new one made, not sent into."""
    url = server.set("/feed.xml", "<rss/>", "application/rss+xml")
    pool = ConnectionPool(
        backend=addresses.GuardedBackend(allow_private=True),
        ssl_context=addresses.ssl_context(),
        max_connections=2,
        max_keepalive=2,
        keepalive_expiry=1.0,  # the second request comes well within it, even on a busy machine
    )

    async def get_once() -> int:
        host = url.split("/")[2].encode("ascii")
        request = httpcore.Request("GET", url, headers=[(b"Host", host)])
        response = await pool.handle_async_request(request)
        try:
            async for _ in response.stream:  # type: ignore[union-attr]
                pass
        finally:
            await response.stream.aclose()  # type: ignore[union-attr]
        return response.status

    async def main() -> list[int]:
        statuses = [await get_once(), await get_once()]  # the second within its time
        reused = server.connections
        await asyncio.sleep(1.2)  # the keep-alive time (1 s) is over: a matter of time alone
        statuses.append(await get_once())
        await pool.aclose()
        assert reused == 1
        return statuses

    assert asyncio.run(main()) == [200, 200, 200]
    assert server.connections == 2
