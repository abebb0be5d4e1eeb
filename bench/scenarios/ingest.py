"""Scenarios 1 and 2: the feeds stage, cold and steady, against ``reader``.

1. Cold ingest: a fresh database, N feeds of M entries, feeds stage only (no article is
   fetched). feedsync: one poll-only pass (``PassPlan(extract=False)``, driver
   ``feedsync_pass.py``); reader: ``add_feed`` x N, ``update_feeds(workers=concurrency)``.
2. Steady state: the second pass over the same database and the same (unchanged) feeds:
   every feed answers 304. reader: the second ``update_feeds``, forced for every feed.
   Each side also runs once with no feed at all (a fresh database), which gives the
   fixed cost of a process (interpreter, imports, opening the database) to subtract.

Each repetition starts both sides from an empty database; which side goes first
alternates between repetitions, so neither always runs on a warmer machine.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from bench import baseline
from bench.common import Bench, Result, mb
from bench.measure import BenchError, Cost, last_json, measure
from bench.world import Traffic, World, corpus_pages, write_lines


@dataclass(frozen=True)
class Side:
    cold: Cost
    steady: Cost
    cold_traffic: Traffic
    steady_traffic: Traffic
    entries: int  # rows the cold run stored
    db_bytes: int
    empty: Cost  # the same command with no feed: the fixed cost of a run
    steady_writes: int = 0  # write transactions of the steady pass (feedsync only)


def _feedsync(bench: Bench, world: World, rep: int) -> Side:
    folder = bench.folder("ingest", f"feedsync-{rep}")
    config = bench.config(folder / "feedsync.toml", world.feed_urls, db=folder / "feedsync.db")
    command = bench.driver("feedsync_pass.py", str(config), "--no-extract")
    before = world.counters()
    cold = measure(command)
    cold_traffic = world.traffic(before)
    stats = last_json(cold.stdout)
    if stats["feed_errors"] or stats["staged"] != len(world.articles):
        raise BenchError(f"feedsync's cold pass staged {stats} of {len(world.articles)}")
    before = world.counters()
    steady = measure(command)
    steady_traffic = world.traffic(before)
    again = last_json(steady.stdout)
    if again["not_modified"] != len(world.feed_paths) or again["staged"]:
        raise BenchError(f"feedsync's second pass was not all 304s: {again}")
    # both files: the live database (feedsync-live.db, beside it without a [storage]
    # snapshot) and the card database (feedsync.db), with their journals
    size = sum(p.stat().st_size for p in folder.glob("feedsync*.db*"))
    nothing = bench.config(folder / "empty.toml", [], db=folder / "empty.db")
    empty = measure(bench.driver("feedsync_pass.py", str(nothing), "--no-extract"))
    shutil.rmtree(folder)
    return Side(
        cold.cost,
        steady.cost,
        cold_traffic,
        steady_traffic,
        stats["staged"],
        size,
        empty.cost,
        int(again.get("write_transactions", 0)),
    )


def _reader(bench: Bench, world: World, rep: int, feeds_file: str) -> Side:
    folder = bench.folder("ingest", f"reader-{rep}")
    db = str(folder / "reader.sqlite")
    workers = str(bench.params.concurrency)
    command = bench.driver(
        "reader_update.py", db, feeds_file, "--workers", workers, python=baseline.python()
    )
    before = world.counters()
    cold = measure(command)
    cold_traffic = world.traffic(before)
    stats = last_json(cold.stdout)
    expected = len(world.feed_paths) * world.entries_per_feed
    if stats["errors"] or stats["entries"] != expected:
        raise BenchError(f"reader's cold update stored {stats}, expected {expected} entries")
    before = world.counters()
    steady = measure([*command, "--again"])
    steady_traffic = world.traffic(before)
    again = last_json(steady.stdout)
    if again["not_modified"] != len(world.feed_paths):
        raise BenchError(f"reader's second update was not all 304s: {again}")
    size = sum(p.stat().st_size for p in folder.glob("reader.sqlite*"))
    no_feeds = write_lines(folder / "none.txt", [])
    empty = measure(
        bench.driver(
            "reader_update.py",
            str(folder / "empty.sqlite"),
            str(no_feeds),
            python=baseline.python(),
        )
    )
    shutil.rmtree(folder)
    return Side(
        cold.cost, steady.cost, cold_traffic, steady_traffic, stats["entries"], size, empty.cost
    )


def run(bench: Bench) -> tuple[Result, Result, list[Side], list[Side]]:
    p = bench.params
    reader_version = baseline.ensure(bench.log)
    world = World(bench.server, "ingest", p.feeds, p.entries, pages=corpus_pages())
    feeds_file = str(write_lines(bench.folder("ingest", "lists") / "feeds.txt", world.feed_urls))
    ours: list[Side] = []
    theirs: list[Side] = []
    for rep in range(p.repeat):
        bench.log(f"scenarios 1-2: run {rep + 1}/{p.repeat}")
        if rep % 2 == 0:
            ours.append(_feedsync(bench, world, rep))
            theirs.append(_reader(bench, world, rep, feeds_file))
        else:
            theirs.append(_reader(bench, world, rep, feeds_file))
            ours.append(_feedsync(bench, world, rep))

    n = len(world.feed_paths)
    shape = world.describe()
    reader_name = f"reader {reader_version}, update_feeds(workers={p.concurrency})"
    cold = Result(
        1,
        "Cold ingest, feeds stage only",
        f"poll-only pass (PassPlan(extract=False)), concurrency {p.concurrency}",
        reader_name,
    )
    cold.row("wall time", "s", [s.cold.wall for s in ours], [s.cold.wall for s in theirs])
    cold.row("CPU time", "s", [s.cold.cpu for s in ours], [s.cold.cpu for s in theirs])
    cold.row(
        "CPU per entry seen",
        "ms",
        [s.cold.cpu * 1000 / (n * p.entries) for s in ours],
        [s.cold.cpu * 1000 / (n * p.entries) for s in theirs],
        digits=3,
    )
    cold.row(
        "peak RSS",
        "MB",
        [mb(s.cold.main_maxrss_kb) for s in ours],
        [mb(s.cold.main_maxrss_kb) for s in theirs],
        digits=1,
    )
    cold.row(
        "database size after",
        "MB",
        [s.db_bytes / 2**20 for s in ours],
        [s.db_bytes / 2**20 for s in theirs],
        digits=1,
    )
    cold.details = {
        "world": shape,
        "feedsync_rows": ours[0].entries,
        "reader_entries": theirs[0].entries,
        "feed_bytes_parsed": ours[0].cold_traffic.feed_bytes,
        "feed_requests": [ours[0].cold_traffic.feed_requests, theirs[0].cold_traffic.feed_requests],
    }
    cold.notes.append(
        f"{n} feeds x {p.entries} entries ({shape['feed_bytes_total'] / 2**20:.1f} MB of feed "
        f"documents), {len(world.articles)} distinct articles each in ~{world.overlap} feeds. "
        f"feedsync stores each article once ({ours[0].entries} rows, linked to its feeds); "
        f"reader stores one entry per feed ({theirs[0].entries} rows). Both databases on tmpfs."
    )

    steady = Result(
        2,
        "Steady state: second pass, nothing new (conditional GET, all 304)",
        "the same poll-only pass again",
        f"{reader_name}, scheduled=False (every feed)",
    )
    steady.row(
        "CPU per feed",
        "ms",
        [s.steady.cpu * 1000 / n for s in ours],
        [s.steady.cpu * 1000 / n for s in theirs],
    )
    steady.row(
        "CPU per feed, start-up excluded",
        "ms",
        [(s.steady.cpu - s.empty.cpu) * 1000 / n for s in ours],
        [(s.steady.cpu - s.empty.cpu) * 1000 / n for s in theirs],
    )
    steady.row(
        "CPU of the same run with no feed",
        "s",
        [s.empty.cpu for s in ours],
        [s.empty.cpu for s in theirs],
        digits=3,
    )
    steady.row("CPU time", "s", [s.steady.cpu for s in ours], [s.steady.cpu for s in theirs])
    steady.row("wall time", "s", [s.steady.wall for s in ours], [s.steady.wall for s in theirs])
    steady.row(
        "requests",
        "",
        [s.steady_traffic.feed_requests for s in ours],
        [s.steady_traffic.feed_requests for s in theirs],
        digits=0,
    )
    steady.row(
        "feed bytes parsed",
        "B",
        [s.steady_traffic.feed_bytes for s in ours],
        [s.steady_traffic.feed_bytes for s in theirs],
        digits=0,
    )
    steady.details = {
        "not_modified": [ours[0].steady_traffic.feed_not_modified,
                         theirs[0].steady_traffic.feed_not_modified],
        "feedsync_write_transactions_per_feed": round(
            sorted(s.steady_writes for s in ours)[len(ours) // 2] / n, 3),
    }  # fmt: skip
    steady.notes.append(
        f"{n} feeds, every one answered 304 Not Modified to both. 'CPU per feed' includes "
        "the process start-up (interpreter, imports, opening the database: what cron pays); "
        "'start-up excluded' subtracts a run of the same command with no feed (CPU time)."
    )
    return cold, steady, ours, theirs
