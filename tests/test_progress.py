"""What a run prints about articles that fail (feedsync/progress.py), through the real
CLI: from cron (pipes), on a terminal (a pty), and in the daemon's log.

A first run with 109 unreachable articles printed 109 two-line messages. Repeated
failures are now one line per host and reason at the end of the pass, with the whole
list under --debug, in `run --json`'s errors and in `feedsync news --state failed`."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
from collections.abc import Callable

import sitegen
from conftest import FeedsyncEnv, RunningDaemon, cli_env, on_a_terminal, wait_until
from sitegen import Item

from feedsync.localserver import LocalServer

RSS = "application/rss+xml"
UNREACHABLE = 12


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def failing_feed(server: LocalServer) -> tuple[str, int]:
    """A feed of 12 articles on a port nobody listens on, 2 that are 404 on the server,
    1 that is 500, and 1 that works; returns its URL and the dead port."""
    dead = closed_port()
    items = [Item(f"Lost {n}", f"http://127.0.0.1:{dead}/lost/{n}") for n in range(UNREACHABLE)]
    items += [Item(f"Missing {n}", server.set(f"/missing/{n}", "no", status=404)) for n in range(2)]
    items.append(Item("Broken", server.set("/broken", "no", status=500)))
    items.append(Item("Fine", server.set("/fine", sitegen.article_page("Fine", "fine"))))
    return server.set("/f.xml", sitegen.rss2("F", server.url("/f.xml"), items), RSS), dead


def test_repeated_article_failures_are_one_line_per_host_and_reason(
    fs: FeedsyncEnv, server: LocalServer
) -> None:
    feed, dead = failing_feed(server)
    fs.configure([feed])
    done = fs.run("run")

    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"feedsync: 127.0.0.1:{dead}: cannot connect: Connection refused "
        f"({UNREACHABLE} articles; next try " + lines[0].split("next try ")[1]
    ), done.stderr
    assert re.fullmatch(r".* \(12 articles; next try \d{4}-\d\d-\d\d \d\d:\d\dZ\)", lines[0])
    here = server.base_url.removeprefix("http://")
    assert lines[1].startswith(f"feedsync: {here}: HTTP 404 Not Found (2 articles; next try ")
    assert lines[2].startswith(f"feedsync: article {server.url('/broken')}: HTTP 500")
    assert "(attempt 1, next try " in lines[2]
    assert lines[3] == "feedsync: every failed article and why: feedsync news --state failed"
    assert len(lines) == 4, done.stderr  # not 15
    assert "(15 failed, 0 given up)" in done.stdout

    # the whole list: --debug as they happen, run --json's errors, news --state failed
    debug = fs.run("--debug", "run").stderr
    assert debug.count("feedsync: article http://") == 15, debug
    assert f"/lost/{UNREACHABLE - 1}: cannot connect" in debug
    assert "(12 articles; next try" in debug  # and the groups still at the end
    errors = json.loads(fs.run("run", "--json").stdout)["errors"]
    assert len(errors) == 15 and all(e.startswith("article http://") for e in errors)
    assert len(json.loads(fs.run("news", "--state", "failed", "--json").stdout)) == 15
    # one article arrived: the feed is ok, its failing articles said on a line of their own
    feeds = fs.run("feeds").stdout
    assert "    ok\n    articles: 15 failing; this week 1 extracted: " in feeds, feeds
    assert fs.run("feeds", "--failing").stdout == "no feeds in trouble\n"


def test_given_up_articles_are_grouped_too(fs: FeedsyncEnv, server: LocalServer) -> None:
    feed, dead = failing_feed(server)
    fs.configure([feed], extract={"max_attempts": 1})
    stderr = fs.run("run").stderr
    assert (
        f"127.0.0.1:{dead}: cannot connect: Connection refused (12 articles; given up)"
    ) in stderr, stderr
    assert "(attempt 1, given up)" in stderr  # the one 500
    assert stderr.rstrip().endswith("feedsync news --state failed|given-up")


def test_on_a_terminal_the_groups_come_after_the_bars(fs: FeedsyncEnv, server: LocalServer) -> None:
    feed, dead = failing_feed(server)
    fs.configure([feed])
    code, output = on_a_terminal(fs.command("run"), cli_env(fs.root / "home"))
    assert code == 0, output
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output)
    assert text.count("cannot connect") == 1, text
    assert f"127.0.0.1:{dead}: cannot connect: Connection refused (12" in text
    assert "every failed article and why: feedsync news --state failed" in text
    assert "/lost/3" not in text


def test_the_daemon_logs_a_group_line_and_each_article_only_at_debug_level(
    fs_card: FeedsyncEnv,
    server: LocalServer,
    start_daemon: Callable[..., RunningDaemon],
) -> None:
    feed, dead = failing_feed(server)
    fs_card.configure([feed], daemon={"tick": "1s"})
    daemon = start_daemon()
    wait_until(lambda: "(12 articles; next try" in daemon.output(), "the grouped line")
    assert daemon.stop() == 0
    log = daemon.output()
    assert f"127.0.0.1:{dead}: cannot connect: Connection refused (12 articles" in log
    assert "/lost/" not in log, log  # each one is a debug line (journalctl FEED_URL=...)


def test_the_daemon_with_debug_logs_each_failed_article(
    fs_card: FeedsyncEnv, server: LocalServer
) -> None:
    feed, _ = failing_feed(server)
    fs_card.configure([feed], daemon={"tick": "1s"})
    log = fs_card.root / "debug-daemon.log"
    with log.open("w") as out:
        daemon = subprocess.Popen(
            fs_card.command("--debug", "daemon"),
            stdout=subprocess.DEVNULL,
            stderr=out,
            env=cli_env(fs_card.root / "home"),
            start_new_session=True,
        )
        try:
            wait_until(lambda: "(12 articles; next try" in log.read_text(), "the grouped line")
            daemon.send_signal(signal.SIGTERM)
            assert daemon.wait(60) == 0
        finally:
            if daemon.poll() is None:
                os.killpg(daemon.pid, signal.SIGKILL)
                daemon.wait()
    text = log.read_text()
    assert text.count("DEBUG article http://127.0.0.1:") >= 15, text
    assert "/lost/11: cannot connect" in text
