"""Shared fixtures: a real HTTP server on 127.0.0.1, real SQLite files, the real CLI.

``site`` is a news site on the loopback server (feeds in three formats, article pages,
per-path request counters). ``fs`` is a feedsync installation in a temporary directory:
its config file, its database, and ``fs.run(...)`` to run the ``feedsync`` command as a
subprocess, exactly as cron or a user would.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pgserver
import pytest
import sitegen
from fakedns import fake_dns  # noqa: F401 (the fixture: DNS answers and public addresses)

from feedsync.localserver import LocalServer

if TYPE_CHECKING:
    from feedsync.storage.base import SQLStorage

# The real-world corpus (never copied into the repo); FEEDSYNC_CORPUS overrides where it is.
CORPUS = Path(
    os.environ.get("FEEDSYNC_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "corpus"
)


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with LocalServer() as running:
        yield running


class Site:
    """Feeds and article pages on the local server."""

    def __init__(self, server: LocalServer):
        self.server = server

    def page(self, slug: str, title: str | None = None, **options: Any) -> str:
        """Serve an article page at /articles/<slug>; returns its URL."""
        html = sitegen.article_page(title or slug.replace("-", " ").title(), seed=slug)
        return self.server.set(f"/articles/{slug}", html, "text/html; charset=utf-8", **options)

    def feed(self, name: str, items: list[sitegen.Item], fmt: str = "rss2", **options: Any) -> str:
        render, content_type = sitegen.FORMATS[fmt]
        url = self.server.url(f"/feeds/{name}")
        return self.server.set(f"/feeds/{name}", render(name, url, items), content_type, **options)

    def url(self, path: str) -> str:
        return self.server.url(path)

    def hits(self, path: str) -> int:
        return self.server.hits[path]

    def article_hits(self) -> dict[str, int]:
        return {p: n for p, n in self.server.hit_counts().items() if p.startswith("/articles/")}


@pytest.fixture
def site(server: LocalServer) -> Site:
    return Site(server)


# The moment the end-to-end scenarios (test_pipeline, test_polling, test_articles) date
# their entries from: ``hours(2)`` is two hours before it.
NOW = datetime.now(UTC).replace(microsecond=0)


def hours(n: float) -> datetime:
    return NOW - timedelta(hours=n)


def news_titles(fs: FeedsyncEnv) -> list[str]:
    """The titles of the articles stored, sorted: what ``feedsync list`` would show."""
    return sorted(row[0] for row in fs.query("SELECT title FROM news"))


# The engines the core pipeline and the multi-process tests run on: a module says
# ``pytestmark = pytest.mark.parametrize("backend", BACKENDS, indirect=True)``.
BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[pgserver.PostgresServer]:
    """A throwaway PostgreSQL server for the whole session (tests/pgserver.py)."""
    bindir = pgserver.find_bin()
    if bindir is None:
        pytest.skip(
            "!!! PostgreSQL server binaries are missing (/usr/lib/postgresql/*/bin/initdb): "
            "the PostgreSQL tests did NOT run; tests/run.sh installs Debian's postgresql !!!"
        )
    with pgserver.running(bindir) as running:
        yield running


@pytest.fixture
def pg_url(pg_server: pgserver.PostgresServer) -> Iterator[str]:
    """An empty database of its own for one test (its URL, password included)."""
    url = pg_server.create_database()
    yield url
    pg_server.drop_database(url)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The engine of the ``fs`` set-ups: "sqlite" unless the module parametrizes it."""
    return str(getattr(request, "param", "sqlite"))


def live_and_card(db: Path, card: Path | None) -> tuple[Path, Path]:
    """Where feedsync keeps the live database and the card database for a config with
    ``db`` and ``card`` (feedsync.config.StorageConfig: live_path, card_path)."""
    from feedsync.config import StorageConfig

    config = StorageConfig(db=db, card=card)
    return config.live_path, config.card_path


