"""Hostile feed documents at scale, and what parsing and staging them costs per entry.

A feed may carry 100,000 entries in 10 MB (an archive served as a feed), all without a
description, all with one link, one title or one GUID, nested deep, or malformed so that
only feedparser's lenient reader takes it. Every step on the poll path must stay linear
in such a document (issue 41): ``python -m bench.hostile`` parses and stages each shape at
2,000 / 20,000 / 100,000 entries and prints CPU per entry, with the ratio of the largest
size to the smallest (flat within 1.5x is the bar). tests/test_parse_scale.py runs the
same documents at smaller sizes as a property test.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from feedsync.records import ParsedFeed

SHAPES = (
    "plain",  # title, link, description, date: the ordinary feed, for comparison
    "no-description",
    "one-link",
    "one-title",
    "one-guid",
    "deep",  # each description nested 200 elements deep
    "malformed",  # an unescaped '&' in every title: feedparser's lenient reader reads it
    "atom-no-summary",
    "json",
)

_START = datetime(2026, 1, 1, tzinfo=UTC)


def _date(i: int) -> str:
    """A distinct RFC 822 date per entry, a minute apart, newest last (an archive listed
    oldest first)."""
    return f"{_START + timedelta(minutes=i):%a, %d %b %Y %H:%M:%S} GMT"


def _iso(i: int) -> str:
    return f"{_START + timedelta(minutes=i):%Y-%m-%dT%H:%M:%S}Z"


def document(
    shape: str, entries: int, site: str = "https://news.example.com", depth: int = 200
) -> tuple[bytes, str]:
    """(body, content type) of a feed of ``entries`` entries of ``shape``, its links on
    ``site`` ("deep": each description nested ``depth`` elements deep)."""
    if shape == "json":
        items = [
            {
                "id": f"urn:x:{i}",
                "url": f"{site}/a/{i}",
                "content_text": f"Story {i}",
                "date_published": _iso(i),
            }
            for i in range(entries)
        ]
        body = {"version": "https://jsonfeed.org/version/1.1", "title": "Big", "items": items}
        return json.dumps(body).encode(), "application/feed+json"
    if shape == "atom-no-summary":
        parts = [
            '<?xml version="1.0" encoding="utf-8"?>'
            '<feed xmlns="http://www.w3.org/2005/Atom"><title>Big</title>'
            "<id>urn:x:feed</id><updated>2026-02-28T00:00:00Z</updated>"
        ]
        parts.extend(
            f"<entry><id>urn:x:{i}</id><title>Story {i}</title>"
            f'<link href="{site}/a/{i}"/><updated>{_iso(i)}</updated></entry>'
            for i in range(entries)
        )
        parts.append("</feed>")
        return "".join(parts).encode(), "application/atom+xml"
    items = []
    nest = "<div>" * depth + "deep" + "</div>" * depth
    for i in range(entries):
        link = f"{site}/a/0" if shape == "one-link" else f"{site}/a/{i}"
        title = "The same story" if shape == "one-title" else f"Story {i}"
        if shape == "malformed":
            title += " & more"
        guid = "<guid>urn:x:same</guid>" if shape == "one-guid" else ""
        if shape == "no-description":
            description = ""
        elif shape == "deep":
            description = f"<description><![CDATA[{nest}]]></description>"
        else:
            description = f"<description>Text of story {i}.</description>"
        items.append(
            f"<item><title>{title}</title><link>{link}</link>{guid}{description}"
            f"<pubDate>{_date(i)}</pubDate></item>"
        )
    body = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Big</title>'
        "<link>https://news.example.com/</link>" + "".join(items) + "</channel></rss>"
    )
    return body.encode(), "application/rss+xml"


FEED = "https://news.example.com/feed.xml"
FETCHED = datetime(2026, 3, 1, tzinfo=UTC)
SIZES = (2000, 20000, 100000)
# HTML nested 200 deep is ~2.3 KB an entry: 100,000 of them would be 230 MB, far past the
# 10 MB a feed may be ([fetch] max_feed_bytes).
DEEP_SIZES = (500, 2000, 4000)


def stage(path: Path, parsed: ParsedFeed) -> None:
    """One poll of a new feed staged into a new SQLite database at ``path``, the
    revision rules on: record_poll's one write transaction, as a pass makes it."""
    from feedsync import decide
    from feedsync.records import PollIntent
    from feedsync.storage.sqlite import SQLiteStorage

    storage = SQLiteStorage.open(path)
    try:
        storage.add_feed(FEED, "2026-03-01T00:00:00Z")
        chosen = decide.candidates(parsed.entries, "", timedelta(hours=24))
        storage.record_poll(
            PollIntent(
                feed_id=storage.feeds_to_poll()[0].id,
                polled_at="2026-03-01T00:00:00Z",
                entries=chosen,
                newest_published=decide.newest_published(chosen),
                next_poll_at="2026-03-01T01:00:00Z",
                owner="scale",
                lease_until="2026-03-01T00:15:00Z",
                window_start="2026-02-01T00:00:00Z",
            )
        )
    finally:
        storage.close()


