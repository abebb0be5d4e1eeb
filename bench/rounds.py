"""Rounds of pollers: ``feedsync daemon`` processes on one database polling a world of
feeds from a cold start, measured (scenarios 8 and 10).

A round (:func:`poll_round`) starts its daemons together on a fresh database (PostgreSQL
in a throwaway cluster started with ``tests/pgserver.py``: initdb, 127.0.0.1, a free
port, fsync off; or SQLite, the live database on /dev/shm and the snapshot folder on
disk) and runs until every feed has been polled once and its outcome recorded: wall time
from starting the daemons; CPU time of every daemon process tree (utime + stime,
children included, from /proc/<pid>/stat at that moment, before they are stopped); the
PostgreSQL server's own CPU (the postmaster's tree, same counters, the difference over
the run) apart; and when each daemon logged "feedsync daemon started", with its CPU then,
for a scenario that leaves start-up out of its window.

Feeds only (:func:`feeds_only`): the article pages are not served (404), so the
extraction that follows a daemon's polls costs one short request per article, and it
comes after the measured window anyway (a pass polls all its due feeds before it drains
the queue). The window ends at the first moment when the server has seen a request for
every feed and the database has a poll time for every feed; the daemons are then stopped
(SIGTERM).

Correctness, per run: the feed requests the server counted (one per feed expected: a
feed requested twice is a double poll, counted and reported), the distinct articles
staged (news_summary rows, one per article whatever the number of pollers).

Config: ``[daemon] tick = "60s"`` (the first pass starts at once), ``[poll] interval =
"24h"``, ``min_interval = "1h"``: each feed is due once during the run. ``[poll] per_host``
is ``concurrency`` x the most pollers (:func:`poll_rounds`): every feed here is on one
loopback host, and the host's cap is shared by all the pollers on the database, so with
``per_host = concurrency`` four daemons would have the eight requests in flight of one
between them. Real feeds live on hundreds of hosts, where the cap seldom binds; here it
never does, while every request still takes its host's turn in the database, all of them
on one host's row: the worst case for that contention.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Bench
from bench.measure import BenchError, clean_env
from bench.probe import descendants
from bench.world import TESTS, World

if str(TESTS) not in sys.path:  # tests/pgserver.py starts the throwaway cluster
    sys.path.insert(0, str(TESTS))
import pgserver

TICKS = os.sysconf("SC_CLK_TCK")
POLL_EVERY = 0.05  # s between two looks at the counters


class Skipped(Exception):
    """The scenario cannot run here (no PostgreSQL binaries, no psycopg): the reason."""


def why_not() -> str | None:
    """Why scenarios 8 and 10 cannot run on this machine, or None."""
    if importlib.util.find_spec("psycopg") is None:
        return "the psycopg driver is not installed (pip install 'feedsync[postgresql]')"
    if pgserver.find_bin() is None:
        return "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt install postgresql)"
    return None


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime + cutime + cstime of these processes (the waited-for dead children
    are in their parent's c-times, the live ones are in the list)."""
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


def tree_cpu(pid: int) -> float:
    return cpu_seconds([pid, *descendants(pid)])


@dataclass(frozen=True)
class Run:
    backend: str  # "postgresql" or "sqlite"
    pollers: int
    wall: float  # s, start of the daemons to every feed polled and recorded
    cpu: float  # s, all daemon trees
    server_cpu: float  # s, the PostgreSQL server (0 on SQLite)
    requests: int  # feed requests the server counted
    double_polls: int  # feeds requested more than once
    staged: int  # news_summary rows at the end
    # start-up, for the scenarios that leave it out of the window (10): s from starting
    # the daemons to the first and the last "feedsync daemon started" line of their logs,
    # and the daemons' CPU (each tree's) at the moment its own line was seen
    first_started: float = 0.0
    last_started: float = 0.0
    startup_cpu: float = 0.0
    server_startup_cpu: float = 0.0  # the PostgreSQL server's, before the first line

    @property
    def polling(self) -> float:
        """s from the first daemon's start-up done to every feed polled and recorded: the
        window without the interpreters' and schema's start-up."""
        return self.wall - self.first_started

    @property
    def polling_cpu(self) -> float:
        """The daemons' CPU in :attr:`polling`'s window (each one's start-up left out)."""
        return self.cpu - self.startup_cpu

    @property
    def polling_server_cpu(self) -> float:
        """The PostgreSQL server's CPU from the first daemon's start-up done to the end."""
        return self.server_cpu - self.server_startup_cpu


