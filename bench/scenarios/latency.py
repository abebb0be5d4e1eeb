"""Scenario 10: several pollers when the feeds are far away (every answer after ~200 ms).

Scenario 8's loopback server answers in well under a millisecond, so its pollers wait on
this machine's two cores, not on the network, and more pollers only add processes
competing for them. A real feed server is tens to hundreds of milliseconds away: a poller
spends most of a feed's poll waiting for the answer, with ``[poll] concurrency`` requests
in flight, and more pollers should bring proportionally more feeds per second. Here the
bench's server waits ``latency_delay`` (0.2 s) before answering each feed request (in
that request's own thread: LocalServer is a threading server, so the requests overlap),
and ``latency_feeds`` (400) feeds of ``latency_entries`` (10) entries are polled from a
cold start by 1, 2 and 4 ``feedsync daemon`` processes on one PostgreSQL database: the
same round as scenario 8 (:func:`bench.rounds.poll_round`: a fresh database per run,
the window ends when the server has seen every feed and the database holds a poll time
for every feed; article pages 404, feeds stage only).

What differs from scenario 8: the daemons' start-up (interpreter, schema, the config's
feeds) is left out of the window, since with the round this short it would be most of
the 4-poller figure. The window opens when the first daemon logs "feedsync daemon
started" (its first pass begins then) and each daemon's CPU is counted from its own
line; the PostgreSQL server's from the first line. The 1-poller run is the baseline: the
goal (issue 21) is 4 pollers at >= 3x its feeds per second, every feed polled once.

One poller's feeds per second is also set against its network ceiling, ``concurrency /
latency_delay`` (8 / 0.2 s = 40 feeds/s): near 1, a poller is bound by the network, as
on the internet, not by this machine.

``--latency-sqlite`` (``Params.latency_sqlite``) adds the same 1, 2 and 4 daemons on one
SQLite database (live file on tmpfs, snapshot folder on disk), interleaved with the
PostgreSQL runs, 2 and 4 against 1 again: the round takes twice as long, so it is off by
default.
"""

from __future__ import annotations

from statistics import median

from bench.common import Bench, Result
from bench.rounds import (
    Run,
    Skipped,
    correctness_note,
    feeds_only,
    pgserver_version,
    poll_rounds,
    round_details,
    why_not,
)
from bench.world import World

POLLERS = (1, 2, 4)  # daemons on one database; 1 is the baseline


def run(bench: Bench) -> Result:
    reason = why_not()
    if reason:
        raise Skipped(reason)
    p = bench.params
    n, delay = p.latency_feeds, p.latency_delay
    backends = ("postgresql", "sqlite") if p.latency_sqlite else ("postgresql",)
    bench.log(
        f"scenario 10: {n} feeds x {p.latency_entries} entries answered after "
        f"{delay * 1000:.0f} ms, {'/'.join(map(str, POLLERS))} daemons on "
        f"{' and '.join(backends)}, {p.repeat} runs each"
    )
    world = feeds_only(World(bench.server, "latency", n, p.latency_entries, feed_delay=delay))
    configs = [(b, k) for b in backends for k in POLLERS]
    runs = poll_rounds(
        bench,
        world,
        configs,
        label="b10",
        describe=lambda made: (
            f"{made.polling:.1f} s polling ({made.wall:.1f} s with start-up), "
            f"{n / made.polling:.0f} feeds/s, daemons {made.polling_cpu:.2f} s CPU, server "
            f"{made.polling_server_cpu:.2f} s, {made.requests} feed requests, "
            f"{made.double_polls} double polls"
        ),
    )
    return _result(bench, world, runs)


