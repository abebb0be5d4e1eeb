"""Scenario 3: feedsync's fetch + extract stage for K new articles against a bare loop.

feedsync: ``feedsync run --json`` (the CLI, as a user runs it) on a database where the K
articles are already staged (a poll-only pass made it once; each run gets a fresh copy)
and whose feeds all answer 304, so only the extraction stage works: K pages fetched
(concurrency ``[poll] concurrency``) and extracted by ``[extract] workers`` processes.
Baseline: a sequential loop of httpx GET + ``trafilatura.extract`` over the same K
pages (bench/drivers/bare_extract.py).

Both sides are also run with nothing to do (feedsync: the same run again, all done;
baseline: importing httpx and trafilatura), so the CPU per article can be given without
the fixed start-up cost. feedsync also runs with ``[extract] workers = 1``: on a small
machine two extraction processes side by side cost more CPU per page than one (shared
caches and memory bandwidth, a busy host), which is not feedsync's own overhead.

The goal of issue 21 ("CPU per article <= 1.05x bare trafilatura's", one worker) is
judged on the **marginal** cost of an article, without what a run pays once whatever its
size. With one worker both sides also extract each half of the K articles alone (A: every
other one, B: the rest; a copy of the staged database with the other half marked
``gone``, the bare loop given the same URLs), interleaved with the K runs. If a run costs
fixed + the sum of its pages, then fixed = cost(A) + cost(B) - cost(K), and an article
costs (cost(K) - fixed) / K on each side: its mean over the same K pages. (Two halves,
not one against K: the pages' costs differ widely, so no half is like the whole.)
"Start-up excluded" subtracts an idle run instead, which leaves in what only a run with
work pays once: the extraction pool's start (forkserver, resource tracker, the worker's
interpreter), which the bare loop has no counterpart of and which the issue counts in
its own start-up line, not per article. The fixed part is reported on its own row.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench.common import Bench, Result, copy_database
from bench.measure import BenchError, Cost, last_json, measure
from bench.world import World, corpus_pages, write_lines
from feedsync.board import resolve_workers

# the RunStats counters of an article that was fetched and extracted, whatever came of it
DONE = ("extracted", "extract_failed", "gone", "duplicates")


@dataclass(frozen=True)
class Side:
    work: Cost  # K articles
    idle: Cost  # the same with nothing to extract
    extracted: int
    page_requests: int


def _world(bench: Bench, name: str, k: int, feeds: int) -> World:
    """k articles, each in up to 3 of ``feeds`` feeds."""
    entries = -(-k * 3 // feeds)
    world = World(bench.server, name, feeds, entries, pages=corpus_pages(), distinct_pages=True)
    if len(world.articles) < k:
        raise BenchError(f"the extraction world has {len(world.articles)} articles, not {k}")
    return world


def _template(bench: Bench, world: World) -> Path:
    """A database with the world's articles staged and its feeds' validators stored."""
    template = bench.folder("extract", "template") / "feedsync.db"
    config = bench.config(template.parent / "feedsync.toml", world.feed_urls, db=template)
    staged = last_json(
        measure(bench.driver("feedsync_pass.py", str(config), "--no-extract")).stdout
    )
    if staged["staged"] != len(world.articles):
        raise BenchError(f"staging the extraction world gave {staged}")
    return template


def _halves(bench: Bench, template: Path) -> list[tuple[Path, list[str]]]:
    """Two copies of ``template``, each with every other staged article ``gone`` (never
    claimed), the one the odd articles, the other the even ones; with the URLs of those
    left to extract."""
    halves = []
    for parity in (0, 1):
        half = bench.folder("extract", f"half-{parity}") / template.name
        copy_database(template, half)
        live = half.with_name(f"{half.stem}-live{half.suffix}")
        with contextlib.closing(sqlite3.connect(live if live.exists() else half)) as db, db:
            db.execute(
                "UPDATE news_summary SET state = 'gone' WHERE state = 'new' AND id % 2 = ?",
                (parity,),
            )
            urls = [u for (u,) in db.execute("SELECT url FROM news_summary WHERE state = 'new'")]
        halves.append((half, urls))
    return halves


def _fixed(full: list[Side], a: list[Side], b: list[Side]) -> list[float]:
    """s of CPU a run pays whatever its size, run by run: cost(A) + cost(B) - cost(K)."""
    return [x.work.cpu + y.work.cpu - f.work.cpu for f, x, y in zip(full, a, b, strict=True)]


def _marginal(full: list[Side], a: list[Side], b: list[Side], k: int) -> list[float]:
    """ms of CPU per article without the fixed part, run by run."""
    fixed = _fixed(full, a, b)
    return [(f.work.cpu - c) * 1000 / k for f, c in zip(full, fixed, strict=True)]


def run(bench: Bench) -> tuple[Result, list[Side], list[Side]]:
    p = bench.params
    feeds = max(3, p.articles // 10)
    world = _world(bench, "extract", p.articles, feeds)
    k = len(world.articles)
    lists = bench.folder("extract", "lists")
    urls_file = str(write_lines(lists / "pages.txt", world.article_urls()))
    template = _template(bench, world)
    # each half of the articles alone: the same feeds (their 304s cancel out)
    halves = [
        (path, len(urls), str(write_lines(lists / f"half-{n}.txt", urls)))
        for n, (path, urls) in enumerate(_halves(bench, template))
    ]

    ours: list[Side] = []
    single: list[Side] = []  # feedsync with one extraction worker
    theirs: list[Side] = []
    # the same two with each half of the articles
    halves_ours: list[list[Side]] = [[], []]
    halves_theirs: list[list[Side]] = [[], []]
    for rep in range(p.repeat):
        bench.log(f"scenario 3: run {rep + 1}/{p.repeat}")
        runs: list[tuple[list[Side], Callable[[int], Side]]] = [
            (ours, lambda r: _feedsync(bench, world, template, r, p.workers)),
            (theirs, lambda r: _bare(bench, world, urls_file)),
            (single, lambda r: _feedsync(bench, world, template, r, 1)),
        ]
        for n, (path, count, urls) in enumerate(halves):
            extract_half = partial(_feedsync, bench, world, path, workers=1, k=count)
            runs.append((halves_ours[n], extract_half))
            runs.append((halves_theirs[n], partial(_bare_of, bench, world, urls)))
        for sides, step in runs if rep % 2 == 0 else reversed(runs):
            sides.append(step(rep))

    result = Result(
        3,
        f"Extraction: fetch + extract {k} new articles",
        f"`feedsync run` (extraction stage; `[extract] workers = {json.dumps(p.workers)}`: "
        f"{resolve_workers(p.workers)} here, concurrency {p.concurrency})",
        "sequential httpx GET + trafilatura.extract (same options)",
    )
    result.row("wall time", "s", [s.work.wall for s in ours], [s.work.wall for s in theirs])
    result.row(
        "throughput",
        "articles/s",
        [k / s.work.wall for s in ours],
        [k / s.work.wall for s in theirs],
        lower_is_better=False,
        digits=1,
    )
    result.row("CPU time", "s", [s.work.cpu for s in ours], [s.work.cpu for s in theirs])
    result.row(
        "CPU per article",
        "ms",
        [s.work.cpu * 1000 / k for s in ours],
        [s.work.cpu * 1000 / k for s in theirs],
        digits=1,
    )
    result.row(
        "CPU per article, start-up excluded",
        "ms",
        [(s.work.cpu - s.idle.cpu) * 1000 / k for s in ours],
        [(s.work.cpu - s.idle.cpu) * 1000 / k for s in theirs],
        digits=1,
    )
    result.row(
        "wall time, 1 extraction worker",
        "s",
        [s.work.wall for s in single],
        [s.work.wall for s in theirs],
    )
    result.row(
        "CPU per article, 1 extraction worker, start-up excluded",
        "ms",
        [(s.work.cpu - s.idle.cpu) * 1000 / k for s in single],
        [(s.work.cpu - s.idle.cpu) * 1000 / k for s in theirs],
        digits=1,
    )
    result.row(
        "CPU per article, 1 extraction worker, marginal (fixed part excluded)",
        "ms",
        _marginal(single, halves_ours[0], halves_ours[1], k),
        _marginal(theirs, halves_theirs[0], halves_theirs[1], k),
        digits=1,
    )
    result.row(
        "fixed CPU of a run with work, 1 extraction worker",
        "s",
        _fixed(single, halves_ours[0], halves_ours[1]),
        _fixed(theirs, halves_theirs[0], halves_theirs[1]),
        digits=3,
    )
    result.details = {
        "articles": k,
        "feeds": len(world.feed_paths),
        "extracted": [ours[0].extracted, theirs[0].extracted],
        "page_requests": [ours[0].page_requests, theirs[0].page_requests],
        "idle_cpu_s": [min(s.idle.cpu for s in ours), min(s.idle.cpu for s in theirs)],
        "page_bytes_total": sum(world.page_sizes.values()),
    }
    pages = "real news pages" if world.pages else "generated pages"
    result.notes.append(
        f"{k} {pages} (median {_median_kb(world):.0f} KB); feedsync's run also "
        f"polls {len(world.feed_paths)} feeds (304) and stores every article (with its "
        "full-text index); the bare loop stores nothing. 'Start-up excluded' subtracts a "
        "run with nothing to extract (feedsync) / `import httpx, trafilatura` (baseline). "
        "'Marginal' (one worker): each half of the K articles (every other one, the rest) "
        "is also extracted alone; the fixed CPU of a run is cost(A) + cost(B) - cost(K) and "
        "an article costs (cost(K) - fixed) / K: the mean over the same pages, without what "
        "a run pays once (feedsync: the pool's start, forkserver, resource tracker, worker "
        "interpreter; both: the interpreter, imports). "
        "The issue's goal (<= 1.05x) is judged on the marginal row."
    )
    return result, ours, theirs


def _median_kb(world: World) -> float:
    sizes = sorted(world.page_sizes.values())
    return sizes[len(sizes) // 2] / 1024


def _feedsync(
    bench: Bench,
    world: World,
    template: Path,
    rep: int,
    workers: int | str,
    k: int | None = None,
) -> Side:
    """``k``: the articles staged in ``template`` (default: all of the world's)."""
    k = len(world.articles) if k is None else k
    folder = bench.folder("extract", f"feedsync-{rep}-{workers}-{k}")
    db = folder / "feedsync.db"
    copy_database(template, db)
    config = bench.config(
        folder / "feedsync.toml", world.feed_urls, db=db, extract={"workers": workers}
    )
    command = bench.feedsync_command(config, "run", "--json")
    before = world.counters()
    work = measure(command)
    traffic = world.traffic(before)
    stats = last_json(work.stdout)
    tried = sum(stats.get(key, 0) for key in DONE)
    if tried != k:
        raise BenchError(f"feedsync's extraction run did not try all {k} articles: {stats}")
    if traffic.feed_not_modified != len(world.feed_paths):
        raise BenchError(f"the extraction world's feeds did not all answer 304: {traffic}")
    idle = measure(command)
    again = last_json(idle.stdout)
    if again["extracted"] or again["staged"]:
        raise BenchError(f"the second extraction run was not idle: {again}")
    return Side(work.cost, idle.cost, stats["extracted"], traffic.page_requests)


def _bare_of(bench: Bench, world: World, urls_file: str, rep: int) -> Side:
    return _bare(bench, world, urls_file)


def _bare(bench: Bench, world: World, urls_file: str) -> Side:
    before = world.counters()
    work = measure(bench.driver("bare_extract.py", urls_file))
    traffic = world.traffic(before)
    stats = last_json(work.stdout)
    idle = measure([bench.python, "-c", "import httpx, trafilatura"])
    return Side(work.cost, idle.cost, stats["extracted"], traffic.page_requests)
