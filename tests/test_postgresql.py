"""What is particular to the PostgreSQL backend, through the real CLI and a real server.

The pipeline, the multi-process and the commands' tests run on both engines already
(test_pipeline, test_multiprocess, test_commands); here: the config rules of ``url``,
the one-line failures (no driver, no server, a wrong password: never the password
itself), snapshots that do not apply, the schema applied once by processes starting
together, and a daemon that waits for its database instead of dying.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path

import pgserver
import pytest
from conftest import FeedsyncEnv, RunningDaemon, cli_env, wait_until
from test_daemon import NotifySocket

from feedsync.storage.postgresql import PostgreSQLStorage, display_url
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


def test_snapshot_and_restore_do_not_apply(pg: FeedsyncEnv) -> None:
    pg.configure([])
    for command in ("snapshot", "restore"):
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


def test_display_url_never_has_the_password() -> None:
    assert display_url("postgresql://me:pw@db.example:6543/news") == (
        "postgresql://me@db.example:6543/news"
    )
    assert display_url("postgresql:///news?host=/run/postgresql&user=me") == (
        "postgresql://me@[/run/postgresql]/news"
    )
