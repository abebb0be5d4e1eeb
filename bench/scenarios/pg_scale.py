"""Scenario 8: several pollers on PostgreSQL against one daemon on SQLite.

A world of ``pg_feeds`` feeds (2,000) of ``pg_entries`` entries each (10: the work is
polling and staging, not parsing big documents), polled from a cold start by

- 1, 2 and 4 ``feedsync daemon`` processes sharing one PostgreSQL database (a fresh
  database per run), and
- 1 ``feedsync daemon`` on SQLite (the live database on /dev/shm, the snapshot folder on
  disk), the baseline,

each a round of :mod:`bench.rounds` (how it is run, measured and checked is said there):
wall time from starting the daemons -> feeds per second; the daemons' CPU -> CPU per
feed; and the PostgreSQL server's own CPU reported apart, so that the CPU per feed says
where the work went. The daemons' start-up is inside the window (scenario 10 leaves it
out). 2,000 feeds on one host, each request taking its host's turn in the database
(two short write transactions): the worst case for that contention.
"""

from __future__ import annotations

from bench.common import Bench, Result
from bench.rounds import (
    Skipped,
    correctness_note,
    feeds_only,
    pgserver_version,
    poll_rounds,
    round_details,
    why_not,
)
from bench.world import World

__all__ = ["Skipped", "run", "why_not"]  # __main__ and tests/test_bench.py ask here

POLLERS = (1, 2, 4)  # daemons on PostgreSQL


def run(bench: Bench) -> Result:
    reason = why_not()
    if reason:
        raise Skipped(reason)
    p = bench.params
    bench.log(
        f"scenario 8: {p.pg_feeds} feeds x {p.pg_entries} entries, daemons on PostgreSQL "
        f"x{'/'.join(map(str, POLLERS))} against 1 on SQLite, {p.repeat} runs each"
    )
    world = feeds_only(World(bench.server, "pgscale", p.pg_feeds, p.pg_entries))
    configs = [("sqlite", 1), *(("postgresql", n) for n in POLLERS)]
    runs = poll_rounds(
        bench,
        world,
        configs,
        label="b8",
        describe=lambda made: (
            f"{made.wall:.1f} s, {p.pg_feeds / made.wall:.0f} feeds/s, daemons "
            f"{made.cpu:.1f} s CPU, server {made.server_cpu:.1f} s, {made.requests} feed "
            f"requests, {made.double_polls} double polls"
        ),
    )

    n = p.pg_feeds
    base = runs["sqlite", 1]
    result = Result(
        8,
        "Several pollers on PostgreSQL",
        f"1, 2 and 4 `feedsync daemon` on one PostgreSQL {pgserver_version()} database",
        "1 `feedsync daemon` on SQLite (live database on tmpfs)",
    )
    for pollers in POLLERS:
        result.row(
            f"feeds per second, PostgreSQL x{pollers} vs SQLite x1",
            "feeds/s",
            [n / r.wall for r in runs["postgresql", pollers]],
            [n / r.wall for r in base],
            lower_is_better=False,
            digits=0,
        )
    for pollers in POLLERS:
        result.row(
            f"daemons' CPU per feed, PostgreSQL x{pollers} vs SQLite x1",
            "ms",
            [1000 * r.cpu / n for r in runs["postgresql", pollers]],
            [1000 * r.cpu / n for r in base],
        )
    for pollers in POLLERS:
        result.row(
            f"CPU per feed with the PostgreSQL server's, x{pollers} vs SQLite x1",
            "ms",
            [1000 * (r.cpu + r.server_cpu) / n for r in runs["postgresql", pollers]],
            [1000 * r.cpu / n for r in base],
        )
    for pollers in POLLERS:
        result.row(
            f"feed requests per feed (1: no double poll), PostgreSQL x{pollers} vs SQLite x1",
            "",
            [r.requests / n for r in runs["postgresql", pollers]],
            [r.requests / n for r in base],
        )
    details = round_details(
        runs,
        lambda b, k: f"{b} x{k}",
        lambda r: {
            "wall_s": round(r.wall, 2),
            "daemon_cpu_s": round(r.cpu, 2),
            "server_cpu_s": round(r.server_cpu, 2),
        },
    )
    result.details = {"world": world.describe(), **details}
    result.notes += [
        f"{n} feeds x {p.pg_entries} entries ({len(world.articles)} distinct articles, each in "
        f"~{world.overlap} feeds), served from 127.0.0.1; article pages 404 (feeds stage only). "
        "Cold start: a fresh database per run, the daemons' start-up (interpreter, schema, "
        "adding the config's feeds) inside the window.",
        "Window: from starting the daemons until the server has seen a request for every "
        "feed and the database holds a poll time for every feed. CPU: utime + stime of each "
        "daemon's process tree (children included) from /proc at that moment; PostgreSQL "
        "server CPU: the postmaster's tree, the difference over the window.",
        correctness_note(details["double_polls"]),
        f"Every daemon: [poll] concurrency {p.concurrency}, per_host "
        f"{p.concurrency * max(POLLERS)}. The per-host cap is shared by all the pollers on a "
        "database and every feed here is on one host: this keeps it from binding (real "
        "feeds spread over many hosts), while each request still takes its host's turn in "
        "the database.",
        f"The PostgreSQL {pgserver_version()} cluster runs on this machine, fsync off "
        "(tests/pgserver.py); the daemons and the server share its cores.",
    ]
    return result