def round_details(
    runs: dict[tuple[str, int], list[Run]],
    name: Callable[[str, int], str],
    measures: Callable[[Run], dict[str, float]],
) -> dict[str, Any]:
    """results.json's "runs" and "double_polls" of a scenario of poll rounds (8, 10): per
    configuration (``name(backend, pollers)``), each run's ``measures`` (the window each
    scenario takes) and the counts every round has; then each run's double polls."""
    return {
        "runs": {
            name(b, k): [
                {
                    **measures(r),
                    "feed_requests": r.requests,
                    "double_polls": r.double_polls,
                    "staged": r.staged,
                }
                for r in v
            ]
            for (b, k), v in runs.items()
        },
        "double_polls": {name(b, k): [r.double_polls for r in v] for (b, k), v in runs.items()},
    }


def correctness_note(double: dict[str, list[int]]) -> str:
    """The note that every run staged each article once, with its double polls."""
    total = sum(sum(v) for v in double.values())
    return (
        "Correctness: every run staged each article exactly once. Double polls (a feed "
        "requested more than once in the round), per configuration and run: "
        + "; ".join(f"{k}: {v}" for k, v in double.items())
        + (" (none)" if total == 0 else "")
    )


class Cluster:
    """The throwaway PostgreSQL server, its postmaster's pid and a fresh database per run."""

    def __init__(self) -> None:
        bindir = pgserver.find_bin()
        assert bindir is not None
        self.server = pgserver.PostgresServer(bindir)
        self.server.start()
        self.postmaster = int((self.server.data / "postmaster.pid").read_text().split()[0])

    def cpu(self) -> float:
        return tree_cpu(self.postmaster)

    def close(self) -> None:
        self.server.stop()


def _count(backend: str, target: str, sql: str) -> int:
    """The one number ``sql`` gives, from the run's database; 0 while its SQLite file or
    schema is not there yet (the daemon is still starting)."""
    if backend == "postgresql":
        import psycopg

        with psycopg.connect(target) as conn:
            row = conn.execute(sql).fetchone()
    else:
        if not Path(target).exists():
            return 0
        with contextlib.closing(sqlite3.connect(f"file:{target}?mode=ro", uri=True)) as conn:
            try:
                row = conn.execute(sql).fetchone()
            except sqlite3.OperationalError:  # the schema is not there yet
                return 0
    return int(row[0]) if row else 0


def _count_polled(backend: str, target: str) -> int:
    """Feeds whose poll is recorded (last_poll_at set)."""
    return _count(backend, target, "SELECT count(*) FROM feeds WHERE last_poll_at IS NOT NULL")


def _staged(backend: str, target: str) -> int:
    """news_summary rows: the articles staged, one per article however many pollers."""
    return _count(backend, target, "SELECT count(*) FROM news_summary")


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


STARTED = b"feedsync daemon started"  # feedsync/daemon.py logs it when its scheduler runs


