"""Scenario 11: what the feed index (schema version 11, ``feed_entries_feed``) costs the
card. Continues an archive ``serve_card.py`` built: ``HOURS`` more hours of the same
publishing (``PER_HOUR`` articles each, dealt to the same feeds), a save to the card at
the end of each hour as the daemon's ``save_interval`` (1 hour) does, a line written to
``MARKS`` after each save so that a trace of the card's writes splits by save (bench
scenario 9's method: ``strace -P`` the card and its journal). With ``without`` as the
last argument the index is dropped from both files first: the saves of version 10.

    python bench/drivers/serve_saves.py CONFIG END_ISO DAYS FIRST HOURS PER_HOUR MARKS [without]
"""

from __future__ import annotations

import sqlite3
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from serve_card import Archive

from feedsync import config as config_module
from feedsync.storage import Keep
from feedsync.storage.sqlite import SQLiteStorage
from feedsync.timestamps import from_iso


def main() -> int:
    config_path, end, days, first, hours, per_hour, marks = sys.argv[1:8]
    without = sys.argv[8:] == ["without"]
    config = config_module.load(config_path)
    if without:
        for path in (config.storage.live_path, config.storage.card_path):
            conn = sqlite3.connect(path)
            with conn:
                conn.execute("DROP INDEX IF EXISTS feed_entries_feed")
            conn.close()
    now = [from_iso(end)]
    storage = SQLiteStorage.open(config.storage, keep=Keep.of(config), clock=lambda: now[0])
    ids = {f.url: f.id for f in storage.feeds_to_poll()}
    order = [ids[u] for u in config_module.config_feeds(config)]
    archive = Archive(storage, order, int(days))
    n = int(first)
    with Path(marks).open("a") as mark:
        for hour in range(int(hours)):
            begin = now[0]
            now[0] = begin + timedelta(hours=1)
            archive.stretch(n, n + int(per_hour), begin, now[0], int(days) + hour // 24)
            n += int(per_hour)
            mark.write(f"save {hour}\n")
            mark.flush()
    storage.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