def _result(bench: Bench, world: World, every: dict[tuple[str, int], list[Run]]) -> Result:
    p = bench.params
    n, delay = p.latency_feeds, p.latency_delay
    runs = {k: v for (b, k), v in every.items() if b == "postgresql"}
    one = runs[1]
    ceiling = p.concurrency / delay
    result = Result(
        10,
        "Several pollers, feeds 200 ms away",
        f"2 and 4 `feedsync daemon` on one PostgreSQL {pgserver_version()} database, every "
        f"feed answered after {delay * 1000:.0f} ms",
        "1 `feedsync daemon` on the same kind of database and feeds",
    )
    for pollers in POLLERS[1:]:
        result.row(
            f"feeds per second, x{pollers} vs x1" + (" (goal: >= 3x)" if pollers == 4 else ""),
            "feeds/s",
            [n / r.polling for r in runs[pollers]],
            [n / r.polling for r in one],
            lower_is_better=False,
            digits=0,
        )
    for pollers in POLLERS[1:]:
        result.row(
            f"daemons' CPU per feed, x{pollers} vs x1",
            "ms",
            [1000 * r.polling_cpu / n for r in runs[pollers]],
            [1000 * r.polling_cpu / n for r in one],
        )
    for pollers in POLLERS[1:]:
        result.row(
            f"CPU per feed with the PostgreSQL server's, x{pollers} vs x1",
            "ms",
            [1000 * (r.polling_cpu + r.polling_server_cpu) / n for r in runs[pollers]],
            [1000 * (r.polling_cpu + r.polling_server_cpu) / n for r in one],
        )
    for pollers in POLLERS[1:]:
        result.row(
            f"feed requests per feed (1: no double poll), x{pollers} vs x1",
            "",
            [r.requests / n for r in runs[pollers]],
            [r.requests / n for r in one],
        )
    sqlite = {k: v for (b, k), v in every.items() if b == "sqlite"}
    for pollers in POLLERS[1:] if sqlite else ():
        result.row(
            f"SQLite: feeds per second, x{pollers} vs x1",
            "feeds/s",
            [n / r.polling for r in sqlite[pollers]],
            [n / r.polling for r in sqlite[1]],
            lower_is_better=False,
            digits=0,
        )
        result.row(
            f"SQLite: daemons' CPU per feed, x{pollers} vs x1",
            "ms",
            [1000 * r.polling_cpu / n for r in sqlite[pollers]],
            [1000 * r.polling_cpu / n for r in sqlite[1]],
        )
        result.row(
            f"SQLite: feed requests per feed (1: no double poll), x{pollers} vs x1",
            "",
            [r.requests / n for r in sqlite[pollers]],
            [r.requests / n for r in sqlite[1]],
        )
    result.row(
        f"one poller's feeds/s vs its network ceiling (concurrency {p.concurrency} / "
        f"{delay * 1000:.0f} ms)",
        "feeds/s",
        [n / r.polling for r in one],
        [ceiling for _ in one],
        lower_is_better=False,
        digits=0,
    )
    details = round_details(
        every,
        _name,
        lambda r: {
            "polling_s": round(r.polling, 2),
            "wall_with_startup_s": round(r.wall, 2),
            "first_started_s": round(r.first_started, 2),
            "last_started_s": round(r.last_started, 2),
            "daemon_cpu_s": round(r.polling_cpu, 3),
            "daemon_startup_cpu_s": round(r.startup_cpu, 3),
            "server_cpu_s": round(r.polling_server_cpu, 3),
        },
    )
    # how much of its ceiling each configuration reached, and how busy its daemons were:
    # far below one core each, they wait on the network
    reached: dict[str, float] = {}
    busy: dict[str, float] = {}
    for (backend, k), made in every.items():
        reached[_name(backend, k)] = median([n / r.polling for r in made]) / (k * ceiling)
        busy[_name(backend, k)] = median([r.polling_cpu / r.polling / k for r in made])
    result.details = {
        "world": world.describe(),
        "network_ceiling_one_poller_feeds_per_s": ceiling,
        "share_of_ceiling": {k: round(v, 3) for k, v in reached.items()},
        "daemon_core_share": {k: round(v, 3) for k, v in busy.items()},
        **details,
    }
    result.notes += [
        f"{n} feeds x {p.latency_entries} entries ({len(world.articles)} distinct articles, "
        f"each in ~{world.overlap} feeds), served from 127.0.0.1, every feed request "
        f"answered after {delay * 1000:.0f} ms (the server's thread for that request "
        "sleeps; the others go on); article pages 404 (feeds stage only). A fresh "
        "PostgreSQL database per run.",
        'Window: from the first daemon\'s log line "feedsync daemon started" (its first '
        "pass begins) until the server has seen a request for every feed and the database "
        "holds a poll time for every feed: the daemons' start-up (interpreter, schema, the "
        "config's feeds) is left out, and so is each daemon's CPU until its own line; the "
        "PostgreSQL server's CPU is counted from the first line. Per run, in results.json: "
        "the wall time with start-up and when the last daemon had started.",
        correctness_note(details["double_polls"]),
        f"Every daemon: [poll] concurrency {p.concurrency}, per_host "
        f"{p.concurrency * max(POLLERS)} (the per-host cap is shared by the pollers on a "
        "database and every feed is on one host: it must not bind, as in scenario 8). "
        f"One poller has at most {p.concurrency} requests in flight: {ceiling:.0f} feeds/s "
        f"at {delay * 1000:.0f} ms each is its ceiling; four have {4 * p.concurrency}.",
        "Share of the network ceiling reached (median feeds/s over pollers x "
        f"{ceiling:.0f}): "
        + ", ".join(f"{k} {v:.0%}" for k, v in reached.items())
        + "; each daemon's median use of a core in the window: "
        + ", ".join(f"{k} {v:.0%}" for k, v in busy.items())
        + ".",
        f"The PostgreSQL {pgserver_version()} cluster runs on this machine, fsync off "
        "(tests/pgserver.py); the daemons, the server and the feed server share its cores.",
    ]
    if sqlite:
        result.notes.append(
            "--latency-sqlite: the same 1, 2 and 4 daemons on one SQLite database (live "
            "file on tmpfs, snapshot folder on disk), interleaved with the PostgreSQL runs; "
            "the SQLite rows set 2 and 4 against 1 on SQLite."
        )
    return result


def _name(backend: str, pollers: int) -> str:
    """A configuration's name in the notes and results.json: "x4" on PostgreSQL (the
    scenario's subject), "sqlite x4" on SQLite."""
    return f"x{pollers}" if backend == "postgresql" else f"{backend} x{pollers}"