def poll_round(
    bench: Bench,
    world: World,
    backend: str,
    pollers: int,
    *,
    label: str,
    cluster: Cluster | None,
    per_host: int,
) -> Run:
    """One cold round: ``pollers`` ``feedsync daemon`` processes on a fresh database
    (PostgreSQL in ``cluster``, or an SQLite file on tmpfs), started together, until the
    server has seen a request for every feed of ``world`` and the database holds a poll
    time for every feed; then the daemons are stopped. Scenarios 8 and 10 both measure
    this round; ``label`` names the run's folders and database, ``per_host`` is the
    ``[poll] per_host`` of every daemon (see the module's docstring)."""
    live = bench.folder(world.name, label)
    sections: dict[str, dict[str, Any]] = {
        "daemon": {"tick": "60s"},
        "poll": {
            "interval": "24h",
            "min_interval": "1h",
            "max_interval": "24h",
            "per_host": per_host,
        },
    }
    if backend == "postgresql":
        assert cluster is not None
        target = cluster.server.create_database(label.replace("-", "_"))
        config = bench.config(live / "feedsync.toml", world.feed_urls, url=target, **sections)
    else:
        card = bench.folder(world.name, f"{label}-card", disk=True)
        target = str(live / "feedsync.db")
        config = bench.config(
            live / "feedsync.toml",
            world.feed_urls,
            db=live / "feedsync.db",
            card=card / "feedsync.db",
            **sections,
        )
    before = world.counters()
    server_before = cluster.cpu() if cluster else 0.0
    processes: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    started_at: dict[int, float] = {}  # daemon index -> s from the start to its line
    startup_cpu: dict[int, float] = {}  # daemon index -> its tree's CPU at that moment
    server_startup_cpu = 0.0  # the server's over the run until the first of those lines
    started = time.monotonic()
    try:
        for index in range(pollers):
            log = live / f"daemon-{index}.log"
            logs.append(log)
            with log.open("wb") as err:
                processes.append(
                    subprocess.Popen(
                        bench.feedsync_command(config, "daemon"),
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                        env=clean_env(),
                        start_new_session=True,
                    )
                )
        deadline = started + max(120.0, len(world.feed_paths) * 0.5)
        paths = world.feed_paths
        while True:
            for index, (process, log) in enumerate(zip(processes, logs, strict=True)):
                if process.poll() is not None:
                    raise BenchError(
                        f"a feedsync daemon died (exit {process.returncode}):\n"
                        + log.read_text(errors="replace")[-3000:]
                    )
                if index not in started_at and STARTED in log.read_bytes():
                    startup_cpu[index] = tree_cpu(process.pid)
                    started_at[index] = time.monotonic() - started
                    if len(started_at) == 1 and cluster is not None:
                        server_startup_cpu = cluster.cpu() - server_before
            hits = world.server.hits
            if all(hits[path] > before.get(path, (0, 0))[0] for path in paths) and _count_polled(
                backend, target
            ) >= len(paths):
                break
            if time.monotonic() > deadline:
                raise BenchError(f"{label}: not every feed was polled in time")
            time.sleep(POLL_EVERY)
        wall = time.monotonic() - started
        cpu = sum(tree_cpu(process.pid) for process in processes)
        server_cpu = (cluster.cpu() - server_before) if cluster else 0.0
        after = world.counters()
    finally:
        _stop(processes)
    for process, log in zip(processes, logs, strict=True):
        text = log.read_text(errors="replace")
        if process.returncode != 0 or "Traceback" in text:
            raise BenchError(
                f"{label}: a daemon stopped badly (exit {process.returncode}):\n{text}"
            )
    requests = sum(after[path][0] - before.get(path, (0, 0))[0] for path in world.feed_paths)
    double = sum(after[path][0] - before.get(path, (0, 0))[0] > 1 for path in world.feed_paths)
    staged = _staged(backend, target)
    if staged != len(world.articles):
        raise BenchError(f"{label}: {staged} articles staged, expected {len(world.articles)}")
    if cluster is not None:
        cluster.server.drop_database(target)
    return Run(
        backend,
        pollers,
        wall,
        cpu,
        server_cpu,
        requests,
        double,
        staged,
        first_started=min(started_at.values(), default=0.0),
        last_started=max(started_at.values(), default=0.0),
        startup_cpu=sum(startup_cpu.values()),
        server_startup_cpu=server_startup_cpu,
    )


def feeds_only(world: World) -> World:
    """``world`` with its article pages answering 404: the rounds stage feeds only."""
    for article in world.articles:
        world.server.remove(article.path)
    return world


def poll_rounds(
    bench: Bench,
    world: World,
    configs: list[tuple[str, int]],
    *,
    label: str,
    describe: Callable[[Run], str],
) -> dict[tuple[str, int], list[Run]]:
    """``bench.params.repeat`` rounds (:func:`poll_round`) of every (backend, pollers)
    configuration, who goes first rotating from one repeat to the next, each named by
    ``label`` (the scenario's: "b8") with its backend, pollers and repeat, and logged with
    ``describe``. Every daemon's ``per_host`` is ``concurrency`` x the most pollers of a
    configuration: every feed is on one host, and the cap, shared by the pollers on a
    database, must not bind. One throwaway PostgreSQL cluster serves them all, closed at
    the end whatever happens. Scenarios 8 and 10 run their rounds so."""
    runs: dict[tuple[str, int], list[Run]] = {c: [] for c in configs}
    per_host = bench.params.concurrency * max(pollers for _, pollers in configs)
    cluster = Cluster()
    try:
        for rep in range(bench.params.repeat):
            shift = rep % len(configs)  # who goes first rotates
            for backend, pollers in configs[shift:] + configs[:shift]:
                made = poll_round(
                    bench,
                    world,
                    backend,
                    pollers,
                    label=f"{label}-{backend[:2]}-{pollers}-{rep}",
                    cluster=cluster if backend == "postgresql" else None,
                    per_host=per_host,
                )
                runs[backend, pollers].append(made)
                bench.log(f"  {backend} x{pollers} run {rep + 1}: {describe(made)}")
    finally:
        cluster.close()
    return runs


def pgserver_version() -> str:
    bindir = pgserver.find_bin()
    return bindir.parent.name if bindir else "?"
