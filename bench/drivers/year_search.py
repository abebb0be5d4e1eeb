"""Scenario 9's searches: a process of their own, as ``feedsync search`` is.

    year_search.py CONFIG TERMS

Started by the year's daemon (bench/drivers/year_on_a_pi.py) once its day is done, while
it waits: opens the storage the config names as the CLI's commands do (the live database
on the RAM disk, the card database attached read-only), searches each term of TERMS (a
JSON object, name -> term) for 20 hits, and prints one JSON line::

    {"search": {name: [seconds, hits], ...}, "peak_rss_kb": N}

``seconds`` is the time of ``storage.search`` alone (not this process's start, imports or
opening); like every ``feedsync search``, it starts with SQLite's page cache empty (the
kernel's holds the files), and the first search also builds the tokenizer its queries go
through. ``peak_rss_kb`` is this process's peak RSS (VmHWM) once
the three are done.

It only reads: unlike ``feedsync search`` it does not bring the config file's feeds into
the database (the daemon did, on its simulated clock), and it refuses to start when the
live database is missing (opening would build it from the card). Anything the opening says
it did (a restore, an upgrade, a card set aside) makes it exit 1: the year was not left as
the daemon keeps it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO)]

from feedsync import config as config_module  # noqa: E402
from feedsync.storage import Keep, open_storage  # noqa: E402


def vm_hwm_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def main() -> int:
    config_path, terms = sys.argv[1], json.loads(sys.argv[2])
    config = config_module.load(config_path)
    if config.storage.url is None and not config.storage.live_path.exists():
        print(f"year_search: no live database at {config.storage.live_path}", file=sys.stderr)
        return 1
    said: list[str] = []
    searched: dict[str, tuple[float, int]] = {}
    with open_storage(config.storage, notice=said.append, keep=Keep.of(config)) as storage:
        for name, term in terms.items():
            started = time.perf_counter()
            hits = storage.search(term, 20, ("", ""))
            searched[name] = (time.perf_counter() - started, len(hits))
    if said:
        print("year_search: opening the storage did more than read:", file=sys.stderr)
        for message in said:
            print(f"  {message}", file=sys.stderr)
        return 1
    print(json.dumps({"search": searched, "peak_rss_kb": vm_hwm_kb()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
