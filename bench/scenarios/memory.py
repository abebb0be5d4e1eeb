"""Scenario 4: memory. Peak RSS of feedsync's runs in scenarios 1 and 3 against their
baselines (measured there: the same runs), and an idle ``feedsync daemon`` over a
simulated day of polls: does it grow?

The daemons: ``daemons`` of them side by side (each one run, on its own database, on tmpfs
with a snapshot folder on disk as in production), ``[daemon] tick = "1s"``, every feed due
every 1-2 s (``[poll] interval/min_interval = "1s"``, ``max_interval = "2s"``), until each
feed has been polled ``daemon_polls`` times on average (96: a day at one poll every 15
minutes). A few new articles appear now and then, so extraction workers come and go as in
real life. The daemon's own RSS (VmRSS) is sampled every 2 s; the figure compared is the
last sample (the day done, idle) against the first one taken once the start-up work is
over (every feed polled 3 times).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Bench, Result, mb
from bench.measure import BenchError, clean_env
from bench.probe import descendants, memory_kb
from bench.scenarios import extract, ingest
from bench.world import World, corpus_pages

SAMPLE_EVERY = 2.0
WARM_POLLS = 3


@dataclass
class Daemon:
    process: subprocess.Popen[bytes]
    log: Path
    samples: list[tuple[float, float, int, int]] = field(default_factory=list)
    # (seconds since start, polls per feed so far, VmRSS kB, tree PSS kB)


def vm_rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pss_kb(pid: int) -> int:
    return sum(memory_kb(p)[1] for p in [pid, *descendants(pid)])


def _start(bench: Bench, world: World, index: int) -> Daemon:
    live = bench.folder("daemon", f"live-{index}")
    card = bench.folder("daemon", f"card-{index}", disk=True)
    config = bench.config(
        live / "feedsync.toml",
        world.feed_urls,
        db=live / "feedsync.db",
        card=card / "feedsync.db",
        daemon={"tick": "1s"},
        poll={"interval": "1s", "min_interval": "1s", "max_interval": "2s"},
    )
    log = live / "daemon.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            bench.feedsync_command(config, "daemon"),
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=clean_env(),
            start_new_session=True,
        )
    return Daemon(process, log)


def _polls_per_feed(world: World, daemons: int) -> float:
    counts = world.counters()
    hits = sum(counts.get(path, (0, 0))[0] for path in world.feed_paths)
    return hits / (len(world.feed_paths) * daemons)


def _day_of_daemons(bench: Bench) -> tuple[list[Daemon], float]:
    p = bench.params
    world = World(
        bench.server, "daemon", p.daemon_feeds, 10, pages=corpus_pages(), distinct_pages=True
    )
    daemons = [_start(bench, world, i) for i in range(p.daemons)]
    started = time.monotonic()
    deadline = started + max(120.0, p.daemon_polls * 6.0)
    news_every = max(2, p.daemon_polls // 8)
    next_news = news_every
    try:
        while True:
            polls = _polls_per_feed(world, p.daemons)
            for daemon in daemons:
                if daemon.process.poll() is not None:
                    raise BenchError(
                        f"a feedsync daemon died (exit {daemon.process.returncode}):\n"
                        + daemon.log.read_text(errors="replace")[-3000:]
                    )
                pid = daemon.process.pid
                daemon.samples.append(
                    (time.monotonic() - started, polls, vm_rss_kb(pid), tree_pss_kb(pid))
                )
            if polls >= p.daemon_polls:
                break
            if time.monotonic() > deadline:
                raise BenchError(f"the daemons polled each feed only {polls:.0f} times in time")
            # news now and then, none in the last stretch: the day ends idle
            if polls >= next_news and polls < p.daemon_polls - news_every:
                world.publish(2)
                next_news += news_every
            time.sleep(SAMPLE_EVERY)
        time.sleep(SAMPLE_EVERY)  # the last tick's work done
        polls = _polls_per_feed(world, p.daemons)
        for daemon in daemons:
            pid = daemon.process.pid
            daemon.samples.append(
                (time.monotonic() - started, polls, vm_rss_kb(pid), tree_pss_kb(pid))
            )
    finally:
        for daemon in daemons:
            if daemon.process.poll() is None:
                daemon.process.send_signal(signal.SIGTERM)
        for daemon in daemons:
            try:
                daemon.process.wait(60)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(daemon.process.pid, signal.SIGKILL)
                daemon.process.wait()
    for daemon in daemons:
        text = daemon.log.read_text(errors="replace")
        if daemon.process.returncode != 0 or "Traceback" in text:
            raise BenchError(f"a daemon stopped badly (exit {daemon.process.returncode}):\n{text}")
    return daemons, time.monotonic() - started


def _start_sample(daemon: Daemon) -> tuple[float, float, int, int]:
    for sample in daemon.samples:
        if sample[1] >= WARM_POLLS:
            return sample
    return daemon.samples[0]


def run(
    bench: Bench,
    ingest_sides: tuple[list[ingest.Side], list[ingest.Side]],
    extract_sides: tuple[list[extract.Side], list[extract.Side]],
) -> Result:
    p = bench.params
    bench.log(f"scenario 4: {p.daemons} daemons, {p.daemon_polls} polls per feed")
    daemons, seconds = _day_of_daemons(bench)
    first = [_start_sample(d) for d in daemons]
    last = [d.samples[-1] for d in daemons]

    result = Result(
        4,
        "Memory",
        "feedsync (run, daemon)",
        "reader / the bare loop / the daemon at its start",
    )
    ours1, theirs1 = ingest_sides
    result.row(
        "peak RSS, feeds stage (scenario 1) vs reader",
        "MB",
        [mb(s.cold.main_maxrss_kb) for s in ours1],
        [mb(s.cold.main_maxrss_kb) for s in theirs1],
        digits=1,
    )
    ours3, theirs3 = extract_sides
    result.row(
        "peak RSS of the main process, extraction (scenario 3) vs bare loop",
        "MB",
        [mb(s.work.main_maxrss_kb) for s in ours3],
        [mb(s.work.main_maxrss_kb) for s in theirs3],
        digits=1,
    )
    result.row(
        "peak PSS of all processes, extraction (scenario 3) vs bare loop",
        "MB",
        [mb(s.work.peak_tree_pss_kb) for s in ours3],
        [mb(s.work.peak_tree_pss_kb) for s in theirs3],
        digits=1,
    )
    result.row(
        f"idle daemon RSS after {p.daemon_polls} polls per feed vs after {WARM_POLLS}",
        "MB",
        [mb(s[2]) for s in last],
        [mb(s[2]) for s in first],
        lower_is_better=None,
        digits=1,
    )
    result.row(
        "idle daemon, PSS of all its processes, end vs start",
        "MB",
        [mb(s[3]) for s in last],
        [mb(s[3]) for s in first],
        lower_is_better=None,
        digits=1,
    )
    peak = [max(s[2] for s in d.samples) for d in daemons]
    trace: list[dict[str, Any]] = [
        {
            "t": round(t, 1),
            "polls": round(n, 1),
            "rss_mb": round(mb(r), 1),
            "pss_mb": round(mb(q), 1),
        }
        for t, n, r, q in daemons[0].samples
    ]
    result.details = {
        "daemons": p.daemons,
        "feeds": p.daemon_feeds,
        "polls_per_feed": round(last[0][1], 1),
        "seconds": round(seconds, 1),
        "peak_daemon_rss_mb": [round(mb(x), 1) for x in peak],
        "daemon_0_samples": trace,
    }
    result.notes.append(
        f"{p.daemons} daemons side by side, {p.daemon_feeds} feeds each, {last[0][1]:.0f} polls "
        f"per feed in {seconds:.0f} s (tick 1 s), new articles {max(2, p.daemon_polls // 8)} "
        "polls apart except at the end. RSS from /proc/<pid>/status; PSS summed over the "
        "daemon and its extraction processes. Peak RSS figures of runs: from wait4 (the "
        "process's own), PSS sampled every 0.1 s."
    )
    return result
