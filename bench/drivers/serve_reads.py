"""Scenario 11's storage reads, timed alone on an archive ``serve_card.py`` built: a
feed's first page (quiet, small, busy; by the plan news_window chooses, and each plan
forced), the feeds' health (with and without the week's articles), the chart's four
weeks (news_per_day) and the content key. A quicker loop than the scenario when only the
reads changed: the archive is built once, then read by each version of the code.

    python bench/drivers/serve_reads.py CONFIG ARCHIVE.json END_ISO OUT.json

ARCHIVE.json is serve_card.py's output (the feeds' ids). Writes OUT.json: the median
milliseconds of each read over READS runs.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from feedsync import config as config_module
from feedsync.storage import Keep, sql_reading
from feedsync.storage.sqlite import SQLiteStorage
from feedsync.timestamps import from_iso, to_iso

READS = 9


def median_ms(read: Callable[[], object]) -> float:
    runs = []
    for _ in range(READS):
        t = time.perf_counter()
        read()
        runs.append(time.perf_counter() - t)
    return round(1000 * statistics.median(runs), 2)


def main() -> int:
    config_path, archive_path, end, out = sys.argv[1:5]
    config = config_module.load(config_path)
    feeds: dict[str, int] = json.loads(Path(archive_path).read_text())["feeds"]
    now = from_iso(end)
    storage = SQLiteStorage.open(config.storage, keep=Keep.of(config), clock=lambda: now)
    timings: dict[str, float] = {}
    for plan in (None, "walk", "links"):
        sql_reading.PLAN = plan
        for name, feed_id in feeds.items():
            label = name if plan is None else f"{name}_{plan}"
            timings[label] = median_ms(
                lambda feed_id=feed_id: storage.news_window(feed_id=feed_id, limit=50)
            )
    sql_reading.PLAN = None
    week_ago = to_iso(now - timedelta(days=7))
    timings["feed_health"] = median_ms(storage.feed_health)
    timings["feed_health_week"] = median_ms(lambda: storage.feed_health(week_ago=week_ago))
    since = to_iso(now - timedelta(days=28))
    timings["news_per_day"] = median_ms(lambda: storage.news_per_day(since))
    timings["content_key"] = median_ms(storage.content_key)
    timings["all"] = median_ms(lambda: storage.news_window(limit=50))
    storage.close()
    Path(out).write_text(json.dumps(timings, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
