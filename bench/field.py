"""The network in the field, measured: feedsync's HTTP layer against stock httpx.

    .venv/bin/python -m bench.field            # 150 polls, 5 dual-stack connects

1. **Stale keep-alive connections**: a server that drops idle connections 0.2 s after an
   answer, polled 150 times at intervals around that time, with two CPU-bound threads
   beside the pass (a busy Pi: the event loop sees a FIN late). Counted: polls that
   failed ("Server disconnected without sending a response" and the like).
2. **Happy Eyeballs**: a dual-stack name whose IPv6 address drops SYNs (a listener on
   [::1] with a full accept queue) and whose IPv4 address answers: the time to the
   answer, with a connect timeout of 10 s.

Both sides run in the same process, interleaved, on 127.0.0.1 / ::1 only. The figures are
counts and times of this machine: compare the two sides, not the absolute values.
"""

from __future__ import annotations

import asyncio
import random
import socket
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from feedsync import fetch
from feedsync.guard import Guard
from feedsync.localserver import dual_stack_with_dead_ipv6

POLLS = 150
IDLE_CLOSE = 0.2


class _DroppingServer:
    """Answers every request at once; closes a connection idle for ``IDLE_CLOSE``."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/feed.xml"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        body = b"<rss/>"
        with conn:
            conn.settimeout(IDLE_CLOSE)
            while True:
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            return
                        data += chunk
                except (TimeoutError, OSError):
                    return  # idle too long: dropped without a word
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


def _burn(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(i * i for i in range(20_000))


async def _polls(get: Callable[[], Awaitable[Any]], seed: int) -> int:
    rng = random.Random(seed)
    failures = 0
    for _ in range(POLLS):
        try:
            await get()
        except (fetch.FetchError, httpx.HTTPError):
            failures += 1
        await asyncio.sleep(rng.uniform(0.15, 0.25))  # around the server's idle time
    return failures


async def _feedsync_stale(url: str, seed: int) -> int:
    async with fetch.make_client(timeout=10, concurrency=4) as client:
        return await _polls(
            lambda: fetch.get(
                client, url, max_bytes=10_000, deadline=10, accept="*/*", guard=Guard.feed()
            ),
            seed,
        )


async def _httpx_stale(url: str, seed: int) -> int:
    async with httpx.AsyncClient(timeout=10) as client:

        async def get() -> None:
            (await client.get(url)).raise_for_status()

        return await _polls(get, seed)


def stale_connections() -> dict[str, int]:
    server = _DroppingServer()
    stop = threading.Event()
    burners = [threading.Thread(target=_burn, args=(stop,), daemon=True) for _ in range(2)]
    for thread in burners:
        thread.start()
    try:
        return {
            "feedsync": asyncio.run(_feedsync_stale(server.url, 1)),
            "httpx": asyncio.run(_httpx_stale(server.url, 1)),
        }
    finally:
        stop.set()
        server.listener.close()


def _dual_stack(answer: Callable[[int], dict[str, float]]) -> dict[str, float]:
    with dual_stack_with_dead_ipv6() as (server, port):
        server.set("/feed.xml", "<rss/>", "application/rss+xml")
        return answer(port)


def happy_eyeballs(runs: int = 5) -> dict[str, list[float]]:
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("dual.test", b"dual.test"):
            return [
                (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", int(port), 0, 0)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port))),
            ]
        return real(host, port, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo  # the standard library's resolver, for both sides
    times: dict[str, list[float]] = {"feedsync": [], "httpx": []}

    async def ours(url: str) -> None:
        async with fetch.make_client(timeout=30, concurrency=4) as client:
            await fetch.get(
                client, url, max_bytes=10_000, deadline=30, accept="*/*", guard=Guard.feed()
            )

    async def stock(url: str) -> None:
        async with httpx.AsyncClient(timeout=httpx.Timeout(30, connect=10)) as client:
            (await client.get(url)).raise_for_status()

    def measure(port: int) -> dict[str, float]:
        url = f"http://dual.test:{port}/feed.xml"
        out = {}
        for name, side in (("feedsync", ours), ("httpx", stock)):
            started = time.monotonic()
            try:
                asyncio.run(side(url))
                out[name] = time.monotonic() - started
            except Exception:  # a failure is a figure too
                out[name] = float("inf")
        return out

    try:
        for _ in range(runs):
            for name, seconds in _dual_stack(measure).items():
                times[name].append(seconds)
    finally:
        socket.getaddrinfo = real
    return times


def main() -> None:
    stale = stale_connections()
    print(f"stale keep-alive connections, failed polls of {POLLS} (server drops idle "
          f"connections after {IDLE_CLOSE}s, two CPU-bound threads beside the pass):")  # fmt: skip
    for name, failures in stale.items():
        print(f"  {name:9} {failures}")
    eyeballs = happy_eyeballs()
    print("dual-stack host whose IPv6 drops SYNs, time to the answer (s), min/median/max:")
    for name, seconds in eyeballs.items():
        print(
            f"  {name:9} {min(seconds):.2f} / {statistics.median(seconds):.2f} / {max(seconds):.2f}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
