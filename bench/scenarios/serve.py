"""Scenario 11: ``feedsync serve`` on a year scenario's archive (issue 45's "Prove it").

The archive: a card database of ``serve_articles`` (100,000) articles over
``serve_days`` (120) days of fetching, ``serve_feeds`` (100) feeds in five categories,
written through the storage layer as a daemon writes it (``drivers/serve_card.py``:
each day every feed's poll recorded, its articles saved with texts of real extracted
sizes, a save to the card on that day's clock, so most articles are in the card's month
tables and the live database holds the last days). Feed 0 is QUIET (nothing for the last
nine tenths of the days), feed 1 SMALL (1% of the articles).

1. Pages and feeds: the real ``feedsync serve --listen 127.0.0.1:0`` on that database,
   timed from an httpx client over loopback (3 warm-ups, then ``serve_requests`` rounds
   of every URL in turn): the news page and a page 40 pages deep, a search, an article,
   the feeds page (its chart), the status page, the Atom of all, of a busy, the quiet and
   a category's, the JSON Feed of the small feed, the OPML, and a 304 (within ``[serve]
   fresh``, a minute, of the answer whose tag it sends: the window's, no read; one a
   minute is the key's). The goal (issue 45): a median <= 50 ms each, the baseline
   column. The stylesheet, which reads no
   database, is the server's own floor. The driver also times the storage read of a
   feed's page in-process by each plan (sql_reading.PLAN): the walk, the only plan before
   the choice of plan per page, against the feed's own links.
2. Memory: the serve process's RSS and PSS once it answers, and after the timed requests.
3. The daemon's pass with a reader beside it: a ``feedsync run`` on a copy of the archive
   polling the ``serve_feeds`` feeds of a World (every feed with entries new to it, their
   articles fetched and extracted), alone and with ``feedsync serve`` on the same files
   and a client GETting every feed's Atom every second during the pass, with the ETag
   it last got (If-None-Match, as reader apps poll: a 304 while a feed is unchanged);
   rounds alternating which goes first. The goal: <= 1.1x. The server keeps the default
   ``[serve] fresh`` (1m): a reader's request within a minute of its last answer for
   that feed is a 304 without any read (the pass's saves change every tag: without the
   window each poll after a save would be a 200, a full-text document read and
   rendered); after the minute, a 200 with what the pass saved.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any

import httpx

from bench.common import Bench, Result, copy_database, mb
from bench.measure import BenchError, clean_env, measure
from bench.probe import memory_kb
from bench.scenarios.year import TRACED, card_bytes_per_day
from bench.world import World, corpus_pages

GOAL_MS = 50.0
SAVE_HOURS = 24  # hourly saves traced, with the feed index and without
WARM = 3
SEARCH_WORD = "government"


@dataclass
class Serving:
    process: subprocess.Popen[str]
    base: str
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def _serve(bench: Bench, config: Path, log: Path) -> Serving:
    """``feedsync serve`` on a free loopback port; returns once it printed its URL."""
    err = log.open("w")
    process = subprocess.Popen(
        bench.feedsync_command(config, "serve", "--listen", "127.0.0.1:0"),
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        env=clean_env(),
        start_new_session=True,
    )
    err.close()
    assert process.stdout is not None
    line = process.stdout.readline()  # the first line says where (or the process died)
    if "serving http://" not in line:
        process.wait(30)
        raise BenchError(f"feedsync serve did not start: {line!r} {log.read_text()[-2000:]}")
    base = line.split("serving ", 1)[1].split("/;", 1)[0].split()[0].rstrip("/;")
    return Serving(process, base, log)


def _memory(pid: int) -> tuple[int, int]:
    """(VmRSS, PSS) in kB of one process."""
    rss, pss = memory_kb(pid)
    return rss, pss


def _paths(facts: dict[str, Any]) -> dict[str, tuple[str, dict[str, str]]]:
    """What is timed: a name -> (path, headers); the 304's ETag is filled in later."""
    feeds = facts["feeds"]
    return {
        "news page": ("/", {}),
        f"news page {facts['deep_pages']} pages deep": (f"/?before={facts['deep_before']}", {}),
        f"search ({SEARCH_WORD})": (f"/search?q={SEARCH_WORD}", {}),
        "an article": (f"/article/{facts['article']}", {}),
        "feeds page (chart)": ("/feeds", {}),
        "status page": ("/status", {}),
        "Atom, all": ("/feeds/all.atom", {}),
        "Atom, a busy feed": (f"/feeds/{feeds['busy']}.atom", {}),
        "Atom, the quiet feed": (f"/feeds/{feeds['quiet']}.atom", {}),
        "JSON Feed, the small feed": (f"/feeds/{feeds['small']}.json", {}),
        f"Atom, category {facts['category']}": (
            f"/feeds/category/{facts['category']}.atom",
            {},
        ),
        "OPML": ("/feeds.opml", {}),
        "304 of a feed (If-None-Match)": (f"/feeds/{feeds['busy']}.atom", {}),
        "stylesheet (no database read)": ("/style.css", {}),
    }