def measure(shape: str, size: int, folder: Path, repeats: int = 3) -> tuple[float, float, int]:
    """(parse CPU s, stage CPU s, entries staged) of one document: the least of
    ``repeats`` runs each, the least disturbed by whatever else the machine does."""
    from feedsync.parse import parse_feed

    body, content_type = document(shape, size)
    parse_s = stage_s = float("inf")
    staged = 0
    for run in range(repeats):
        started = time.process_time()
        parsed = parse_feed(body, FEED, FETCHED, content_type)
        parsed_at = time.process_time()
        stage(folder / f"{shape}-{size}-{run}.db", parsed)
        parse_s = min(parse_s, parsed_at - started)
        stage_s = min(stage_s, time.process_time() - parsed_at)
        staged = len(parsed.entries)
    return parse_s, stage_s, staged


def main() -> None:
    """Print, per shape, the CPU per entry of parse and stage at each size, and the
    largest growth from one size to the next (flat: at most 1.5x)."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--shape", action="append", choices=SHAPES, help="default: all")
    options.add_argument("--cell", nargs=2, metavar=("SHAPE", "SIZE"), help=argparse.SUPPRESS)
    args = options.parse_args()
    if args.cell:  # one measurement, in a process of its own (see below)
        with tempfile.TemporaryDirectory(prefix="feedsync-bench-hostile-") as folder:
            print(json.dumps(measure(args.cell[0], int(args.cell[1]), Path(folder))))
        return
    worst = 0.0
    for shape in args.shape or SHAPES:
        sizes = DEEP_SIZES if shape == "deep" else SIZES
        parse_per, stage_per, cells = [], [], []
        for size in sizes:
            # each cell in a fresh process: what an earlier document left in this
            # one (its heap, the collector's generations) made a later cell up to
            # 1.6x dearer per entry, though alone it was flat
            parse_s, stage_s, staged = json.loads(
                subprocess.run(
                    [sys.executable, "-m", "bench.hostile", "--cell", shape, str(size)],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
            )
            parse_per.append(parse_s / size)
            stage_per.append(stage_s / max(staged, 1))
            cells.append(
                f"{size:>6}: parse {parse_s / size * 1e6:6.1f} us"
                f" + stage {stage_s / max(staged, 1) * 1e6:6.1f} us/entry"
            )
        growth = max(
            later / earlier
            for per in (parse_per, stage_per)
            for earlier, later in itertools.pairwise(per)
        )
        worst = max(worst, growth)
        print(f"{shape:<16} " + " | ".join(cells) + f" | growth {growth:.2f}x", flush=True)
    print(f"largest growth of CPU per entry from one size to the next: {worst:.2f}x (bar: 1.5x)")


if __name__ == "__main__":
    main()
