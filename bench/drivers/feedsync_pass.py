"""One feedsync pass through its Python API, as ``feedsync run`` does it, but choosing
whether the extraction stage runs: ``--no-extract`` stages the new entries and stops
(there is no CLI flag for a poll-only pass).

    python bench/drivers/feedsync_pass.py CONFIG [--no-extract]

Mirrors ``feedsync.cli.service.cmd_run``: load the config, open the storage and bring the config's
feeds in (the CLI's own ``open_storage``), one :class:`feedsync.pipeline.Pass`, close. Prints the
pass's counters as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from feedsync import config as config_module
from feedsync.cli.common import open_storage as _open
from feedsync.pass_plan import PassPlan, PassRuntime
from feedsync.pipeline import Pass
from feedsync.progress import PlainProgress


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--no-extract", action="store_true")
    args = parser.parse_args()
    config = config_module.load(args.config)
    storage = _open(config)
    try:
        before = getattr(storage, "writes", 0)  # older feedsync: not counted
        stats = Pass(
            PassPlan(extract=not args.no_extract),
            PassRuntime(config, storage, PlainProgress(summary=False)),
        ).run()
        # the pass's own write transactions (the config's feeds brought in are not)
        out = {**asdict(stats), "write_transactions": getattr(storage, "writes", 0) - before}
    finally:
        storage.close()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
