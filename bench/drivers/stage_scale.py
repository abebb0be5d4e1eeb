"""Scenario 6: the cost of staging one poll against a small and a large news_summary.

    python bench/drivers/stage_scale.py build DB ROWS [--feeds 200]
    python bench/drivers/stage_scale.py time DB [--polls 20] [--entries 50] [--new 10]

``build``: a database made by feedsync's storage layer (schema and migrations), ``--feeds``
feeds, then ROWS entries inserted directly with SQL (executemany, in batches of 50,000 per
transaction): news_summary rows with a GUID, a date spread over the previous years, state
'done', each linked to one feed. No article bodies (news is left empty): staging never
reads them.

``time``: opens the database with feedsync's ``open_storage`` and calls
``Storage.record_poll(PollIntent)`` once per poll, as the pipeline does, for ``--polls`` polls
of ``--entries`` candidates each, of which ``--new`` are new entries and the others
entries already staged (what a feed re-offers within the lookback). One untimed poll
first (statements prepared). Prints one JSON line: per-poll wall and CPU times (ms).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import time
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path

from feedsync.config import StorageConfig
from feedsync.records import Entry, PollIntent
from feedsync.storage import open_storage

SECTIONS = ("world", "politics", "business", "science", "local", "sport", "culture")
BATCH = 50_000
T0 = datetime(2026, 11, 20, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def url_of(n: int, feeds: int) -> str:
    return f"https://site{n % feeds:03d}.example/{SECTIONS[n % 7]}/2026/story-{n:08d}.html"


def title_of(n: int) -> str:
    return f"Story number {n} about the harbour council and its winter budget plan"


def build(db: Path, rows: int, feeds: int) -> dict[str, object]:
    started = time.perf_counter()
    storage = open_storage(StorageConfig(db=db, card=None))
    for f in range(feeds):
        storage.add_feed(f"https://site{f:03d}.example/feed.xml", iso(T0))
    storage.save()  # the feeds to the card database (``db`` itself: no snapshot)
    storage.close()
    # the archive goes straight into the card database, where an archive lives
    conn = sqlite3.connect(db, isolation_level=None)
    # a bulk load: no journal, a big cache; back to the rollback journal at the end
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA cache_size = -262144")
    feed_ids = [r[0] for r in conn.execute("SELECT id FROM feeds ORDER BY id")]
    summary = "A short summary of the story, as feeds give it: two lines of text. " * 2
    span = 3 * 365 * 86400  # dates over three years, oldest first
    for start in range(0, rows, BATCH):
        stop = min(rows, start + BATCH)
        batch = []
        for n in range(start, stop):
            when = iso(T0 - timedelta(seconds=span * (1 - n / rows)))
            batch.append((url_of(n, feeds), title_of(n), when, summary, f"guid-{n}", when))
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO news_summary (url, title, published, summary, guid, first_seen_at,"
            " state) VALUES (?, ?, ?, ?, ?, ?, 'done')",
            batch,
        )
        first = conn.execute("SELECT max(id) FROM news_summary").fetchone()[0] - len(batch)
        conn.executemany(
            "INSERT INTO feed_entries (feed_id, summary_id, first_seen_at) VALUES (?, ?, ?)",
            [
                (feed_ids[n % feeds], first + 1 + i, row[5])
                for i, (n, row) in enumerate(zip(range(start, stop), batch, strict=True))
            ],
        )
        conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    return {"rows": rows, "seconds": time.perf_counter() - started, "bytes": db.stat().st_size}


def intent_for(feed_id: int, entries: list[Entry], now: datetime) -> PollIntent:
    values: dict[str, object] = {
        "feed_id": feed_id,
        "polled_at": iso(now),
        "entries": tuple(entries),
        "newest_published": max(e.published or "" for e in entries),
        "warning": None,
        "feed_title": "Feed",
        "etag": '"v2"',
        "last_modified": None,
        "next_poll_at": iso(now + timedelta(minutes=15)),
        "owner": "bench:stage",
        "lease_until": iso(now + timedelta(minutes=15)),
        # as the pipeline sets it (the identity window, 7 days by default)
        "window_start": iso(now - timedelta(days=7)),
    }
    # a NamedTuple since the records stopped being dataclasses; an older feedsync's too
    known = set(getattr(PollIntent, "_fields", ())) or {f.name for f in fields(PollIntent)}
    return PollIntent(**{k: v for k, v in values.items() if k in known})  # type: ignore[arg-type]


def time_polls(db: Path, polls: int, per_poll: int, new: int) -> dict[str, object]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT count(*) FROM news_summary").fetchone()[0]
    top = conn.execute("SELECT max(id) FROM news_summary").fetchone()[0]
    feeds = conn.execute("SELECT count(*) FROM feeds").fetchone()[0]
    conn.close()
    rng = random.Random()  # another sample of rows, and other new entries, every run
    storage = open_storage(StorageConfig(db=db, card=None))
    feed_ids = [f.id for f in storage.feeds_to_poll()]
    now = datetime.now(UTC).replace(microsecond=0)
    wall: list[float] = []
    cpu: list[float] = []
    created = 0
    fresh = 10**9 + rng.randrange(10**9)  # far above the built rows: new entries
    for poll in range(polls + 1):
        known = []
        for _ in range(per_poll - new):  # re-offered entries, among the newest rows
            n = rng.randrange(max(0, rows - 5_000), rows)
            when = iso(T0 - timedelta(seconds=3 * 365 * 86400 * (1 - n / rows)))
            known.append(Entry(url_of(n, feeds), title_of(n), when, guid=f"guid-{n}"))
        news = []
        for _ in range(new):
            fresh += 1
            news.append(Entry(url_of(fresh, feeds), title_of(fresh), iso(now), guid=f"g-{fresh}"))
        intent = intent_for(rng.choice(feed_ids), news + known, now)
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        result = storage.record_poll(intent)
        if poll:  # the first one prepares the statements
            wall.append((time.perf_counter() - wall_start) * 1000)
            cpu.append((time.process_time() - cpu_start) * 1000)
            created += len(result.created_ids)
    storage.close()
    return {"rows": rows, "max_id": top, "wall_ms": wall, "cpu_ms": cpu, "created": created}


def main() -> int:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("build")
    make.add_argument("db", type=Path)
    make.add_argument("rows", type=int)
    make.add_argument("--feeds", type=int, default=200)
    timing = commands.add_parser("time")
    timing.add_argument("db", type=Path)
    timing.add_argument("--polls", type=int, default=20)
    timing.add_argument("--entries", type=int, default=50)
    timing.add_argument("--new", type=int, default=10)
    args = parser.parse_args()
    if args.command == "build":
        report = build(args.db, args.rows, args.feeds)
    else:
        report = time_polls(args.db, args.polls, args.entries, args.new)
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