def _time_requests(
    client: httpx.Client, paths: dict[str, tuple[str, dict[str, str]]], rounds: int
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Milliseconds per request, every path in turn per round (the machine's noise spread
    over all of them), after WARM warm-ups each; and each answer's size."""
    etag = client.get(paths["304 of a feed (If-None-Match)"][0]).headers.get("etag")
    if not etag:
        raise BenchError("feedsync serve sent no ETag with a feed")
    paths["304 of a feed (If-None-Match)"] = (
        paths["304 of a feed (If-None-Match)"][0],
        {"If-None-Match": etag},
    )
    times: dict[str, list[float]] = {name: [] for name in paths}
    sizes: dict[str, int] = {}
    for n in range(WARM + rounds):
        for name, (path, headers) in paths.items():
            started = time.perf_counter()
            answer = client.get(path, headers=headers)
            took = time.perf_counter() - started
            want = 304 if "If-None-Match" in headers else 200
            if answer.status_code != want:
                raise BenchError(f"{path}: {answer.status_code}, expected {want}")
            sizes[name] = len(answer.content)
            if n >= WARM:
                times[name].append(1000 * took)
    return times, sizes


class Reader(threading.Thread):
    """A feed reader gone mad: every feed's Atom every second, each with the ETag it
    last got in If-None-Match, as reader apps poll (a 304 while the feed is unchanged,
    a 200 with the new document once the pass has saved to it)."""

    def __init__(self, base: str, feed_ids: list[int]):
        super().__init__(daemon=True)
        self.base = base
        self.feed_ids = feed_ids
        self.stopping = threading.Event()
        self.requests = 0
        self.not_modified = 0
        self.failed: list[str] = []
        self.sweeps = 0

    def run(self) -> None:
        etags: dict[int, str] = {}
        with httpx.Client(base_url=self.base, timeout=30) as client:
            while not self.stopping.is_set():
                started = time.monotonic()
                for fid in self.feed_ids:
                    known = etags.get(fid)
                    headers = {"If-None-Match": known} if known else {}
                    answer = client.get(f"/feeds/{fid}.atom", headers=headers)
                    self.requests += 1
                    if answer.status_code == 304:
                        self.not_modified += 1
                    elif answer.status_code == 200 and answer.headers.get("etag"):
                        etags[fid] = answer.headers["etag"]
                    else:
                        self.failed.append(f"{fid}: {answer.status_code}")
                self.sweeps += 1
                self.stopping.wait(max(0.0, 1.0 - (time.monotonic() - started)))


def _pass(
    bench: Bench, archive: tuple[Path, Path], label: str, reader_ids: list[int] | None
) -> tuple[float, dict[str, Any]]:
    """A ``feedsync run`` on a fresh copy of the archive; with ``reader_ids`` a serve and
    a Reader beside it. Returns the run's wall time and what happened."""
    config, card = _copy(bench, archive, f"pass-{label}")
    serving: Serving | None = None
    reader: Reader | None = None
    facts: dict[str, Any] = {}
    try:
        if reader_ids is not None:
            serving = _serve(bench, config, config.with_name("serve.log"))
            reader = Reader(serving.base, reader_ids)
            reader.start()
            deadline = time.monotonic() + 60
            while reader.sweeps < 1:  # the reader at full speed before the pass starts
                if time.monotonic() > deadline or not reader.is_alive():
                    raise BenchError("the reader did not finish a sweep in 60 s")
                time.sleep(0.05)
        done = measure(bench.feedsync_command(config, "run", "--json"))
        stats = json.loads(done.stdout.strip().splitlines()[-1])
        facts = {"extracted": stats.get("extracted"), "polled": stats.get("polled")}
    finally:
        if reader is not None:
            reader.stopping.set()
            reader.join(60)
            facts.update(
                reader_requests=reader.requests,
                reader_not_modified=reader.not_modified,
                reader_sweeps=reader.sweeps,
            )
            if reader.failed:
                facts["reader_failed"] = reader.failed[:5]
        if serving is not None:
            serving.stop()
    if not facts.get("extracted"):
        raise BenchError(f"the pass extracted nothing: {facts}")
    if reader is not None and reader.failed:
        raise BenchError(f"the reader's requests failed during the pass: {reader.failed[:5]}")
    if not bench.keep:
        shutil.rmtree(config.parent, ignore_errors=True)
        shutil.rmtree(card.parent, ignore_errors=True)
    return done.cost.wall, facts


def _copy(bench: Bench, archive: tuple[Path, Path], label: str) -> tuple[Path, Path]:
    """A copy of the archive (live database in RAM, card on disk) and its config."""
    live = bench.folder("serve", label)
    card = bench.folder("serve", f"{label}-card", disk=True)
    copy_database(archive[0], live / "feedsync.db")
    copy_database(archive[1], card / "card.db")
    config = live / "feedsync.toml"
    text = archive[0].with_name("feedsync.toml").read_text()
    text = text.replace(str(archive[0]), str(live / "feedsync.db"))
    config.write_text(text.replace(str(archive[1]), str(card / "card.db")))
    return config, card / "card.db"


def _saves(
    bench: Bench, archive: tuple[Path, Path], facts: dict[str, Any], end: str, variant: str
) -> list[int]:
    """Bytes written to the card and its journal by each of a day's hourly saves on a
    copy of the archive, the feed index kept (``with``) or dropped (``without``)."""
    p = bench.params
    config, card = _copy(bench, archive, f"saves-{variant}")
    marks = card.with_name("saves.log")
    trace = card.with_name("strace.log")
    per_hour = max(1, round(p.serve_articles / p.serve_days / 24))
    command = [
        "strace", "--seccomp-bpf", "-f", "-qq", "-y", "-e", TRACED, "-e", "signal=none",
        "-o", str(trace), "-P", str(card), "-P", f"{card}-journal", "-P", str(marks),
        *bench.driver("serve_saves.py", str(config), end, str(p.serve_days),
                      str(facts["next_article"]), str(SAVE_HOURS), str(per_hour), str(marks),
                      *(["without"] if variant == "without" else [])),
    ]  # fmt: skip
    measure(command, timeout=3600)
    per_save = card_bytes_per_day(trace, card, marks)
    if len(per_save) != SAVE_HOURS:
        raise BenchError(f"{len(per_save)} saves traced, {SAVE_HOURS} expected")
    if not bench.keep:
        shutil.rmtree(card.parent, ignore_errors=True)
        shutil.rmtree(config.parent, ignore_errors=True)
    return per_save


def run(bench: Bench) -> Result:
    p = bench.params
    bench.log(
        f"scenario 11: feedsync serve on {p.serve_articles:,} articles over {p.serve_days} "
        f"days, {p.serve_feeds} feeds; {p.serve_requests} requests per page"
    )
    world = World(
        bench.server, "serve", p.serve_feeds, 3, pages=corpus_pages(), distinct_pages=True
    )
    live = bench.folder("serve", "live")
    card = bench.folder("serve", "card", disk=True)
    config = bench.config(
        live / "feedsync.toml",
        world.feed_urls,
        db=live / "feedsync.db",
        card=card / "card.db",
        retention={"news_days": 3650, "tombstone_days": 3650},
    )
    out = live / "archive.json"
    end = datetime.now(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    built = measure(
        bench.driver(
            "serve_card.py",
            str(config),
            end,
            str(p.serve_days),
            str(p.serve_articles),
            str(out),
        ),
        timeout=3600,
    )
    facts = json.loads(out.read_text())
    bench.log(
        f"scenario 11: archive built in {built.cost.wall:.0f} s "
        f"({card.joinpath('card.db').stat().st_size / 1e6:.0f} MB card); feed page reads "
        f"(ms): {facts['window_ms']}"
    )

    # 1-2: pages and feeds, the serve process's memory
    serving = _serve(bench, config, live / "serve.log")
    try:
        memory_start = _memory(serving.process.pid)
        with httpx.Client(base_url=serving.base, timeout=60) as client:
            times, sizes = _time_requests(client, _paths(facts), p.serve_requests)
        memory_end = _memory(serving.process.pid)
    finally:
        serving.stop()
    bench.log(
        "scenario 11: medians (ms) " + ", ".join(f"{k} {median(v):.1f}" for k, v in times.items())
    )

    # what the feed index costs the card: a day of hourly saves, with it and without
    archive = (live / "feedsync.db", card / "card.db")
    saves = {
        variant: _saves(bench, archive, facts, end, variant) for variant in ("with", "without")
    }
    bench.log(
        "scenario 11: card bytes per hourly save, median: "
        + ", ".join(f"{k} the feed index {median(v) / 1e3:.0f} KB" for k, v in saves.items())
    )

    # 3: the pass, alone and with a reader, alternating
    alone: list[float] = []
    beside: list[float] = []
    pass_facts: list[dict[str, Any]] = []
    for n in range(p.repeat):
        order = [None, facts["all_feeds"]] if n % 2 == 0 else [facts["all_feeds"], None]
        for ids in order:
            wall, happened = _pass(bench, archive, f"{n}-{'r' if ids else 'a'}", ids)
            (beside if ids else alone).append(wall)
            pass_facts.append({"round": n, "reader": ids is not None, "wall_s": round(wall, 2),
                               **happened})  # fmt: skip
            bench.log(
                f"scenario 11: pass {'with' if ids else 'without'} a reader {wall:.1f} s {happened}"
            )
    return _result(bench, facts, times, sizes, memory_start, memory_end, alone, beside,
                   pass_facts, world, saves)  # fmt: skip


def _result(
    bench: Bench,
    facts: dict[str, Any],
    times: dict[str, list[float]],
    sizes: dict[str, int],
    memory_start: tuple[int, int],
    memory_end: tuple[int, int],
    alone: list[float],
    beside: list[float],
    pass_facts: list[dict[str, Any]],
    world: World,
    saves: dict[str, list[int]],
) -> Result:
    p = bench.params
    result = Result(
        11,
        "feedsync serve on a year's archive",
        f"`feedsync serve` on {p.serve_articles:,} articles ({p.serve_days} days, "
        f"{p.serve_feeds} feeds), over loopback",
        f"the goal, {GOAL_MS:.0f} ms a page; the pass without a reader",
    )
    for name, runs in times.items():
        result.row(
            f"{name} (goal: <= {GOAL_MS:.0f} ms)",
            "ms",
            runs,
            [GOAL_MS] * len(runs),
            digits=1,
        )
    window = facts["window_ms"]
    for name in ("quiet", "small", "busy"):
        result.row(
            f"storage read of the {name} feed's page: the plan chosen vs the walk alone",
            "ms",
            [window[name]],
            [window[f"{name}_walk"]],
            digits=1,
        )
    result.row(
        "card bytes written per hourly save: with an index of links by feed (tried, given up) "
        "vs without",
        "KB",
        [b / 1e3 for b in saves["with"]],
        [b / 1e3 for b in saves["without"]],
        digits=0,
    )
    result.row(
        "serve process RSS: after the timed requests vs once it answers",
        "MB",
        [mb(memory_end[0])],
        [mb(memory_start[0])],
        lower_is_better=None,
        digits=1,
    )
    result.row(
        "the daemon's pass with a reader polling every feed's Atom every second vs alone"
        " (goal: <= 1.1x)",
        "s",
        beside,
        alone,
        digits=2,
    )
    p90 = {
        name: round(sorted(runs)[max(0, -(-9 * len(runs) // 10) - 1)], 1)
        for name, runs in times.items()
    }
    result.details = {
        "archive": {k: facts[k] for k in ("counts", "feeds", "category", "build_s")},
        "card_mb": round(facts.get("card_bytes", 0) / 1e6, 1),
        "p90_ms": p90,
        "answer_bytes": sizes,
        "storage_read_ms": window,
        "storage_read_found": facts["window_found"],
        "serve_memory_kb": {
            "start": {"rss": memory_start[0], "pss": memory_start[1]},
            "after_requests": {"rss": memory_end[0], "pss": memory_end[1]},
        },
        "passes": pass_facts,
        "card_bytes_per_save": saves,
        "world": world.describe(),
    }
    met = [name for name, runs in times.items() if median(runs) <= GOAL_MS]
    ratio = median(beside) / median(alone)
    result.notes += [
        f"The archive: {facts['counts']['articles']:,} articles, {facts['counts']['links']:,} "
        f"links, {p.serve_feeds} feeds in 5 categories, {p.serve_days} days of fetch times, "
        "written through the storage layer (bench/drivers/serve_card.py: each day's polls "
        "recorded, articles saved with the corpus's texts, a save to the card on that "
        f"day's clock) in {facts['build_s']:.0f} s. Feed {facts['feeds']['quiet']} is quiet "
        f"(nothing for the last {p.serve_days - max(1, p.serve_days // 10)} days), feed "
        f"{facts['feeds']['small']} small (1% of the articles).",
        f"Pages: the real `feedsync serve --listen 127.0.0.1:0`, an httpx client over "
        f"loopback, {WARM} warm-ups then {p.serve_requests} rounds of every URL in turn; "
        f"the baseline column is the goal ({GOAL_MS:.0f} ms). {len(met)} of {len(times)} "
        "medians within it; p90s in results.json (details.p90_ms). The 304 is mostly the "
        "freshness window's ([serve] fresh, 1m: no read), one a minute the key's.",
        "Storage reads: news_window of a feed's first page (50 articles) in the builder's "
        "process, the plan news_window chose against the walk through the newest articles "
        "(the only plan before the choice of plan per page); by the feed's own links in "
        "details.storage_read_ms too.",
        f"Memory: the serve process's VmRSS {mb(memory_start[0]):.1f} MB once it answered, "
        f"{mb(memory_end[0]):.1f} MB after the timed requests (PSS {mb(memory_start[1]):.1f} "
        f"and {mb(memory_end[1]):.1f} MB).",
        f"The pass: `feedsync run` on a copy of the archive, {p.serve_feeds} feeds of a "
        f"World each with 3 entries new to it (~{len(world.articles)} articles fetched and "
        "extracted from 127.0.0.1, the corpus's pages), alone and with `feedsync serve` on "
        "the same files and a client GETting every feed's Atom every second with the ETag "
        "it last got (If-None-Match, as reader apps poll) from before the pass to its end; "
        "the server keeps the default [serve] fresh (1m): the reader's requests within a "
        "minute of their last answer are 304s without a read (reader_not_modified in "
        "details.passes), the next one after it reads the feed's new document; "
        f"{p.repeat} rounds alternating which goes "
        f"first. Median ratio {ratio:.2f}x (goal <= 1.1x). Both run on this machine's "
        "2 cores: the reader's server competes with the pass for them.",
    ]
    return result
