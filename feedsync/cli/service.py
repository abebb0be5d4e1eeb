"""Polling: ``feedsync run`` (one pass, from a shell or cron) and ``feedsync daemon`` (the
service)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from feedsync.config import Config
from feedsync.cli.common import EXIT_INTERRUPTED, EXIT_OK, open_storage, write_metrics


def cmd_run(args: argparse.Namespace, config: Config) -> int:
    import signal
    import threading

    from feedsync import progress
    from feedsync.config import proxy_warning
    from feedsync.pipeline import run_pass

    unused = proxy_warning()
    if unused is not None and not args.quiet:
        print(f"feedsync: warning: {unused}", file=sys.stderr)

    # SIGTERM (a timeout, a shutdown) and Ctrl-C: stop taking new work, let the open
    # transaction finish, give back the rows this run holds, print the summary.
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with open_storage(config) as storage:
        try:
            # (asked only when it would be said: the list reads every feed's last week)
            if not (args.quiet or args.json) and not storage.feeds_to_poll():
                where = config.source or "a config file"
                print(
                    "feedsync: no feeds to poll: add one with 'feedsync add URL' or a [[feeds]] "
                    f"entry in {where}; 'feedsync demo' shows a run on sample feeds",
                    file=sys.stderr,
                )
            stats = run_pass(
                config,
                storage,
                progress.choose(args.json, args.quiet, debug=args.debug),
                due_only=args.due,
                stop=stop,
            )
        finally:
            write_metrics(config, storage)
    if stats.stopped:
        print("feedsync: stopped early by a signal; the next run carries on", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def cmd_daemon(args: argparse.Namespace, config: Config) -> int:
    from feedsync.daemon import run_daemon

    return run_daemon(config, args.config, debug=args.debug)