_SEEN = """
CREATE TEMP VIEW news_summary AS SELECT * FROM main.news_summary UNION ALL
  SELECT * FROM card.news_summary WHERE id NOT IN (SELECT id FROM main.news_summary);
CREATE TEMP VIEW feed_entries AS SELECT * FROM main.feed_entries UNION ALL
  SELECT * FROM card.feed_entries AS c WHERE c.feed_id IN (SELECT id FROM main.feeds)
   AND NOT EXISTS (SELECT 1 FROM main.feed_entries AS m
                    WHERE m.summary_id = c.summary_id AND m.feed_id = c.feed_id);
CREATE TEMP VIEW news AS SELECT * FROM main.news UNION ALL
  SELECT * FROM card.news WHERE id NOT IN (SELECT id FROM main.news);
"""


def what_feedsync_sees(live: Path, card: Path) -> sqlite3.Connection:
    """A read-only view of everything, as feedsync's commands see it: the live database,
    and the card database's rows it does not hold (temporary views named like the
    tables, for reading only). The live database alone when there is no card yet."""
    conn = sqlite3.connect(f"file:{live}?mode=ro", uri=True, timeout=30)
    if card.is_file():
        conn.execute("ATTACH ? AS card", (f"file:{card}?mode=ro",))
        conn.executescript(_SEEN)
    return conn


def cli_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in {"http_proxy", "https_proxy", "all_proxy", "feedsync_config"}
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        NO_PROXY="127.0.0.1,localhost",
        PYTHONUNBUFFERED="1",
    )
    return env


