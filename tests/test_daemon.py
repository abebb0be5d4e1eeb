"""`feedsync daemon` as systemd runs it: a real NOTIFY_SOCKET, real signals, a real server."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import sitegen
from conftest import NOW, CardMount, FakeClock, FeedsyncEnv, RunningDaemon, Site, wait_until
from sitegen import Item

FAST = {  # a daemon that looks for work every second and polls feeds every 1-2 s
    "daemon": {"tick": "1s"},
    "poll": {"interval": "1s", "min_interval": "1s", "max_interval": "2s"},
}


class NotifySocket:
    """The AF_UNIX datagram socket systemd listens on; collects what the daemon says."""

    def __init__(self, path: Path):
        self.path = path
        self.messages: list[tuple[float, str]] = []
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.bind(str(path))
        self._socket.settimeout(0.2)
        self._open = True
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        while self._open:
            try:
                data = self._socket.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            self.messages.append((time.monotonic(), data.decode()))

    def said(self, field: str, since: float = 0.0) -> int:
        return sum(1 for at, text in self.messages if at >= since and field in text.split("\n"))

    def close(self) -> None:
        self._open = False
        self._thread.join(5)
        self._socket.close()


@pytest.fixture
def notify(tmp_path: Path) -> Iterator[NotifySocket]:
    listener = NotifySocket(tmp_path / "notify.sock")
    yield listener
    listener.close()


def titles(env: FeedsyncEnv) -> set[str]:
    if not env.live_path.exists():
        return set()
    try:
        return {row[0] for row in env.query("SELECT title FROM news")}
    except sqlite3.OperationalError:  # the schema is not there yet
        return set()


def test_the_daemon_speaks_sd_notify_and_ingests_until_told_to_stop(
    fs_card: FeedsyncEnv,
    site: Site,
    notify: NotifySocket,
    start_daemon: Callable[..., RunningDaemon],
) -> None:
    first = site.feed("first.xml", [Item("Opening story", site.page("opening"))])
    fs_card.configure([first], **FAST)
    daemon = start_daemon(NOTIFY_SOCKET=str(notify.path), WATCHDOG_USEC="2000000")

    wait_until(lambda: notify.said("READY=1") == 1, "READY=1")
    wait_until(lambda: titles(fs_card) == {"Opening story"}, "the first article")
    # the watchdog keeps being fed while the daemon idles between polls
    since = time.monotonic()
    wait_until(lambda: notify.said("WATCHDOG=1", since) >= 3, "three WATCHDOG=1 pings")
    assert any(
        text.startswith("STATUS=1 feed (0 failing), queue 0, 1 article, last snapshot ")
        for _, text in notify.messages
    ), notify.messages

    # news published while it runs lands without a restart
    site.feed(
        "first.xml",
        [
            Item("Opening story", site.url("/articles/opening")),
            Item("Breaking story", site.page("breaking")),
        ],
    )
    wait_until(lambda: "Breaking story" in titles(fs_card), "the breaking story")

    # SIGHUP: a feed added to the config file is picked up
    second = site.feed("second.xml", [Item("Second feed story", site.page("second"))])
    fs_card.configure([first, second])
    daemon.signal(signal.SIGHUP)
    wait_until(lambda: "Second feed story" in titles(fs_card), "the new feed's story")

    daemon.signal(signal.SIGTERM)
    wait_until(lambda: notify.said("STOPPING=1") == 1, "STOPPING=1")
    assert daemon.stop() == 0, daemon.output()
    assert fs_card.snapshot_path is not None
    with sqlite3.connect(fs_card.snapshot_path) as conn:  # the final snapshot has it all
        saved = {row[0] for row in conn.execute("SELECT title FROM news")}
    assert saved == {"Opening story", "Breaking story", "Second feed story"}
    assert all(n == 1 for n in site.article_hits().values()), site.article_hits()
    log = daemon.output()
    assert "reloaded" in log and "final snapshot: written" in log
    assert "Traceback" not in log


def test_a_daemon_that_cannot_import_its_http_client_stops_at_start(
    fs_card: FeedsyncEnv,
    site: Site,
    notify: NotifySocket,
    start_daemon: Callable[..., RunningDaemon],
    tmp_path: Path,
) -> None:
    """What a pass runs on is imported before the daemon says it is ready: a broken
    install (here httpx, shadowed by a module that fails to import) stops the service at
    start with one line, where it used to say READY and then fail every pass."""
    broken = tmp_path / "broken"
    (broken / "httpx").mkdir(parents=True)
    (broken / "httpx" / "__init__.py").write_text('raise ImportError("httpx is broken here")\n')
    fs_card.configure([site.feed("f.xml", [Item("Story", site.page("story"))])], **FAST)
    daemon = start_daemon(NOTIFY_SOCKET=str(notify.path), PYTHONPATH=str(broken))
    wait_until(lambda: daemon.process.poll() is not None, "the daemon to stop", timeout=60)
    assert daemon.process.returncode != 0
    assert notify.said("READY=1") == 0
    said = [line for line in daemon.output().splitlines() if "httpx is broken here" in line]
    assert said and all("Traceback" not in line for line in said), daemon.output()
    assert site.hits("/feeds/f.xml") == 0  # no poll was tried


def test_the_daemon_and_a_cron_run_side_by_side(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    stories = [Item(f"Story {n}", site.page(f"s{n}")) for n in range(12)]
    feeds = [
        site.feed(f"c{n}.xml", stories[n::3] + stories[(n + 1) % 3 :: 3], delay=0.05)
        for n in range(3)
    ]
    fs_card.configure(feeds, **FAST)
    daemon = start_daemon()
    runs = [fs_card.run("run") for _ in range(3)]  # cron-style passes while it runs
    wait_until(lambda: len(titles(fs_card)) == 12, "all twelve stories")
    assert daemon.stop() == 0
    for done in runs:
        assert "locked" not in done.stdout + done.stderr
    assert fs_card.query("SELECT count(*), count(DISTINCT url) FROM news") == [(12, 12)]
    assert sorted(site.article_hits().values()) == [1] * 12
    assert "Traceback" not in daemon.output()


def test_a_restart_keeps_the_schedule(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    feed = site.feed("hourly.xml", [Item("Story", site.page("story"))])
    fs_card.configure([feed], daemon={"tick": "1s"}, poll={"interval": "1h"})
    daemon = start_daemon()
    wait_until(lambda: titles(fs_card) == {"Story"}, "the first poll")
    assert daemon.stop() == 0
    due = fs_card.scalar("SELECT next_poll_at FROM feeds")
    assert due > time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 40 * 60))

    again = start_daemon()
    # several ticks go by; the feed is not due for most of an hour: not asked again
    wait_until(lambda: again.output().count("started") == 1, "the restart")
    time_to_look = time.monotonic() + 4
    wait_until(lambda: time.monotonic() > time_to_look, "four ticks")
    assert again.stop() == 0
    assert site.hits("/feeds/hourly.xml") == 1


def test_a_failing_job_is_logged_and_the_daemon_carries_on(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    feed = site.feed("f.xml", [Item("First", site.page("first"))])
    fs_card.configure([feed], storage={"save_interval": "1s"}, **FAST)
    assert fs_card.snapshot_path is not None
    daemon = start_daemon()
    wait_until(lambda: titles(fs_card) == {"First"}, "the first story")
    wait_until(fs_card.snapshot_path.is_file, "the first snapshot")
    fs_card.snapshot_path.unlink()
    fs_card.snapshot_path.mkdir()  # someone puts a directory where the snapshot goes
    # (a snapshot job caught mid-write by the swap fails with "cannot write" first)
    wait_until(lambda: "is not a file" in daemon.output(), "a snapshot job refusing the path")
    assert "job snapshot failed" in daemon.output()
    # the polls go on
    site.feed(
        "f.xml", [Item("First", site.url("/articles/first")), Item("Second", site.page("second"))]
    )
    wait_until(lambda: titles(fs_card) == {"First", "Second"}, "the second story")
    fs_card.snapshot_path.rmdir()  # the trouble goes away: the next tick succeeds
    wait_until(lambda: fs_card.snapshot_path.is_file(), "a snapshot after the failure")
    assert daemon.stop() == 0
    assert daemon.process.returncode == 0


def test_a_read_only_card_is_logged_once_and_saving_resumes_when_writable(
    fs_card: FeedsyncEnv,
    card_mount: CardMount,
    site: Site,
    start_daemon: Callable[..., RunningDaemon],
) -> None:
    """The daemon starts on a card the kernel remounted read-only: it says so once, polls
    and extracts in RAM, and once the card is writable again its next save writes what
    waited, saying so."""
    feed = site.feed("f.xml", [Item("First", site.page("first"))])
    fs_card.configure([feed], storage={"save_interval": "1s"}, **FAST)
    fs_card.run("save")  # the card database exists
    card_mount.remount("ro")
    daemon = start_daemon()
    wait_until(lambda: titles(fs_card) == {"First"}, "the first story, in RAM")
    assert "is mounted read-only" in daemon.output()
    card_mount.remount("rw")
    wait_until(lambda: "saving resumed" in daemon.output(), "a save once the card is writable")
    assert daemon.stop() == 0
    assert daemon.output().count("is mounted read-only") == 1, daemon.output()
    card = sqlite3.connect(f"file:{fs_card.card_path}?mode=ro", uri=True)
    try:
        assert card.execute("SELECT title FROM news").fetchall() == [("First",)]
    finally:
        card.close()


def test_a_broken_config_on_reload_is_reported_and_the_old_one_kept(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    feed = site.feed("f.xml", [Item("First", site.page("first"))])
    fs_card.configure([feed], **FAST)
    daemon = start_daemon()
    wait_until(lambda: titles(fs_card) == {"First"}, "the first story")
    fs_card.config_path.write_text(fs_card.config_path.read_text() + "\n[poll]\nbogus = 1\n")
    daemon.signal(signal.SIGHUP)
    wait_until(lambda: "keeping the previous one" in daemon.output(), "the reload error")
    site.feed(
        "f.xml", [Item("First", site.url("/articles/first")), Item("Second", site.page("second"))]
    )
    wait_until(lambda: titles(fs_card) == {"First", "Second"}, "polling to go on")
    assert daemon.stop() == 0


def test_a_reload_takes_the_config_feeds_new_titles_and_categories(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    """SIGHUP: a [[feeds]] title and category changed in the file reach the database
    (read here, not through a command, which would bring the config in itself)."""
    feed = site.feed("named.xml", [Item("First", site.page("first"))])

    def write(title: str, category: str) -> None:
        fs_card.configure([], **FAST)
        text = f'\n[[feeds]]\nurl = "{feed}"\ntitle = "{title}"\ncategory = "{category}"\n'
        fs_card.config_path.write_text(fs_card.config_path.read_text() + text)

    def names() -> list[tuple[object, ...]]:
        try:
            return fs_card.query("SELECT user_title, category, title FROM feeds")
        except sqlite3.OperationalError:  # the schema is not there yet
            return []

    write("Mine", "News")
    daemon = start_daemon()
    wait_until(lambda: titles(fs_card) == {"First"}, "the first story")
    assert names() == [("Mine", "News", "named.xml")]
    write("Renamed", "News/Local")
    daemon.signal(signal.SIGHUP)
    wait_until(lambda: names() == [("Renamed", "News/Local", "named.xml")], "the new names")
    assert daemon.stop() == 0
    assert "Traceback" not in daemon.output()


def test_a_stop_while_article_pages_are_in_flight_is_clean(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    """SIGTERM with one slow page in flight and more waiting for the host's only slot:
    the daemon stops at once and cleanly (exit 0, nothing raised in a task left behind,
    no request sent on a closed connection pool), and the pages it did not get to are
    fetched by the next run, each once."""
    items = [Item(f"Story {n}", site.page(f"story-{n}", delay=1.0)) for n in range(4)]
    feed = site.feed("slow.xml", items)
    fs_card.configure([feed], poll={"concurrency": 4, "per_host": 1})
    daemon = start_daemon()
    wait_until(lambda: sum(site.article_hits().values()) >= 1, "a page request to start")
    assert daemon.stop() == 0
    output = daemon.output()
    assert "Traceback" not in output and "never retrieved" not in output, output
    fs_card.run("run")
    assert titles(fs_card) == {f"Story {n}" for n in range(4)}
    # the page in flight at the stop may be asked for again; no other one
    assert sorted(site.article_hits().values()) in ([1, 1, 1, 1], [1, 1, 1, 2])


def test_systemd_stopping_the_service_mid_extraction_is_clean(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    """systemd's stop signals every process of the service (KillMode=control-group, the
    default our units keep): the daemon, its extraction workers and the forkserver all get
    SIGTERM while a page is being extracted. The daemon still stops cleanly (exit 0, no
    traceback from any process), the articles in flight are back in the queue with no
    attempt spent, and the next run extracts them all."""
    items = []
    for n in range(8):
        paragraphs = sitegen.prose(f"long-{n}", 1200, 4)  # ~0.2 s of extraction each
        html = sitegen.article_page(f"Long story {n}", seed=f"long-{n}", paragraphs=paragraphs)
        items.append(Item(f"Long story {n}", site.server.set(f"/articles/long-{n}", html)))
    fs_card.configure([site.feed("long.xml", items)], **FAST)
    daemon = start_daemon()
    wait_until(lambda: len(titles(fs_card)) >= 1, "an article stored, the next in the worker")
    os.killpg(daemon.process.pid, signal.SIGTERM)
    daemon.stopping = True
    assert daemon.stop() == 0
    log = daemon.output()
    assert "Traceback" not in log and "attempt" not in log, log  # no failure recorded
    left = fs_card.query("SELECT state, attempts, lease_owner FROM news_summary")
    assert {row for row in left if row[0] != "done"} <= {("new", 0, None)}, left
    assert len(titles(fs_card)) < 8, "the daemon finished before the stop; longer pages"
    fs_card.run("run")
    assert titles(fs_card) == {f"Long story {n}" for n in range(8)}


def test_no_room_in_ram_is_said_once_and_shown_until_there_is(
    fs_card: FeedsyncEnv,
    site: Site,
    notify: NotifySocket,
    start_daemon: Callable[..., RunningDaemon],
) -> None:
    """A RAM budget the live database already fills: the daemon takes no new entries,
    says why once in the journal (not at every tick) and in every STATUS; after a
    restart with room, the news comes in."""
    feed = site.feed("f.xml", [Item("Waiting story", site.page("waiting"))])
    fs_card.configure([feed], storage={"ram_budget": "16KB"}, **FAST)
    daemon = start_daemon(NOTIFY_SOCKET=str(notify.path))
    wait_until(lambda: notify.said("READY=1") == 1, "READY=1")

    def full_statuses() -> int:
        return sum(1 for _, text in notify.messages if "NOT TAKING new entries" in text)

    wait_until(lambda: full_statuses() >= 5, "five ticks with no room")
    assert daemon.stop() == 0
    log = daemon.output()
    assert log.count("not taking new entries") == 1, log
    assert site.hits("/feeds/f.xml") == 0  # nothing polled that could not be kept
    assert titles(fs_card) == set()

    fs_card.configure([feed], storage={"ram_budget": "64MB"})  # room, after a restart
    again = start_daemon()
    wait_until(lambda: titles(fs_card) == {"Waiting story"}, "the story, once there is room")
    assert again.stop() == 0
    assert "not taking" not in again.output()


def test_a_long_pass_saves_on_its_way(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    """Saves never wait on polling: the daemon's save job cannot run while a pass does,
    so a pass that lasts longer than ``save_interval`` saves on its way. Here the
    last page is held by the server until the card has the first articles: a power cut
    at that moment would keep them."""
    release = threading.Event()
    html = sitegen.article_page("Held story", seed="held").encode()

    def held(request: BaseHTTPRequestHandler) -> None:
        release.wait(120)
        request.send_response(200)
        request.send_header("Content-Type", "text/html; charset=utf-8")
        request.send_header("Content-Length", str(len(html)))
        request.end_headers()
        request.wfile.write(html)
        request.close_connection = True

    items = [Item(f"Story {n}", site.page(f"story-{n}")) for n in range(3)]
    items.append(Item("Held story", site.server.set("/articles/held", b"", handler=held)))
    fs_card.configure(
        [site.feed("f.xml", items)],
        storage={"save_interval": "1s"},
        poll={"concurrency": 1, "per_host": 1, "timeout": "120s"},
        daemon=FAST["daemon"],
    )

    def on_the_card() -> int:
        if not fs_card.card_path.exists():
            return 0
        card = sqlite3.connect(f"file:{fs_card.card_path}?mode=ro", uri=True, timeout=30)
        try:
            return int(card.execute("SELECT count(*) FROM news").fetchone()[0])
        except sqlite3.OperationalError:
            return 0
        finally:
            card.close()

    daemon = start_daemon()
    try:
        wait_until(lambda: on_the_card() >= 3, "the first articles saved during the pass")
        assert site.hits("/articles/held") == 1  # the pass is still waiting for its page
    finally:
        release.set()
    wait_until(lambda: on_the_card() == 4, "the held story saved too")
    assert daemon.stop() == 0


def _big_feed(site: Site, entries: int, depth: int = 200) -> tuple[str, str]:
    """A feed of ``entries`` entries whose descriptions are HTML nested ``depth`` deep:
    the slowest document per byte there is for feedparser's sanitiser (200 deep: ~5 ms
    an entry here, seconds in all; minutes on a Pi). Its URL and path."""
    from bench.hostile import document

    body, content_type = document("deep", entries, site=site.url("").rstrip("/"), depth=depth)
    assert len(body) < 10 * 1024 * 1024  # a feed feedsync takes
    return site.server.set("/big.xml", body, content_type), "/big.xml"


def test_a_long_parse_feeds_the_watchdog(
    fs_card: FeedsyncEnv,
    site: Site,
    notify: NotifySocket,
    start_daemon: Callable[..., RunningDaemon],
) -> None:
    """A document that takes longer to parse than the watchdog allows is progress, not a
    hang: the watchdog is fed all along (systemd would kill the service on every poll of
    that feed otherwise, on a Pi where a big feed takes minutes)."""
    url, path = _big_feed(site, 1200)
    fs_card.configure([url], **FAST)
    daemon = start_daemon(NOTIFY_SOCKET=str(notify.path), WATCHDOG_USEC="2000000")
    wait_until(lambda: site.hits(path) >= 1, "the feed fetched", timeout=60)
    served = time.monotonic()

    def staged() -> int:
        try:
            return int(fs_card.query("SELECT count(*) FROM news_summary")[0][0])
        except sqlite3.OperationalError:
            return 0

    wait_until(lambda: staged() == 1200, "the 1,200 entries staged", timeout=300)
    done = time.monotonic()
    assert done - served > 2.0, "the parse was shorter than the watchdog: nothing shown"
    pings = [at for at, text in notify.messages if served <= at <= done and "WATCHDOG=1" in text]
    gaps = [b - a for a, b in zip([served, *pings], [*pings, done], strict=True)]
    assert max(gaps) < 2.0, f"the watchdog went hungry for {max(gaps):.1f}s"
    assert daemon.stop() == 0


def test_a_stop_does_not_wait_for_a_long_parse(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    """SIGTERM while a big document is being parsed takes effect in seconds: the parse
    has nothing to save, so the daemon does not wait for it (~15 s here, more on a
    loaded machine, minutes on a Pi, past systemd's TimeoutStopSec), and the feed is
    polled again at the next start."""
    url, path = _big_feed(site, 1400, depth=600)
    fs_card.configure([url], **FAST)
    daemon = start_daemon()
    wait_until(lambda: site.hits(path) >= 1, "the feed fetched", timeout=60)
    daemon.signal(signal.SIGTERM)
    signalled = time.monotonic()
    assert daemon.stop(timeout=60) == 0, daemon.output()
    assert time.monotonic() - signalled < 12.0  # the parse alone takes 22 s here
    assert fs_card.query("SELECT count(*) FROM news_summary")[0][0] == 0
    assert "stopped" in daemon.output()


def test_the_daemon_keeps_its_pace_when_the_clock_jumps(
    fs_card: FeedsyncEnv,
    site: Site,
    notify: NotifySocket,
    start_daemon: Callable[..., RunningDaemon],
    fake_clock: FakeClock,
) -> None:
    """A Pi without fake-hwclock boots at 1970 and the daemon starts; NTP then sets the
    clock 56 years ahead (here: wrongly, 3 hours too far), and later steps it back 3
    hours. After each jump the daemon goes on polling, extracting and feeding the
    watchdog within seconds: APScheduler's IntervalTrigger walked every missed second
    of the 56 years one by one (never done, memory growing), and after the step back
    waited for the wall clock to come back (3 hours of nothing)."""
    items = [Item("At boot", site.page("boot"))]
    fs_card.configure([site.feed("f.xml", items)], **FAST)
    fake_clock.at(NOW.replace(year=1970, month=1, day=1, hour=0, minute=0))
    daemon = start_daemon(
        NOTIFY_SOCKET=str(notify.path), WATCHDOG_USEC="2000000", **fake_clock.env()
    )
    wait_until(lambda: titles(fs_card) == {"At boot"}, "the first story, at 1970")

    for offset, said, story in (
        (timedelta(hours=3), "the clock jumped ahead by", "Set too far"),
        (timedelta(0), "the clock stepped back by 3:00:00", "Stepped back"),
    ):
        fake_clock.set(offset)
        jumped = time.monotonic()
        wait_until(lambda said=said: said in daemon.output(), said, timeout=30)
        items.append(Item(story, site.page(story.lower().replace(" ", "-"))))
        site.feed("f.xml", items)
        wait_until(lambda story=story: story in titles(fs_card), f"{story!r} polled", timeout=30)
        wait_until(
            lambda jumped=jumped: notify.said("WATCHDOG=1", jumped) >= 3,
            "the watchdog fed after the jump",
            timeout=30,
        )
    assert daemon.stop() == 0
    log = daemon.output()
    assert "the clock cannot be believed (wrong): it reads 1970-01-01" in log
    assert "the clock can be believed again" in log
    assert "Traceback" not in log
    # no burst: the feed was polled about once a second, not once per second jumped
    assert site.hits("/feeds/f.xml") < 200
