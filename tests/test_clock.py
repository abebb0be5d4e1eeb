"""The clock is a suspect: a Raspberry Pi has no real-time clock. It boots at the time
fake-hwclock saved (or at 1970), NTP sets it minutes or hours later, or not at all while
the network is down; a wrong RTC HAT or a bad NTP answer puts it ahead, then back.

Through the real CLI, with the clock of the feedsync processes set by libfaketime
(``fake_clock``, tests/conftest.py): what a run stores under a wrong clock, and what the
runs after it do once the clock is right.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import NOW, FakeClock, FeedsyncEnv, Site, cli_env, hours
from sitegen import Item

from feedsync import clock

YEAR = timedelta(days=365)


def test_a_run_a_year_ahead_does_not_silence_the_feed_once_the_clock_is_right(
    fs: FeedsyncEnv, site: Site, fake_clock: FakeClock
) -> None:
    """Finding 1: the next poll was set a year ahead, and `run --due` polled nothing
    until then."""
    feed = site.feed("f.xml", [Item("First", site.page("first"), hours(2))])
    fs.configure([feed])
    fake_clock.set(YEAR)
    fs.run("run", env=fake_clock.env())
    assert site.hits("/feeds/f.xml") == 1

    fake_clock.set(timedelta(0))  # NTP steps the clock back
    site.feed(
        "f.xml",
        [Item("First", site.url("/articles/first"), hours(2)), Item("Later", site.page("later"))],
    )
    fs.run("run", "--due", env=fake_clock.env())

    assert site.hits("/feeds/f.xml") == 2
    assert fs.scalar("SELECT count(*) FROM news WHERE title = 'Later'") == 1
    # the schedule is the right clock's again: not due for a while
    fs.run("run", "--due", env=fake_clock.env())
    assert site.hits("/feeds/f.xml") == 2


def test_a_run_behind_keeps_the_feeds_dates_as_given(
    fs: FeedsyncEnv, site: Site, fake_clock: FakeClock
) -> None:
    """Finding 3: a run 30 days behind replaced the feed's real date with its wrong "now"
    (the date looked 30 days in the future)."""
    published = hours(2)
    feed = site.feed("f.xml", [Item("Story", site.page("story"), published)])
    fs.configure([feed])
    fake_clock.set(-timedelta(days=30))
    fs.run("run", env=fake_clock.env())

    given = published.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert fs.scalar("SELECT published FROM news_summary") == given
    assert fs.scalar("SELECT published FROM news") == given
    # the feed's cut-off is no later than the clock that polled it: once the clock is
    # right, an entry published since is a candidate (and one an hour older still is)
    fake_clock.set(timedelta(0))
    site.feed(
        "f.xml",
        [
            Item("Story", site.url("/articles/story"), published),
            Item("Next", site.page("next"), NOW - timedelta(minutes=30)),
            Item("Late arrival", site.page("late"), hours(3)),
        ],
    )
    fs.run("run", env=fake_clock.env())
    assert {r[0] for r in fs.query("SELECT title FROM news")} == {"Story", "Next", "Late arrival"}


def test_a_run_at_1970_keeps_its_articles_once_the_clock_is_right(
    fs_card: FeedsyncEnv, site: Site, fake_clock: FakeClock
) -> None:
    """Finding 2: at 1970 the feed's real date was dropped ("in the future") and the
    articles filed in the card's month table news_1970_01, which the daily retention
    then took for 56 years old. Here an entry published 200 days ago and an undated one,
    fetched at 1970, then the clock is set right and news_days (90) retention runs: the
    month they are in goes only when its newest article is old, and the undated one's
    fetch time, stored under a clock that could not be right, is not what says so."""
    long_ago = NOW - timedelta(days=200)
    feed = site.feed(
        "f.xml",
        [Item("Old story", site.page("old"), long_ago), Item("Undated", site.page("undated"))],
    )
    fs_card.configure([feed])
    fake_clock.at(NOW.replace(year=1970, month=1, day=1, hour=0, minute=5))
    at_1970 = fs_card.run("run", env=fake_clock.env())

    given = long_ago.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert dict(fs_card.query("SELECT title, published FROM news")) == {
        "Old story": given,
        "Undated": None,
    }
    assert "the clock cannot be right" in at_1970.stderr
    assert fs_card.snapshot_path is not None
    with sqlite3.connect(fs_card.snapshot_path) as card:
        tables = {r[0] for r in card.execute("SELECT name FROM sqlite_master")}
    assert not any(name.startswith("news_1970") for name in tables), tables

    # NTP sets the clock; news arrives; the save's retention (news_days 90) runs
    fake_clock.set(timedelta(0))
    site.feed(
        "f.xml",
        [
            Item("Old story", site.url("/articles/old"), long_ago),
            Item("Undated", site.url("/articles/undated")),
            Item("Fresh", site.page("fresh"), hours(1)),
        ],
    )
    right = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    fs_card.run("run", env=fake_clock.env())

    fetched = dict(fs_card.query("SELECT title, fetched_at FROM news"))
    assert set(fetched) == {"Old story", "Undated", "Fresh"}
    assert fetched["Undated"] >= right  # taken as fetched when the clock was right
    assert sorted(site.article_hits().values()) == [1, 1, 1]


def test_status_says_what_the_clock_is_believed_to_be(
    fs_card: FeedsyncEnv, site: Site, fake_clock: FakeClock
) -> None:
    fs_card.configure([site.feed("f.xml", [Item("Story", site.page("story"), hours(1))])])
    fs_card.run("run")
    fake_clock.at(NOW.replace(year=1970, month=1, day=1, hour=0, minute=5))
    wrong = json.loads(fs_card.run("status", "--json", env=fake_clock.env()).stdout)["clock"]
    assert (wrong["state"], wrong["retention"]) == ("wrong", "waits")
    assert "before feedsync existed" in wrong["why"]
    text = fs_card.run("status", env={**fake_clock.env(), "COLUMNS": "80"}).stdout
    assert "clock      CANNOT BE RIGHT: retention waits for it\n" in text
    assert "           it reads 1970-01-01 00:05, before feedsync existed\n" in text
    assert all(len(line) <= 80 for line in text.splitlines()), text

    # 30 days behind the poll just stored: the clock cannot be before it
    fake_clock.set(-timedelta(days=30))
    behind = json.loads(fs_card.run("status", "--json", env=fake_clock.env()).stdout)["clock"]
    assert (behind["state"], behind["retention"]) == ("wrong", "waits")
    assert "before a poll stored at" in behind["why"]

    right = json.loads(fs_card.run("status", "--json").stdout)["clock"]
    assert right["retention"] == "runs"
    assert right["state"] in ("synchronized", "unknown")
    metrics = fs_card.root / "metrics.prom"
    fs_card.configure(metrics={"textfile": str(metrics)})
    fs_card.run("run", "--due")
    assert f'feedsync_clock{{state="{right["state"]}"}} 1' in metrics.read_text()


# ---------------------------------------------------------------- a time service at work


def test_a_clock_behind_with_no_time_service_loses_nothing_once_set_right(
    fs_card: FeedsyncEnv, site: Site, fake_clock: FakeClock
) -> None:
    """Found by the emulated Pi's clock phase (tests/pi): a Pi without a time service
    boots 200 days behind. Its first run finds the clock wrong (before the polls stored)
    and marks what it stores; the run after believed it (every poll stored was then its
    own), and the save's retention settled the marked articles at its own time, still
    200 days behind, and dropped the mark. Once the clock was set right, retention took
    an article fetched meanwhile for 200 days old and dropped its month from the card.
    The clock is wrong until it passes the time that showed it wrong, or is synchronized."""
    if clock.kernel_synchronized():
        pytest.skip("this machine's kernel says its clock is synchronized: no clock without "
                    "a time service can be shown here")  # fmt: skip
    feed = site.feed("f.xml", [Item("Before", site.page("before"), hours(1))])
    fs_card.configure([feed])
    fs_card.run("run", env=fake_clock.env())  # the clock right: polls stored now

    fake_clock.set(-timedelta(days=200))  # booted behind, no time service
    site.feed(
        "f.xml",
        [
            Item("Before", site.url("/articles/before"), hours(1)),
            Item("Undated", site.page("undated")),
        ],
    )
    fs_card.run("run", env=fake_clock.env())  # wrong: what it stores is marked
    fs_card.run("run", env=fake_clock.env())  # every poll stored is now its own
    said = json.loads(fs_card.run("status", "--json", env=fake_clock.env()).stdout)["clock"]
    assert (said["state"], said["retention"]) == ("wrong", "waits"), said

    # set right by hand a day on (no time service says so): retention is due again
    fake_clock.set(timedelta(days=1))
    right = (NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    fs_card.run("run", env=fake_clock.env())  # a save, and retention

    fetched = dict(fs_card.query("SELECT title, fetched_at FROM news"))
    assert set(fetched) == {"Before", "Undated"}
    assert fetched["Undated"] >= right  # taken as fetched when the clock was right
    said = json.loads(fs_card.run("status", "--json", env=fake_clock.env()).stdout)["clock"]
    assert (said["state"], said["retention"]) == ("unknown", "runs"), said
    assert fs_card.snapshot_path is not None
    with sqlite3.connect(fs_card.snapshot_path) as card:
        months = [
            r[0]
            for r in card.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if r[0][5:].replace("_", "").isdigit()  # news_YYYY_MM
        ]
        titles = {r[0] for m in months for r in card.execute(f"SELECT title FROM {m}")}
    assert titles == {"Before", "Undated"}, months


def _in_a_run_of_its_own(run: Path, command: list[str]) -> list[str]:
    """``command`` with a /run of its own (a mount namespace, a tmpfs) holding ``run``'s
    tree: what a time service shows there, as the real one would."""
    script = 'mount -t tmpfs tmpfs /run && cp -a "$0"/. /run/ && exec "$@"'
    unshare = ["unshare", "--mount", "--propagation", "private"]
    return [*unshare, "sh", "-c", script, str(run), *command]


def test_retention_waits_while_a_time_service_has_not_set_the_clock(
    fs_card: FeedsyncEnv, site: Site, fake_clock: FakeClock, tmp_path: Path
) -> None:
    """systemd-timesyncd runs (its /run/systemd/timesync is there) and has not
    synchronized the clock since boot (no `synchronized` in it): retention waits, even
    for a month 200 days old. Where no time service is found and the clock reads after
    every poll stored, it runs."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a /run of its own needs root and unshare (CI runs as root)")
    if clock.kernel_synchronized():
        pytest.skip("this machine's kernel says its clock is synchronized: a time service "
                    "that has not set it cannot be shown here")  # fmt: skip
    long_ago = NOW - timedelta(days=201)
    feed = site.feed("f.xml", [Item("Old story", site.page("old"), long_ago)])
    fs_card.configure([feed])
    fake_clock.set(-timedelta(days=200))  # saved 200 days ago: its own month on the card
    fs_card.run("run", env=fake_clock.env())
    site.feed(
        "f.xml",
        [Item("Old story", site.url("/articles/old"), long_ago), Item("New", site.page("new"))],
    )
    run = tmp_path / "run"
    (run / "systemd" / "timesync").mkdir(parents=True)

    def feedsync(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            _in_a_run_of_its_own(run, fs_card.command(*args)),
            capture_output=True,
            text=True,
            env=cli_env(fs_card.root / "home"),
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        return done

    feedsync("run")  # a save, and retention due: it waits
    assert {r[0] for r in fs_card.query("SELECT title FROM news")} == {"Old story", "New"}
    said = json.loads(feedsync("status", "--json").stdout)["clock"]
    assert (said["state"], said["retention"]) == ("unsynchronized", "waits")
    assert "systemd-timesyncd has not set it since boot" in said["why"]

    (run / "systemd" / "timesync" / "synchronized").touch()  # it has, since boot
    said = json.loads(feedsync("status", "--json").stdout)["clock"]
    assert (said["state"], said["retention"]) == ("synchronized", "runs")
    feedsync("run")
    assert {r[0] for r in fs_card.query("SELECT title FROM news")} == {"New"}


# ---------------------------------------------------------------- the rules, directly

SERVICE_AT_WORK = clock.Sync(clock.UNSYNCHRONIZED, "systemd-timesyncd has not set it")
NOTHING_KNOWN = clock.Sync(clock.UNKNOWN, "no time synchronization service found")
SAYS_SO = clock.Sync(clock.SYNCHRONIZED, "the kernel's NTP state says so")


@pytest.mark.parametrize(
    ("reads", "newest", "sync", "state"),
    [
        (NOW.replace(year=1970), "", SAYS_SO, clock.WRONG),  # whatever anything says
        (NOW, "", NOTHING_KNOWN, clock.UNKNOWN),
        (NOW, "", SERVICE_AT_WORK, clock.UNSYNCHRONIZED),
        (NOW, "", SAYS_SO, clock.SYNCHRONIZED),
        # before a poll stored: cannot be right, unless the system says it is (then the
        # poll was stored by a clock that ran ahead)
        (NOW - timedelta(days=30), NOW.strftime("%Y-%m-%dT%H:%M:%SZ"), NOTHING_KNOWN, "wrong"),
        (NOW - timedelta(days=30), NOW.strftime("%Y-%m-%dT%H:%M:%SZ"), SAYS_SO, "synchronized"),
        # ... by more than the clocks' slack (another machine's clock on PostgreSQL)
        (NOW - timedelta(seconds=50), NOW.strftime("%Y-%m-%dT%H:%M:%SZ"), NOTHING_KNOWN, "unknown"),
    ],
)
def test_what_the_clock_may_be_believed(
    reads: datetime, newest: str, sync: clock.Sync, state: str
) -> None:
    verdict = clock.judge(reads, newest, sync)
    assert verdict.state == state
    assert verdict.believed == (state in ("synchronized", "unknown"))


def test_what_the_system_says_of_its_clock(tmp_path: Path) -> None:
    """The services, as they show themselves under /run (a folder here, with what each
    really makes there), and the kernel's answer (None: it could not be asked, as under
    the service's ProtectClock=yes)."""
    run = tmp_path / "run"
    run.mkdir()
    assert clock.synchronization(True, run).state == clock.SYNCHRONIZED
    assert clock.synchronization(False, run).state == clock.UNKNOWN  # no service: a VM
    assert clock.synchronization(None, run).state == clock.UNKNOWN
    (run / "chrony").mkdir()  # chronyd runs
    assert clock.synchronization(False, run).state == clock.UNSYNCHRONIZED
    assert clock.synchronization(None, run).state == clock.UNKNOWN  # cannot be read
    timesync = run / "systemd" / "timesync"
    timesync.mkdir(parents=True)  # timesyncd runs: its own word is enough
    assert clock.synchronization(None, run).state == clock.UNSYNCHRONIZED
    (timesync / "synchronized").touch()  # at its first sync since boot
    assert clock.synchronization(None, run).state == clock.SYNCHRONIZED
    assert clock.synchronization(False, run).state == clock.SYNCHRONIZED  # a network outage


def test_the_kernel_is_asked_as_timedatectl_asks_it() -> None:
    """adjtimex(2), read only, as an unprivileged process may; where systemd's timedated
    answers too, both say the same."""
    kernel = clock.kernel_synchronized()
    if kernel is None:
        pytest.skip("adjtimex(2) is refused here (a seccomp filter)")
    timedated = clock.timedated_synchronized()
    if timedated is not None:
        assert kernel == timedated


def test_a_slow_timedated_is_waited_for_and_not_asked_every_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the service's sandbox (ProtectClock: adjtimex refused) only timedatectl can
    answer. On the emulated Pi, systemd-timedated took 5-7 s to start over D-Bus, past
    the 3 s timedatectl was given: the daemon never learnt that its clock was
    synchronized, and started timedated again every minute (~4 s of CPU each). Here a
    timedatectl that answers after 5 s."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    timedatectl = bin_dir / "timedatectl"
    timedatectl.write_text(f"#!/bin/sh\necho asked >> {calls}\nsleep 5\necho yes\n")
    timedatectl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    run = tmp_path / "run"  # no time service found
    run.mkdir()
    clock.forget()
    try:
        said = clock.system_synchronization(kernel=lambda: None, run=run)
        assert said.state == clock.SYNCHRONIZED, said
        assert clock.system_synchronization(kernel=lambda: None, run=run) == said
    finally:
        clock.forget()
    assert calls.read_text().split() == ["asked"]  # once, not at each pass

    # where systemd-timesyncd runs (Raspberry Pi OS), its own file answers: timedated is
    # not started at all (each start put its lines in the journal, on the SD card)
    (run / "systemd" / "timesync").mkdir(parents=True)
    (run / "systemd" / "timesync" / "synchronized").touch()
    try:
        said = clock.system_synchronization(kernel=lambda: None, run=run)
    finally:
        clock.forget()
    assert said == clock.Sync(clock.SYNCHRONIZED, "systemd-timesyncd set it since boot")
    assert calls.read_text().split() == ["asked"]