@dataclass
class FeedsyncEnv:
    """A feedsync set-up in a temporary directory, driven through its CLI."""

    root: Path
    feeds: list[str] = field(default_factory=list)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    db_path: Path = Path()  # the live database; default root/data/feedsync.db
    snapshot_path: Path | None = None  # its persistent copy, when snapshots are tested
    url: str | None = None  # a PostgreSQL database instead of the file

    @property
    def backend(self) -> str:
        return "sqlite" if self.url is None else "postgresql"

    def __post_init__(self) -> None:
        if self.db_path == Path():
            self.db_path = self.root / "data" / "feedsync.db"

    @property
    def config_path(self) -> Path:
        return self.root / "feedsync.toml"

    def configure(self, feeds: list[str] | None = None, **sections: dict[str, Any]) -> None:
        """Write the config file: the given feeds, test-friendly defaults, overrides."""
        if feeds is not None:
            self.feeds = list(feeds)
        for name, values in sections.items():
            self.settings.setdefault(name, {}).update(values)
        storage = {"db": str(self.db_path)} if self.url is None else {"url": self.url}
        if self.snapshot_path is not None and self.url is None:
            storage["card"] = str(self.snapshot_path)
        settings: dict[str, dict[str, Any]] = {
            "storage": storage,
            "extract": {"workers": 1, "retry_backoff": "0s"},
            # every test site is one host (127.0.0.1): no politeness delay, except where
            # a test measures it
            "fetch": {"host_delay": "0s"},
        }
        for name, values in self.settings.items():
            settings.setdefault(name, {}).update(values)
        if self.url is not None:  # no card on PostgreSQL
            settings["storage"].pop("save_interval", None)
        lines = []
        for name, values in settings.items():
            lines.append(f"[{name}]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
        for url in self.feeds:
            lines += ["[[feeds]]", f"url = {json.dumps(url)}"]
        self.config_path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "feedsync", "--config", str(self.config_path), *args]

    def run(
        self,
        *args: str,
        expect: int | None = 0,
        timeout: float = 180,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """The command, to its end; ``env``: more environment (a fake clock)."""
        if not self.config_path.exists():
            self.configure()
        done = subprocess.run(
            self.command(*args),
            capture_output=True,
            text=True,
            env={**cli_env(self.root / "home"), **(env or {})},
            timeout=timeout,
        )
        if expect is not None:
            assert done.returncode == expect, (
                f"feedsync {' '.join(args)} exited {done.returncode}, expected {expect}\n"
                f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
            )
        return done

    def start(self, *args: str) -> subprocess.Popen[str]:
        """The command in the background, in a session of its own (a test can SIGKILL its
        whole process group, extraction workers included); pipes for its output."""
        return subprocess.Popen(
            self.command(*args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(self.root / "home"),
            start_new_session=True,
        )

    def run_json(self, *args: str) -> dict[str, Any]:
        done = self.run("run", "--json", *args)
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` (``?`` parameters, SQL both engines understand)."""
        if self.url is not None:
            import psycopg

            with psycopg.connect(self.url, autocommit=True) as pg:
                cursor = pg.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
                return cursor.fetchall()
        conn = what_feedsync_sees(*live_and_card(self.db_path, self.snapshot_path))
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def scalar(self, sql: str, *params: Any) -> Any:
        return self.query(sql, *params)[0][0]

    @property
    def live_path(self) -> Path:
        """The live database feedsync works on (beside ``db_path`` without a snapshot)."""
        return live_and_card(self.db_path, self.snapshot_path)[0]

    @property
    def card_path(self) -> Path:
        """The database that holds everything as of the last save."""
        return live_and_card(self.db_path, self.snapshot_path)[1]


def _pg_url_for(backend: str, request: pytest.FixtureRequest) -> str | None:
    return str(request.getfixturevalue("pg_url")) if backend == "postgresql" else None


@pytest.fixture
def fs(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> FeedsyncEnv:
    (tmp_path / "home").mkdir()
    return FeedsyncEnv(root=tmp_path, url=_pg_url_for(backend, request))


@pytest.fixture
def ramdisk() -> Iterator[Path]:
    """A folder on tmpfs, as /run/feedsync is on the Pi (a plain temp folder without one)."""
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() else None
    folder = Path(tempfile.mkdtemp(prefix="feedsync-test-", dir=base))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fs_card(
    tmp_path: Path, ramdisk: Path, backend: str, request: pytest.FixtureRequest
) -> FeedsyncEnv:
    """feedsync with the live database on tmpfs and its snapshot on disk ("the card");
    on PostgreSQL (``backend``), a database on the test server and no snapshot."""
    (tmp_path / "home").mkdir()
    url = _pg_url_for(backend, request)
    return FeedsyncEnv(
        root=tmp_path,
        db_path=ramdisk / "live" / "feedsync.db",
        snapshot_path=tmp_path / "card" / "feedsync.db" if url is None else None,
        url=url,
    )


class CardMount:
    """The card's folder as a file system of its own (a small tmpfs), which a test can
    remount read-only, as the kernel does to an SD card after write errors."""

    def __init__(self, path: Path):
        self.path = path

    def remount(self, mode: str) -> None:
        """``ro`` or ``rw``."""
        subprocess.run(["mount", "-o", f"remount,{mode}", str(self.path)], check=True)


@pytest.fixture
def card_mount(fs_card: FeedsyncEnv) -> Iterator[CardMount]:
    """A 16 MB tmpfs at the fs_card set-up's card folder. Root only (CI runs as root;
    chmod means nothing to root, a mount is what a read-only or full card really is):
    skipped otherwise. Unmounted at the end, whatever the test did."""
    assert fs_card.snapshot_path is not None
    where = fs_card.snapshot_path.parent
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a card file system needs root (CI runs as root)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield CardMount(where)
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def power_loss(env: FeedsyncEnv) -> None:
    """What a reboot or a power cut does to the RAM disk: the live database is gone."""
    shutil.rmtree(env.db_path.parent)


def corpus_or_skip(*parts: str) -> Path:
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real-world corpus not available at {path}")
    return path


class FakeClock:
    """What a Raspberry Pi's clock does, for the processes a test starts: libfaketime
    (Debian's ``faketime``) preloaded, reading the offset from a file the test rewrites
    while they run (``FAKETIME_NO_CACHE``: every reading of the clock reads the file;
    bookworm's 0.9.10 misses changes with a cache duration instead). The monotonic clock
    is left alone (``FAKETIME_DONT_FAKE_MONOTONIC``): Python 3.11's timed waits use it and
    hang when it is faked, and it is what a real clock step leaves alone too. (That
    libfaketime fails ``time.sleep`` with EINVAL under this setting, its bug #426:
    nothing a test runs under it may sleep so.)"""

    def __init__(self, path: Path, library: str):
        self.path = path
        self.library = library
        self.set(timedelta(0))

    def set(self, offset: timedelta) -> None:
        """The clock ``offset`` from the real time (negative: behind), from now on."""
        self.path.write_text(f"{int(offset.total_seconds()):+d}\n")

    def at(self, moment: datetime) -> None:
        """The clock reads ``moment`` now, and runs on from there."""
        self.set(moment - datetime.now(UTC))

    def env(self) -> dict[str, str]:
        return {
            "LD_PRELOAD": self.library,
            "FAKETIME_TIMESTAMP_FILE": str(self.path),
            "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }


@pytest.fixture
def fake_clock(tmp_path: Path) -> FakeClock:
    """A clock the test sets for the feedsync processes it starts with ``fake_clock.env()``
    (skipped without libfaketime: tests/run.sh installs Debian's ``faketime``)."""
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))
    if not found:
        pytest.skip(
            "!!! libfaketime is missing (Debian package faketime): the clock tests did NOT "
            "run; tests/run.sh installs it !!!"
        )
    return FakeClock(tmp_path / "faketime.rc", str(found[0]))


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class RunningDaemon:
    def __init__(self, env: FeedsyncEnv, extra_env: dict[str, str]):
        self.env = env
        self.log = env.root / "daemon.log"
        number = 1
        while self.log.exists():  # several daemons on one set-up: a log each
            number += 1
            self.log = env.root / f"daemon-{number}.log"
        self.stopping = False
        self._log = self.log.open("w")
        self.process = subprocess.Popen(
            env.command("daemon"),
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env={**cli_env(env.root / "home"), **extra_env},
            start_new_session=True,  # its own process group: a test can kill it whole
        )

    def signal(self, signum: int) -> None:
        self.stopping = self.stopping or signum == signal.SIGTERM
        self.process.send_signal(signum)

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM once, as systemd does, and the exit code."""
        if not self.stopping:
            self.signal(signal.SIGTERM)
        code = self.process.wait(timeout)
        self._log.close()
        return code

    def output(self) -> str:
        return self.log.read_text()


@pytest.fixture
def start_daemon_for() -> Iterator[Callable[..., RunningDaemon]]:
    """start_daemon_for(env, **environment): a daemon on that set-up, killed at the end."""
    started: list[RunningDaemon] = []

    def start(env: FeedsyncEnv, **extra_env: str) -> RunningDaemon:
        daemon = RunningDaemon(env, extra_env)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        if daemon.process.poll() is None:
            os.killpg(daemon.process.pid, signal.SIGKILL)
            daemon.process.wait()


@pytest.fixture
def start_daemon(
    fs_card: FeedsyncEnv, start_daemon_for: Callable[..., RunningDaemon]
) -> Callable[..., RunningDaemon]:
    """start_daemon(**environment): a daemon on the fs_card set-up."""
    return lambda **extra_env: start_daemon_for(fs_card, **extra_env)


def on_a_terminal(
    command: list[str],
    environment: dict[str, str],
    timeout: float = 120,
    press: tuple[Callable[[], bool], bytes] | None = None,
    columns: int | None = None,
) -> tuple[int, str]:
    """Run ``command`` with a pseudo-terminal as its stdin, stdout and stderr (what a user
    at a terminal gives it); returns its exit code and everything it printed.
    ``press``: (when, keys): the keys typed once ``when()`` says so (b"\x03" is Ctrl-C:
    the terminal sends SIGINT to its foreground process group, as for a user).
    ``columns``: the terminal's width, set before the command starts, as a terminal
    emulator does."""
    import pty
    import select

    pid, fd = pty.fork()
    if pid == 0:  # the child: its terminal is fd 0
        if columns is not None:
            import fcntl
            import struct
            import termios

            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        os.execve(command[0], command, environment)
    output = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if press is not None and press[0]():
            os.write(fd, press[1])
            press = None
        ready, _, _ = select.select([fd], [], [], 0.1 if press is not None else 1)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal: it is done
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output.decode("utf-8", "replace")


@pytest.fixture(params=BACKENDS)
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], SQLStorage]:
    """A way to open the same database again, on each engine: what a second process (or
    the same one after a restart) sees of it: a new storage object on one SQLite file, or
    on the test's PostgreSQL database."""
    if request.param == "sqlite":
        from feedsync.storage.sqlite import SQLiteStorage

        return lambda: SQLiteStorage.open(tmp_path / "feedsync.db")
    from feedsync.storage.postgresql import PostgreSQLStorage

    url: str = request.getfixturevalue("pg_url")
    return lambda: PostgreSQLStorage.open(url)
