"""Exactly once across processes: daemons, waves of manual runs, cron, and crashes.

Both engines: an SQLite file shared by the processes of one machine, and a PostgreSQL
database, where two daemons poll side by side as pollers on two machines would.

A local news site with overlapping category feeds keeps publishing while feedsync
processes work on one database; some article pages fail on their first request. At the
end every article is in `news` exactly once, and the server's own counters show how
often each page was asked for.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import hostile
import pytest
import sitegen
from conftest import BACKENDS, FeedsyncEnv, RunningDaemon, Site, wait_until
from sitegen import Item

pytestmark = pytest.mark.parametrize("backend", BACKENDS, indirect=True)

CATEGORIES = 12


class NewsSite:
    """Category feeds that keep growing; each story in three of them."""

    def __init__(self, site: Site, seed: int):
        self.site = site
        self.rng = random.Random(seed)
        self.feeds: dict[str, list[Item]] = {f"cat{n}.xml": [] for n in range(CATEGORIES)}
        self.expected: set[tuple[str, str]] = set()
        self.injected: dict[str, int] = {}  # article path -> failures served before success
        self.count = 0
        self._lock = threading.Lock()

    def publish(self, stories: int) -> None:
        with self._lock:
            for _ in range(stories):
                n = self.count
                self.count += 1
                slug, title = f"story-{n}", f"Story number {n}"
                if n % 7 == 3:  # one story in seven fails on its first request
                    html = sitegen.article_page(title, slug)
                    url = self.site.server.set(
                        f"/articles/{slug}", b"", handler=hostile.flaky(html, failures=1)
                    )
                    self.injected[f"/articles/{slug}"] = 1
                else:
                    url = self.site.page(slug, title)
                for feed in self.rng.sample(sorted(self.feeds), 3):
                    self.feeds[feed].append(Item(title, url, None))
                self.expected.add((url, title))
            for name, items in self.feeds.items():
                self.site.feed(
                    name, items[-40:], fmt=["rss2", "atom", "rdf"][int(name[3:-4]) % 3], delay=0.02
                )

    def urls(self) -> list[str]:
        return [self.site.url(f"/feeds/{name}") for name in self.feeds]

    def article_hits(self) -> dict[str, int]:
        return self.site.article_hits()


@contextlib.contextmanager
def publishing(news: NewsSite, every: float = 0.4) -> Iterator[None]:
    """New stories keep appearing while the block runs."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            news.publish(2)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)


def news_rows(env: FeedsyncEnv) -> list[tuple[str, str]]:
    return [(url, title) for url, title in env.query("SELECT url, title FROM news")]


def held_claims(env: FeedsyncEnv) -> int:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return int(
        env.scalar(
            "SELECT (SELECT count(*) FROM news_summary WHERE lease_until >= ?) + "
            "(SELECT count(*) FROM feeds WHERE lease_until >= ?)",
            now,
            now,
        )
    )


def _mapped_shm_inodes() -> set[int]:
    """The inodes of the /dev/shm files some live process has mapped. A named semaphore
    in use is mapped by every process that opened it; glibc maps it under a temporary
    name before linking it to its real one, so the inode, not the path, identifies it."""
    inodes: set[int] = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        with contextlib.suppress(OSError):
            for line in maps.read_text().splitlines():
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].startswith("/dev/shm/"):
                    inodes.add(int(fields[4]))
    return inodes


@pytest.fixture
def leaked_semaphores() -> Iterator[None]:
    """SIGKILLing a whole process group kills multiprocessing's resource tracker too, so
    its named semaphores stay in /dev/shm (a real power cut empties /dev/shm anyway):
    the test removes the ones its kills left, and only those no live process maps (the
    semaphores of other feedsync processes on the machine are theirs: removing one
    crashes their extraction workers, which the benchmark once did)."""
    shm = Path("/dev/shm")
    before = set(shm.glob("sem.mp-*")) if shm.is_dir() else set()
    yield
    if shm.is_dir():
        in_use = _mapped_shm_inodes()
        for path in set(shm.glob("sem.mp-*")) - before:
            with contextlib.suppress(OSError):
                if path.stat().st_ino not in in_use:
                    path.unlink()


SETTINGS = {
    "daemon": {"tick": "1s"},
    "poll": {
        "interval": "1s",
        "min_interval": "1s",
        "max_interval": "2s",
        "concurrency": 4,
        "per_host": 4,
    },
}


