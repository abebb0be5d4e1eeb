"""What ``reader`` (lemon24/reader, the bench's baseline) reads from feed URLs: run with
the python of the bench's own venv (bench/baseline.py), never feedsync's, so the reading
is reader's own, HTTP and parsing both, with nothing of feedsync imported.

    <baseline python> tests/reader_roundtrip.py URL...

Prints one JSON object: for each URL given, the error reader's update met (None when it
read the feed) and every entry it stored, with the fields a user sees in a reader app:
id, link, title, published and updated (ISO 8601 in UTC, or None).

tests/test_serve_roundtrip.py runs it against the URLs of a running ``feedsync serve``.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from reader import make_reader


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(UTC).isoformat()


def read(urls: list[str]) -> dict[str, object]:
    found: dict[str, object] = {}
    reader = make_reader(":memory:")
    try:
        for url in urls:
            reader.add_feed(url)
        reader.update_feeds()
        for url in urls:
            feed = reader.get_feed(url)
            error = feed.last_exception
            entries = [
                {
                    "id": entry.id,
                    "link": entry.link,
                    "title": entry.title,
                    "published": _iso(entry.published),
                    "updated": _iso(entry.updated),
                }
                for entry in reader.get_entries(feed=url)
            ]
            found[url] = {
                "error": None if error is None else f"{error.type_name}: {error.value_str}",
                "version": feed.version,
                "entries": entries,
            }
    finally:
        reader.close()
    return found


if __name__ == "__main__":
    json.dump(read(sys.argv[1:]), sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
