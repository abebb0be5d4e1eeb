"""A simulated day of cron runs in one process: ``feedsync run`` again and again.

    python bench/drivers/feedsync_day.py CONFIG PASSES

Each pass is ``feedsync.cli.main(["--config", CONFIG, "run", "--quiet"])``: exactly what
the ``feedsync`` command does (open the database, restore it if needed, sync the config's
feeds, poll, stage, extract, snapshot, close), minus the interpreter start-up, so that a
day of 96 passes can be traced with strace in reasonable time. Before each pass it waits
for a line on stdin (the bench publishes news in between); after it, it prints
``pass N exit CODE``.
"""

from __future__ import annotations

import sys

from feedsync.cli import main as feedsync


def main() -> int:
    config, passes = sys.argv[1], int(sys.argv[2])
    for number in range(passes):
        if not sys.stdin.readline():
            return 1  # the bench went away
        code = feedsync(["--config", config, "run", "--quiet"])
        print(f"pass {number} exit {code}", flush=True)
        if code != 0:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
