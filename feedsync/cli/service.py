"""Polling: ``feedsync run`` (one pass, from a shell or cron) and ``feedsync daemon`` (the
service)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.storage import Storage
from feedsync.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    UsageError,
    feed_ref,
    open_storage,
    write_metrics,
)


def cmd_run(args: argparse.Namespace, config: Config) -> int:
    import signal
    import threading

    from feedsync import progress
    from feedsync.config import proxy_warning
    from feedsync.pass_plan import PassPlan, PassRuntime
    from feedsync.pipeline import Pass, run_pass

    unused = proxy_warning()
    if unused is not None and not args.quiet:
        print(f"feedsync: warning: {unused}", file=sys.stderr)

    # SIGTERM (a timeout, a shutdown) and Ctrl-C: stop taking new work, let the open
    # transaction finish, give back the rows this run holds, print the summary.
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with open_storage(config) as storage:
        only = _named_feeds(storage, args.feed) if args.feed else None
        try:
            # (asked only when it would be said: the list reads every feed's last week)
            if only is None and not (args.quiet or args.json) and not storage.feeds_to_poll():
                where = config.source or "a config file"
                print(
                    "feedsync: no feeds to poll: add one with 'feedsync add URL' or a [[feeds]] "
                    f"entry in {where}; 'feedsync demo' shows a run on sample feeds",
                    file=sys.stderr,
                )
            shown = progress.choose(args.json, args.quiet, debug=args.debug)
            runtime = PassRuntime(config, storage, shown, stop=stop)
            if only is not None:
                # these feeds now, due or not, and their new articles only: the rest of
                # the queue is the next pass's
                stats = Pass(PassPlan(only=only, own_only=True, save=True), runtime).run()
            else:
                stats = run_pass(PassPlan(due_only=args.due, save=True), runtime)
        finally:
            write_metrics(config, storage)
    if stats.stopped:
        print("feedsync: stopped early by a signal; the next run carries on", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def _named_feeds(storage: Storage, refs: list[str]) -> set[int]:
    """The ids of the feeds ``run --feed`` names (by URL or id); one that is not a feed
    here, or is disabled, is a one-line error naming it."""
    health = {f.id: f for f in storage.feed_health()}
    ids: set[int] = set()
    for ref in refs:
        feed_id, url = feed_ref(storage, ref)
        found = health.get(feed_id)
        if found is not None and not found.enabled:
            raise UsageError(f"feed {url} is disabled: {found.disabled_reason}")
        ids.add(feed_id)
    return ids


def cmd_daemon(args: argparse.Namespace, config: Config) -> int:
    from feedsync.daemon import run_daemon

    return run_daemon(config, args.config, debug=args.debug)
