"""A host in trouble within one pass, through the real ``feedsync run``: a host that says
429 is asked nothing more in that pass and backs off once, a busy host does not keep the
others waiting, an unreachable host is tried once and all its work settled.

Two host names reach the one loopback server (politeness is per host name): 127.0.0.1
and `localhost`. The server notes the order in which requests arrive; the assertions are
on that order, on request counts and on what the database records, never on durations.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler

import pytest
from conftest import FeedsyncEnv, Site
from sitegen import Item

from feedsync.localserver import LocalServer

NOW = datetime.now(UTC).replace(microsecond=0)


class OrderedServer(LocalServer):
    """The local server, noting the path of each request as it arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []

    def _answer(self, request: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.order.append(request.path)
        super()._answer(request)


@pytest.fixture
def server() -> Iterator[OrderedServer]:
    with OrderedServer() as running:
        yield running


def other_host(url: str) -> str:
    """The same server under a second host name."""
    return url.replace("127.0.0.1", "localhost")


class Crowd:
    """A host that refuses with 429, holding each answer until ``size`` requests are in
    (or a deadline passes): requests that are in flight together are all refused, as they
    are by a real server that is overloaded."""

    def __init__(self, size: int, headers: dict[str, str] | None = None):
        self.size = size
        self.headers = headers or {}
        self.arrived = 0
        self._arrival = threading.Condition()

    def __call__(self, request: BaseHTTPRequestHandler) -> None:
        with self._arrival:
            self.arrived += 1
            self._arrival.notify_all()
            self._arrival.wait_for(lambda: self.arrived >= self.size, timeout=10)
        request.send_response(429)
        for name, value in self.headers.items():
            request.send_header(name, value)
        request.send_header("Content-Length", "0")
        request.end_headers()


def host_row(fs: FeedsyncEnv, host: str) -> tuple[str, int]:
    ((not_before, count),) = fs.query(
        "SELECT not_before, backoff_count FROM hosts WHERE host = ?", host
    )
    return not_before, count


def seconds_from_now(stamp: str) -> float:
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (moment - datetime.now(UTC)).total_seconds()


# ---------------------------------------------------------------- 429 and 503


def test_a_host_that_says_429_is_asked_nothing_more_in_that_pass(
    fs: FeedsyncEnv, site: Site
) -> None:
    """Ten feeds on one host that answers 429 with an hour's Retry-After: the requests in
    flight when the first answer came are all it gets; the rest of its feeds are left for
    when the hour is over (not even a conditional GET), and the host backs off once."""
    crowd = Crowd(2, {"Retry-After": "3600"})
    busy = [other_host(site.server.set(f"/busy/{n}.xml", b"", handler=crowd)) for n in range(10)]
    good = site.feed("good.xml", [Item("Good story", site.page("good"), NOW)])
    fs.configure([*busy, good], poll={"per_host": 2})

    stats = fs.run_json()

    asked = sum(site.hits(f"/busy/{n}.xml") for n in range(10))
    assert 1 <= asked <= 2, asked  # per_host 2: at most the two in flight together
    assert stats["deferred"] == 10 - asked and stats["feed_errors"] == asked
    not_before, count = host_row(fs, "localhost")
    assert count == 1  # one block, however many requests it refused
    assert 3500 < seconds_from_now(not_before) <= 3601
    assert fs.scalar("SELECT count(*) FROM feeds WHERE last_poll_at IS NULL") == 10 - asked
    assert fs.scalar("SELECT count(*) FROM news WHERE title = 'Good story'") == 1


def test_one_plain_429_backs_its_host_off_a_minute_and_spends_no_attempt(
    fs: FeedsyncEnv, site: Site
) -> None:
    """Ten articles on a host that answers 429 without Retry-After: the first block is a
    minute (not the 6 h cap), no article spends an attempt, and the articles queued
    behind the refused requests are not sent."""
    crowd = Crowd(2)
    pages = [other_host(site.server.set(f"/busy/{n}", b"", handler=crowd)) for n in range(10)]
    feed = site.feed(
        "f.xml",
        [Item(f"Story {n}", url, NOW - timedelta(minutes=n)) for n, url in enumerate(pages)],
    )
    fs.configure([feed], poll={"per_host": 2}, fetch={"lan_hosts": ["localhost"]})

    stats = fs.run_json()

    asked = sum(site.hits(f"/busy/{n}") for n in range(10))
    assert 1 <= asked <= 2, asked
    assert stats["deferred"] == 10 and stats["extract_failed"] == 0
    assert fs.query("SELECT state, attempts, count(*) FROM news_summary GROUP BY 1, 2") == [
        ("new", 0, 10)
    ]
    not_before, count = host_row(fs, "localhost")
    assert count == 1
    assert seconds_from_now(not_before) <= 61  # one minute: the first block in a row


# ---------------------------------------------------------------- a busy host


def test_a_busy_host_does_not_keep_another_hosts_feed_waiting(fs: FeedsyncEnv, site: Site) -> None:
    """Thirty feeds on one host, one request at a time and spaced by host_delay, and one
    feed on another host listed after them: the other host's feed is asked for before
    the busy host's queue is half done, not after all of it."""
    busy = [site.feed(f"busy-{n}.xml", []) for n in range(30)]
    other = other_host(site.feed("other.xml", []))
    fs.configure(
        [*busy, other], poll={"concurrency": 2, "per_host": 1}, fetch={"host_delay": "0.1s"}
    )

    fs.run("run")

    order = site.server.order  # type: ignore[attr-defined]
    assert len(order) == 31 and set(order) == {
        *(f"/feeds/busy-{n}.xml" for n in range(30)),
        "/feeds/other.xml",
    }
    assert order.index("/feeds/other.xml") < 15, order


# ---------------------------------------------------------------- an unreachable host


@contextmanager
def refused_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound, never listening (held for
    the test, so no other process can take it meanwhile)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def tried(rows: list[tuple[str]]) -> int:
    """How many of these last_errors come from a request really sent."""
    return sum(1 for (error,) in rows if "not tried" not in error)


def test_an_unreachable_host_is_tried_once_and_all_its_work_settled(
    fs: FeedsyncEnv, site: Site
) -> None:
    """A host that refuses connections and a name that does not resolve (.invalid never
    does, no network needed): each is tried once in the pass; every one of its feeds and
    articles is recorded failed with the reason, to be retried later as any failure."""
    with refused_port() as port:
        refused = [f"http://localhost:{port}/articles/r{n}" for n in range(6)]
        nowhere = [f"http://name.invalid/articles/n{n}" for n in range(6)]
        items = [
            Item(f"Story {n}", url, NOW - timedelta(minutes=n))
            for n, url in enumerate(refused + nowhere)
        ]
        feed = site.feed("f.xml", items)
        dead_feeds = ["http://name.invalid/feeds/a.xml", "http://name.invalid/feeds/b.xml"]
        # per_host 1: the next request to a host starts only once the last one is over
        fs.configure([feed, *dead_feeds], poll={"per_host": 1}, fetch={"lan_hosts": ["localhost"]})

        stats = fs.run_json()

    assert stats["extract_failed"] == 12 and stats["feed_errors"] == 2, stats
    articles = fs.query("SELECT url, state, attempts, last_error FROM news_summary")
    assert len(articles) == 12
    assert all(state == "failed" and attempts == 1 for _, state, attempts, _ in articles)
    assert all(error.startswith("cannot connect") for _, _, _, error in articles), articles
    feeds = fs.query("SELECT last_error, error_count FROM feeds WHERE url LIKE '%name.invalid%'")
    assert len(feeds) == 2 and all(count == 1 for _, count in feeds)
    assert all("cannot resolve name.invalid" in error for error, _ in feeds), feeds
    on_refused = [(e,) for url, _, _, e in articles if url.startswith("http://localhost")]
    on_nowhere = [(e,) for url, _, _, e in articles if "name.invalid" in url]
    assert tried(on_refused) == 1, on_refused
    assert tried(on_nowhere + [(e,) for e, _ in feeds]) == 1, (on_nowhere, feeds)


def test_a_dead_port_of_a_host_does_not_settle_the_live_ones_work(
    fs: FeedsyncEnv, site: Site
) -> None:
    """Found by tests/test_pipeline_fuzz.py: a feed redirecting to a dead port of the
    host the other feeds live on (or an entry linking to one) made every later request
    to that host "not tried: could not be reached" for the pass, the good story beside
    it included. What is unreachable is a host and port."""
    with refused_port() as port:
        dead = f"http://127.0.0.1:{port}/feed.xml"
        moved = site.server.set(
            "/moved.xml", "", status=302, headers={"Location": dead}, conditional=False
        )
        links_dead = site.feed(
            "links-dead.xml",
            [
                Item("Dead link", f"http://127.0.0.1:{port}/article", NOW),
                Item("Good story", site.page("good-story"), NOW - timedelta(minutes=1)),
            ],
        )
        # per_host 1: one request at a time, the dead ones first
        fs.configure([moved, links_dead], poll={"per_host": 1, "concurrency": 1})
        fs.run_json()
    assert "cannot connect" in fs.scalar("SELECT last_error FROM feeds WHERE url = ?", moved)
    states = dict(fs.query("SELECT title, state FROM news_summary"))
    assert states == {"Dead link": "failed", "Good story": "done"}, states
    assert site.hits("/articles/good-story") == 1
