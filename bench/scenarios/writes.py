"""Scenario 5: what a day of polling writes to the SD card.

feedsync as designed: the live database on tmpfs (RAM), the card database on the card,
saved to at the end of each run that changed something (only what changed). Baseline:
the same runs with ``[storage] db`` on the card and no snapshot, no RAM disk: the
working file (``feedsync-live.db``, WAL, written by every poll) and the database beside
it both on the card, which is what a SQLite-based reader without a RAM disk pays.
Both start from the same state: the seed's card database, and its live one.

A "day" is ``day_passes`` cron runs (96: every 15 minutes); every ``day_news_every``-th
brings ``day_news`` new articles (in ~3 feeds each), the others find every feed 304.
Both sides start from the same database (a first pass over the day's feeds, articles
extracted) and see the same sequence of feed documents (the world is reset between
days). The passes run in one process (bench/drivers/feedsync_day.py calls the CLI's
``main`` once per pass) under ``strace -f``; the bytes of every write-like syscall are
summed per folder, as tests/test_card.py does.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.common import Bench, Result, copy_database
from bench.measure import BenchError, Stopwatch, clean_env, last_json, measure
from bench.world import World, corpus_pages

TRACED = "trace=write,pwrite64,writev,pwritev,pwritev2,sendfile,copy_file_range"
_CALL = re.compile(r"^(\d+)\s+\w+\((\d+)<([^>]*)>(.*)$")
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. \w+ resumed>.*\)\s+=\s+(\d+)")
_RESULT = re.compile(r"\)\s+=\s+(\d+)")


@dataclass(frozen=True)
class Day:
    written: int  # bytes to the card (feedsync: the snapshot folder; baseline: the db's)
    calls: int
    ram_written: int  # bytes to the live database on tmpfs (feedsync only)
    snapshots: int
    db_bytes: int
    seconds: float


def bytes_written_under(trace: Path, folder: Path) -> tuple[int, int]:
    """(write syscalls, bytes) that went to files under ``folder``, from an ``strace -f
    -y`` log; calls split by another thread (``<unfinished ...>`` / ``resumed``) count."""
    prefix = str(folder).rstrip("/") + "/"
    calls = total = 0
    pending: dict[str, bool] = {}  # pid -> its unfinished call was under folder
    for line in trace.read_text(errors="replace").splitlines():
        call = _CALL.match(line)
        if call:
            pid, path, rest = call.group(1), call.group(3), call.group(4)
            ours = path.startswith(prefix)
            if rest.rstrip().endswith("<unfinished ...>"):
                pending[pid] = ours
                continue
            done = _RESULT.search(rest)
            if ours and done:
                calls += 1
                total += int(done.group(1))
            continue
        resumed = _RESUMED.match(line)
        if resumed and pending.pop(resumed.group(1), False):
            calls += 1
            total += int(resumed.group(2))
    return calls, total


def _snapshot_seq(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'snapshot_seq'").fetchone()
    return int(row[0]) if row else 0


def _day(bench: Bench, world: World, config: Path, label: str) -> float:
    """Run the day's passes under strace; returns the wall time."""
    p = bench.params
    trace = bench.ram / "day" / f"{label}.strace"
    errors = bench.ram / "day" / f"{label}.stderr"
    command = [
        "strace", "--seccomp-bpf", "-f", "-qq", "-y", "-o", str(trace), "-e", TRACED,
        *bench.driver("feedsync_day.py", str(config), str(p.day_passes)),
    ]  # fmt: skip
    with Stopwatch() as watch, errors.open("w") as err:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=clean_env(),
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            for number in range(p.day_passes):
                if (number + 1) % p.day_news_every == 0:
                    world.publish(p.day_news)
                process.stdin.write("go\n")
                process.stdin.flush()
                line = process.stdout.readline()
                if line.strip() != f"pass {number} exit 0":
                    raise BenchError(
                        f"day pass {number} ({label}) failed: {line!r}\n"
                        + errors.read_text(errors="replace")[-3000:]
                    )
            process.stdin.close()
            process.wait(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    if process.returncode != 0:
        raise BenchError(
            f"the day ({label}) ended with exit {process.returncode}:\n"
            + errors.read_text(errors="replace")[-3000:]
        )
    errors.unlink()
    return watch.seconds


def run(bench: Bench) -> Result:
    p = bench.params
    if shutil.which("strace") is None:
        raise BenchError("scenario 5 needs strace (apt install strace; tests/run.sh does)")
    world = World(
        bench.server, "day", p.day_feeds, p.day_entries, pages=corpus_pages(), distinct_pages=True
    )
    bench.folder("day")
    # the morning: one real run over the day's feeds, everything extracted, a snapshot
    seed = bench.folder("day", "seed")
    seed_card = bench.folder("day", "seed-card", disk=True)
    config = bench.config(
        seed / "feedsync.toml", world.feed_urls, db=seed / "feedsync.db",
        card=seed_card / "feedsync.db",
    )  # fmt: skip
    first = last_json(measure(bench.feedsync_command(config, "run", "--json")).stdout)
    if first["feed_errors"] or not first["extracted"]:
        raise BenchError(f"the day's first pass went wrong: {first}")
    start = world.state()
    seed_seq = _snapshot_seq(seed / "feedsync.db")

    ours: list[Day] = []
    theirs: list[Day] = []
    for rep in range(p.repeat):
        bench.log(f"scenario 5: day {rep + 1}/{p.repeat} ({p.day_passes} passes per side)")
        if rep % 2 == 0:
            ours.append(_card_day(bench, world, start, seed, seed_card, rep, seed_seq))
            theirs.append(_disk_day(bench, world, start, seed, seed_card, rep))
        else:
            theirs.append(_disk_day(bench, world, start, seed, seed_card, rep))
            ours.append(_card_day(bench, world, start, seed, seed_card, rep, seed_seq))

    news_passes = p.day_passes // p.day_news_every
    result = Result(
        5,
        "SD-card writes over a simulated day",
        "live database on tmpfs, snapshot on the card after each run that changed something",
        "the same runs with the database on the card and no RAM disk (its working file, "
        "WAL, beside it)",
    )
    result.row(
        "bytes written to the card per day",
        "MB",
        [d.written / 1e6 for d in ours],
        [d.written / 1e6 for d in theirs],
        digits=2,
    )
    result.row(
        "write calls to the card per day", "", [d.calls for d in ours],
        [d.calls for d in theirs], digits=0,
    )  # fmt: skip
    result.row(
        "database on the card at the end of the day",
        "MB",
        [d.db_bytes / 1e6 for d in ours],
        [d.db_bytes / 1e6 for d in theirs],
        digits=2,
    )
    result.details = {
        "passes": p.day_passes,
        "passes_with_news": news_passes,
        "articles_per_news_pass": p.day_news,
        "feeds": p.day_feeds,
        "seed_articles": first["extracted"],
        "snapshots_written": [d.snapshots for d in ours],
        "ram_bytes_written_feedsync": [d.ram_written for d in ours],
        "traced_day_seconds": [[d.seconds for d in ours], [d.seconds for d in theirs]],
        "card_folder": str(bench.disk),
    }
    result.notes.append(
        f"{p.day_passes} runs over {p.day_feeds} feeds, {news_passes} of them bringing "
        f"{p.day_news} new articles; the day starts from a database holding "
        f"{first['extracted']} extracted articles. Bytes are what the process asked the "
        "kernel to write (strace), before any filesystem or flash-translation overhead."
    )
    return result


def _card_day(
    bench: Bench,
    world: World,
    start: tuple[int, list[list[int]], object],
    seed: Path,
    seed_card: Path,
    rep: int,
    seed_seq: int,
) -> Day:
    world.reset(start)
    live = bench.folder("day", f"card-{rep}-live")
    card = bench.folder("day", f"card-{rep}", disk=True)
    copy_database(seed / "feedsync.db", live / "feedsync.db")
    shutil.copyfile(seed_card / "feedsync.db", card / "feedsync.db")
    config = bench.config(
        live / "feedsync.toml", world.feed_urls, db=live / "feedsync.db",
        card=card / "feedsync.db",
    )  # fmt: skip
    label = f"card-{rep}"
    seconds = _day(bench, world, config, label)
    trace = bench.ram / "day" / f"{label}.strace"
    calls, written = bytes_written_under(trace, card)
    _, ram = bytes_written_under(trace, live)
    trace.unlink()
    day = Day(
        written=written,
        calls=calls,
        ram_written=ram,
        snapshots=_snapshot_seq(live / "feedsync.db") - seed_seq,
        db_bytes=(card / "feedsync.db").stat().st_size,
        seconds=seconds,
    )
    shutil.rmtree(live)
    shutil.rmtree(card)
    return day


def _disk_day(
    bench: Bench,
    world: World,
    start: tuple[int, list[list[int]], object],
    seed: Path,
    seed_card: Path,
    rep: int,
) -> Day:
    world.reset(start)
    folder = bench.folder("day", f"disk-{rep}", disk=True)
    # the same state as feedsync's side: the card database, its live one as the working file
    shutil.copyfile(seed_card / "feedsync.db", folder / "feedsync.db")
    copy_database(seed / "feedsync.db", folder / "feedsync-live.db")
    config = bench.config(folder / "feedsync.toml", world.feed_urls, db=folder / "feedsync.db")
    label = f"disk-{rep}"
    seconds = _day(bench, world, config, label)
    trace = bench.ram / "day" / f"{label}.strace"
    calls, written = bytes_written_under(trace, folder)
    trace.unlink()
    size = sum(f.stat().st_size for f in folder.glob("feedsync*.db*") if f.suffix != ".lock")
    day = Day(written, calls, 0, 0, size, seconds)
    shutil.rmtree(folder)
    return day
