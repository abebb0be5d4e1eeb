"""What is particular to the PostgreSQL backend, through the real CLI and a real server.

The pipeline, the multi-process and the commands' tests run on both engines already
(test_pipeline, test_multiprocess, test_commands); here: the config rules of ``url``,
the one-line failures (no driver, no server, a wrong password: never the password
itself), snapshots that do not apply, the schema applied once by processes starting
together, and a daemon that waits for its database instead of dying.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pgserver
import pytest
from conftest import FeedsyncEnv, RunningDaemon, Site, cli_env, wait_until
from sitegen import Item
from test_daemon import NotifySocket

from feedsync.storage import StorageUnavailable
from feedsync.storage.postgresql import RECONNECT_RETRIES, PostgreSQLStorage, display_url
from feedsync.storage.sqlfiles import schema_steps


@pytest.fixture
def pg(fs: FeedsyncEnv, pg_url: str) -> FeedsyncEnv:
    fs.url = pg_url
    return fs


def one_line_failure(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_url_with_a_database_file_is_a_config_error_naming_the_keys(fs: FeedsyncEnv) -> None:
    fs.configure([], storage={"url": "postgresql://u@127.0.0.1/feedsync"})  # beside db=
    line = one_line_failure(fs.run("feeds", expect=2))
    assert "storage.url: cannot be used with storage.db" in line and "pg_dump" in line
    fs.configure(storage={"url": "mysql://u@h/db"})
    assert "storage.url: expected a PostgreSQL URI" in one_line_failure(fs.run("feeds", expect=2))


def test_without_the_driver_a_url_says_what_to_install(pg: FeedsyncEnv, tmp_path: Path) -> None:
    hidden = tmp_path / "no-psycopg"
    (hidden / "psycopg").mkdir(parents=True)
    (hidden / "psycopg" / "__init__.py").write_text(
        "raise ImportError('No module named psycopg')\n"
    )
    pg.configure([])
    done = subprocess.run(
        pg.command("feeds"),
        capture_output=True,
        text=True,
        env={**cli_env(pg.root / "home"), "PYTHONPATH": str(hidden)},
        timeout=60,
    )
    line = one_line_failure(done)
    assert "pip install 'feedsync[postgresql]'" in line and "install.sh --postgresql" in line


def test_wrong_password_and_no_server_are_one_line_naming_host_and_database(
    pg: FeedsyncEnv, pg_server: pgserver.PostgresServer
) -> None:
    assert pg.url is not None
    dbname = pg.url.rsplit("/", 1)[1]
    pg.url = pg.url.replace(pgserver.PASSWORD, "not-the-password")
    pg.configure([])
    line = one_line_failure(pg.run("feeds", expect=3))
    assert f"127.0.0.1:{pg_server.port}/{dbname}" in line and "password authentication" in line
    assert "not-the-password" not in line

    pg.url = f"postgresql://postgres:{pgserver.PASSWORD}@127.0.0.1:1/{dbname}"  # nobody there
    pg.configure()
    line = one_line_failure(pg.run("status", expect=3))
    assert f"cannot connect to postgresql://postgres@127.0.0.1:1/{dbname}" in line
    assert pgserver.PASSWORD not in line


def test_save_and_restore_do_not_apply(pg: FeedsyncEnv) -> None:
    pg.configure([])
    for command in ("save", "snapshot", "restore"):
        line = one_line_failure(pg.run(command, expect=2))
        assert "snapshots do not apply to a PostgreSQL database" in line and "pg_dump" in line


def test_processes_starting_together_apply_the_schema_once(pg_url: str) -> None:
    opened: list[PostgreSQLStorage] = []
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def open_one() -> None:
        start.wait()
        try:
            opened.append(PostgreSQLStorage.open(pg_url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and len(opened) == 6
    import psycopg

    with psycopg.connect(pg_url) as conn:
        newest = schema_steps("postgresql")[-1][0]
        assert conn.execute("SELECT version FROM feedsync_schema").fetchall() == [(newest,)]
        assert conn.execute("SELECT count(*) FROM meta WHERE key = 'lineage'").fetchone() == (1,)
    for storage in opened:
        storage.close()


def test_the_daemon_waits_for_its_database_then_works(
    fs: FeedsyncEnv,
    pg_server: pgserver.PostgresServer,
    start_daemon_for: object,
    tmp_path: Path,
) -> None:
    """The database does not exist yet (a server being set up): the daemon says so, keeps
    trying, and starts polling once it is there."""
    name = "late_database"
    fs.url = pg_server.url(name)
    fs.configure([], daemon={"tick": "1s"})
    notify = NotifySocket(tmp_path / "notify.sock")
    daemon: RunningDaemon = start_daemon_for(fs, NOTIFY_SOCKET=str(notify.path))  # type: ignore[operator]
    try:
        wait_until(lambda: "trying again in" in daemon.output(), "the daemon to report its wait")
        assert daemon.process.poll() is None  # still there, waiting
        text = daemon.output()
        assert f'database "{name}" does not exist' in text and pgserver.PASSWORD not in text
        waiting = f"STATUS=waiting for the database: cannot connect to {display_url(fs.url)}"
        wait_until(
            lambda: any(waiting in message for _, message in notify.messages),
            "systemd to hear what the daemon waits for",
        )
        pg_server.admin(f'CREATE DATABASE "{name}"')
        wait_until(
            lambda: json.loads(fs.run("status", "--json").stdout)["daemon"]["running"],
            "the daemon to start working",
        )
        wait_until(
            lambda: any("STATUS=0 feeds (0 failing)" in m for _, m in notify.messages),
            "systemd to hear the daemon work",
        )
        assert daemon.stop() == 0
        assert "Traceback" not in daemon.output()
        assert not any(pgserver.PASSWORD in message for _, message in notify.messages)
    finally:
        notify.close()
        pg_server.drop_database(fs.url)


def test_the_daemon_polls_on_through_a_server_restart(
    pg: FeedsyncEnv,
    pg_server: pgserver.PostgresServer,
    site: Site,
    start_daemon_for: object,
) -> None:
    """The server restarts under a running daemon (its pooled connections all dropped):
    the daemon stays up and keeps polling and extracting, and stops cleanly. (A job that
    ran while the server was down may log that it will try again: that is the daemon
    waiting, not failing.)"""
    import psycopg

    assert pg.url is not None
    url = pg.url

    def titles() -> set[str]:
        with contextlib.suppress(psycopg.Error), psycopg.connect(url) as conn:
            return {row[0] for row in conn.execute("SELECT title FROM news")}
        return set()

    before = Item("Before the restart", site.page("before"))
    feed = site.feed("restart.xml", [before])
    pg.configure(
        [feed],
        daemon={"tick": "1s"},
        poll={"interval": "1s", "min_interval": "1s", "max_interval": "2s"},
    )
    daemon: RunningDaemon = start_daemon_for(pg)  # type: ignore[operator]
    wait_until(lambda: "Before the restart" in titles(), "the first story")
    pg_server.restart("fast")
    site.feed("restart.xml", [Item("After the restart", site.page("after")), before])
    wait_until(lambda: "After the restart" in titles(), "the story published after it")
    assert daemon.process.poll() is None
    assert daemon.stop() == 0
    assert "Traceback" not in daemon.output()
    assert site.article_hits() == {"/articles/before": 1, "/articles/after": 1}


def test_a_daemon_stopped_while_waiting_exits_cleanly(fs: FeedsyncEnv) -> None:
    fs.url = "postgresql://nobody@127.0.0.1:1/nothing"
    fs.configure([], daemon={"tick": "1s"})
    process = fs.start("daemon")
    assert process.stderr is not None
    first = process.stderr.readline()
    assert "cannot connect to postgresql://nobody@127.0.0.1:1/nothing" in first
    process.send_signal(signal.SIGTERM)
    _, rest = process.communicate(timeout=60)
    assert process.returncode == 0 and "Traceback" not in rest


def _idle_connections(storage: PostgreSQLStorage, count: int) -> None:
    """``count`` connections in the storage's pool, all idle again: as a daemon's pool
    holds them between passes."""
    pool = storage._pool
    with contextlib.ExitStack() as stack:
        for _ in range(count):
            stack.enter_context(pool.connection())
    assert pool.get_stats()["pool_available"] >= count


@pytest.mark.parametrize("how", ["terminated", "restart fast", "restart immediate"])
def test_connections_the_server_dropped_cost_no_failed_call(
    pg_url: str, pg_server: pgserver.PostgresServer, how: str
) -> None:
    """No round trip checks a connection at checkout; a connection the server dropped
    (its backend terminated, the server restarted or crashed) is found by the statement
    that fails on it, and the call runs again on a live one: the caller never sees it.
    Every idle connection of the pool is dead here, the worst case after a restart."""
    storage = PostgreSQLStorage.open(pg_url)
    try:
        storage.sync_config_feeds(["http://127.0.0.1:1/a.xml"], "2026-01-01T00:00:00Z")
        _idle_connections(storage, 4)
        if how == "terminated":
            dbname = pg_url.rsplit("/", 1)[1]
            pg_server.admin(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE datname = '{dbname}' AND pid <> pg_backend_pid()"
            )
        else:
            pg_server.restart(how.split()[1])
        # a write first (a transaction), then reads; then the pool is whole again
        added = storage.sync_config_feeds(
            ["http://127.0.0.1:1/a.xml", "http://127.0.0.1:1/b.xml"], "2026-01-01T00:00:00Z"
        )
        assert added == ["http://127.0.0.1:1/b.xml"]
        assert storage.counts()["feeds"] == 2
        assert sorted(f.url for f in storage.feeds_to_poll()) == [
            "http://127.0.0.1:1/a.xml",
            "http://127.0.0.1:1/b.xml",
        ]
        _idle_connections(storage, 4)
        assert storage.counts()["feeds"] == 2
    finally:
        storage.close()


def test_work_is_run_again_only_when_it_cannot_have_been_committed(
    pg_url: str, pg_server: pgserver.PostgresServer
) -> None:
    """A connection lost during the work rolled it back: run again (a bounded number of
    times). One lost while the COMMIT was on its way may have applied it: never run
    again (a claim or a stage twice), StorageUnavailable instead."""
    storage = PostgreSQLStorage.open(pg_url)
    calls: list[int] = []
    try:

        def lost_during(conn: Any) -> None:
            calls.append(1)
            conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")

        with pytest.raises(StorageUnavailable, match="lost the connection"):
            storage._write(lost_during)
        assert len(calls) == 1 + RECONNECT_RETRIES

        calls.clear()

        def lost_at_commit(conn: Any) -> None:
            calls.append(1)
            conn.execute("INSERT INTO meta (key, value) VALUES ('at-commit', 'x')")
            pid = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
            pg_server.admin(f"SELECT pg_terminate_backend({pid}, 10000)")  # waits for it

        with pytest.raises(StorageUnavailable, match="while committing"):
            storage._write(lost_at_commit)
        assert calls == [1]
        assert storage.counts()["feeds"] == 0  # and the storage works on
    finally:
        storage.close()


def test_a_server_that_stays_down_is_storage_unavailable(
    pg_server: pgserver.PostgresServer,
) -> None:
    """The other side of running again: with nobody there, a call ends as the one-line
    StorageUnavailable the daemon waits on, not a driver error."""
    url = pg_server.create_database("gone")
    storage = PostgreSQLStorage.open(url)
    try:
        storage.counts()
        storage._pool.timeout = 2.0  # the wait for a connection: 30 s in the daemon
        pg_server.admin(f'DROP DATABASE "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
        with pytest.raises(StorageUnavailable, match=r"lost the connection|cannot connect"):
            storage.counts()
    finally:
        storage.close()


def test_display_url_never_has_the_password() -> None:
    assert display_url("postgresql://me:pw@db.example:6543/news") == (
        "postgresql://me@db.example:6543/news"
    )
    assert display_url("postgresql:///news?host=/run/postgresql&user=me") == (
        "postgresql://me@[/run/postgresql]/news"
    )
