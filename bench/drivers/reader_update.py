"""The baseline: the ``reader`` library (PyPI ``reader``) updating the same feeds.

    python bench/drivers/reader_update.py DB FEEDS_FILE [--workers N] [--again]

Runs in the bench's own baseline venv (bench/.venv-baseline), never in feedsync's.
Without ``--again``: a cold start, what a user of reader writes: ``make_reader(DB)``,
``add_feed`` for every URL in FEEDS_FILE (one per line), ``update_feeds(workers=N)``.
With ``--again``: the second update over the same database, forced for every feed
(``scheduled=False``; reader would otherwise skip feeds not due yet), which sends the
stored ETag / Last-Modified back. reader's default plugins stay on (none of them fetches
article pages). Prints one JSON line with what the update did.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version
from pathlib import Path

from reader import make_reader


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("feeds_file", type=Path)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--again", action="store_true")
    args = parser.parse_args()
    urls = [u.strip() for u in args.feeds_file.read_text().splitlines() if u.strip()]

    reader = make_reader(args.db)
    try:
        if not args.again:
            for url in urls:
                reader.add_feed(url, exist_ok=True)
        new = modified = unmodified = errors = not_modified = 0
        for result in reader.update_feeds_iter(workers=args.workers, scheduled=not args.again):
            if result.error is not None:
                errors += 1
            elif result.value is None:
                not_modified += 1  # nothing to update: 304, or the same content
            else:
                new += result.value.new
                modified += result.value.modified
                unmodified += result.value.unmodified
        counts = reader.get_entry_counts()
    finally:
        reader.close()
    print(
        json.dumps(
            {
                "reader": version("reader"),
                "feeds": len(urls),
                "new": new,
                "modified": modified,
                "unmodified": unmodified,
                "not_modified": not_modified,
                "errors": errors,
                "entries": counts.total,
            }
        ),
        flush=True,
    )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