def test_a_daemon_and_waves_of_runs_fetch_every_article_exactly_once(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    news = NewsSite(site, seed=1)
    news.publish(24)
    # every run snapshots at its end and the daemon every second: snapshot writers
    # meet all the time, and must take turns (the snapshot lock)
    fs_card.configure(news.urls(), storage={"save_interval": "1s"}, **SETTINGS)
    daemon = start_daemon()
    outputs: list[tuple[int, str]] = []
    with publishing(news):
        for _ in range(3):  # waves of four manual runs beside the daemon
            wave = []
            for _ in range(4):
                wave.append(fs_card.start("run"))
                time.sleep(0.1)
            for process in wave:
                out, err = process.communicate(timeout=180)
                outputs.append((process.returncode, out + err))
    wait_until(lambda: set(news_rows(fs_card)) >= news.expected, "the daemon to catch up", 120)
    outputs.append((fs_card.run("run").returncode, ""))
    assert daemon.stop() == 0

    for code, text in outputs:
        assert code == 0, text
        assert "locked" not in text and "busy" not in text.lower(), text
    assert "Traceback" not in daemon.output() and "locked" not in daemon.output()
    rows = news_rows(fs_card)
    assert len(rows) == len(set(rows)) == len(news.expected)
    assert set(rows) == news.expected
    # each page asked for exactly once, plus once more for each failure it was made to serve
    hits = news.article_hits()
    assert hits == {path: 1 + news.injected.get(path, 0) for path in hits}
    assert len(hits) == len(news.expected) and news.injected
    print(
        f"{fs_card.backend}: {len(rows)} articles once each, {sum(hits.values())} page "
        f"requests ({len(news.injected)} pages made to fail once), {len(outputs)} runs"
    )
    if fs_card.backend == "postgresql":
        return  # no snapshots there
    assert fs_card.snapshot_path is not None  # the last snapshot is sound and complete
    with sqlite3.connect(f"file:{fs_card.snapshot_path}?mode=ro&immutable=1", uri=True) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert set(conn.execute("SELECT url, title FROM news")) == news.expected
    assert not [p for p in fs_card.snapshot_path.parent.iterdir() if ".tmp-" in p.name]


def test_processes_killed_at_random_instants_cost_a_bounded_number_of_refetches(
    fs_card: FeedsyncEnv,
    site: Site,
    start_daemon: Callable[..., RunningDaemon],
    leaked_semaphores: None,
) -> None:
    rng = random.Random(os.environ.get("FEEDSYNC_TEST_SEED", "7"))
    news = NewsSite(site, seed=2)
    news.publish(24)
    # One article in work per process (fetched, extracted, saved before the next is
    # fetched): a process killed at any instant has fetched at most one page it did not
    # save, so the bound below is one refetch per kill.
    concurrency = 1
    fs_card.configure(
        news.urls(),
        extract={"lease": "3s"},
        **{
            **SETTINGS,
            "poll": {**SETTINGS["poll"], "lease": "3s", "concurrency": 1, "per_host": 1},
        },
    )
    kills = 0
    # on PostgreSQL, two daemons: the pollers of two machines sharing one database
    daemons = [start_daemon() for _ in range(2 if fs_card.backend == "postgresql" else 1)]
    failures: list[str] = []
    with publishing(news):
        for round_ in range(3):
            wave = [fs_card.start("run") for _ in range(4)]
            for process in rng.sample(wave, 2):  # two of each wave die mid-run
                time.sleep(rng.uniform(0.1, 1.2))
                with contextlib.suppress(ProcessLookupError):  # it may have just finished
                    if process.poll() is None:
                        os.killpg(process.pid, signal.SIGKILL)
                        kills += 1
            if round_ == 1:  # and a daemon dies once too, and comes back
                os.killpg(daemons[0].process.pid, signal.SIGKILL)
                daemons[0].process.wait()
                kills += 1
                daemons[0] = start_daemon()
            for process in wave:
                out, err = process.communicate(timeout=180)
                assert process.returncode in (0, -signal.SIGKILL), (process.returncode, err)
                if process.returncode == 0:
                    failures += [line for line in (out + err).splitlines() if "error" in line]
    # the claims of the dead expire (3 s); the living finish the work
    wait_until(lambda: held_claims(fs_card) == 0, "the claims of the killed processes to end", 60)
    final = fs_card.run("run")
    # (a deadline, not a pause: the retries of injected failures wait out their backoff)
    wait_until(lambda: set(news_rows(fs_card)) >= news.expected, "the queue to be done", 300)
    for daemon in daemons:
        assert daemon.stop() == 0
        assert "Traceback" not in daemon.output(), daemon.output()
    assert "locked" not in final.stdout + final.stderr
    assert not [f for f in failures if "storage error" in f or "internal error" in f], failures

    rows = news_rows(fs_card)
    assert len(rows) == len(set(rows)) and set(rows) == news.expected
    hits = news.article_hits()
    extra = sum(n - 1 - news.injected.get(path, 0) for path, n in hits.items())
    # a killed process can have been working on at most `concurrency` pages: one
    assert 0 <= extra <= kills * concurrency, (extra, kills)
    print(
        f"{fs_card.backend}: {len(rows)} articles once each, {sum(hits.values())} page "
        f"requests, {extra} refetches after {kills} kills (bound {kills * concurrency})"
    )
    assert all(n >= 1 + news.injected.get(path, 0) for path, n in hits.items())


def test_pollers_side_by_side_poll_each_due_feed_once(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    """Two daemons on one database split the due feeds: each feed is polled by one of
    them. The second starts while the first is mid-way: it lists feeds that are due, and
    must not poll one the first has polled (and released) since."""
    feeds = [f"f{n}.xml" for n in range(60)]
    for n, name in enumerate(feeds):
        story = f"Story {n}"
        site.feed(name, [Item(story, site.page(f"s{n}", story), None)], delay=0.3)
    fs_card.configure(
        [site.url(f"/feeds/{name}") for name in feeds],
        daemon={"tick": "1s"},
        poll={
            "interval": "1h",
            "min_interval": "1h",
            "max_interval": "2h",
            "concurrency": 2,
            "per_host": 2,
        },
    )

    def polled() -> int:
        return sum(site.hits(f"/feeds/{name}") > 0 for name in feeds)

    daemons = [start_daemon()]
    wait_until(lambda: polled() >= 4, "the first daemon to be polling")
    daemons.append(start_daemon())
    wait_until(lambda: polled() == len(feeds), "every feed to be polled", 120)
    wait_until(
        lambda: fs_card.query("SELECT count(*) FROM feeds WHERE last_poll_at IS NULL")[0][0] == 0,
        "every poll to be recorded",
    )
    for daemon in daemons:
        assert daemon.stop() == 0
        assert "Traceback" not in daemon.output(), daemon.output()
    twice = {name: site.hits(f"/feeds/{name}") for name in feeds}
    assert all(hits == 1 for hits in twice.values()), {n: h for n, h in twice.items() if h > 1}
