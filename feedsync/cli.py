"""The ``feedsync`` command line.

Exit codes (a contract for cron and scripts, documented in README):

- 0: the command did its work (for ``run``: the pass completed; a feed or an article
  that failed is recorded and reported, not fatal),
- 1: an unexpected internal error (``--debug`` shows the traceback),
- 2: a usage or configuration error, with a one-line message naming what is wrong,
- 3: a storage failure (the database cannot be opened, read or written),
- 130: interrupted (Ctrl-C); 141: the output pipe closed early (``| head``).

Imports stay light: what a command needs is imported when it runs, so ``feedsync run``
from cron with nothing new never loads trafilatura or rich.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from feedsync import __version__
from feedsync import config as config_module

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.records import FeedHealth
    from feedsync.storage import Storage

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_STORAGE = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for cat | head


class UsageError(Exception):
    """A bad argument; printed as one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage dump: cron mails and scripts read this.
        self.exit(EXIT_USAGE, f"feedsync: error: {message} (see 'feedsync --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="feedsync",
        description="Poll RSS/Atom feeds and keep every news article exactly once, "
        "with its full text.",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="config file (default: $FEEDSYNC_CONFIG, "
        "/etc/feedsync/feedsync.toml, ~/.config/feedsync/feedsync.toml)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    parser.add_argument("--version", action="version", version=f"feedsync {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    run = commands.add_parser("run", help="poll every feed once, extract what is new, exit")
    run.add_argument("--json", action="store_true", help="print the pass's counters as JSON")
    run.add_argument(
        "-q", "--quiet", action="store_true", help="print problems only, no summary line"
    )
    run.add_argument(
        "--due",
        action="store_true",
        help="poll only the feeds whose next poll time has come (for cron)",
    )
    commands.add_parser(
        "daemon", help="run as a service: poll on schedule, snapshot, retention (systemd)"
    )

    add = commands.add_parser("add", help="add a feed")
    add.add_argument("url")
    remove = commands.add_parser("remove", help="remove a feed (its articles are kept)")
    remove.add_argument("url")
    commands.add_parser("feeds", help="list the feeds and their health")

    status = commands.add_parser("status", help="where the data is, how safe, how much")
    status.add_argument("--json", action="store_true", help="print it as JSON")
    snapshot = commands.add_parser(
        "snapshot", help="write the live database to its persistent snapshot now"
    )
    snapshot.add_argument(
        "--force",
        action="store_true",
        help="write even when unchanged, or over another database's snapshot",
    )
    restore = commands.add_parser("restore", help="put the snapshot back as the live database")
    restore.add_argument(
        "--force",
        action="store_true",
        help="replace a live database that is newer (it is kept aside)",
    )

    demo = commands.add_parser(
        "demo", help="ingest bundled sample feeds from a local server into a throwaway database"
    )
    demo.add_argument(
        "--keep", metavar="DIR", type=Path, help="write the demo database into DIR and keep it"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from feedsync.config import ConfigError
    from feedsync.storage import StorageError

    try:
        return _dispatch(args)
    except (UsageError, ConfigError) as exc:
        kind = "config error" if isinstance(exc, ConfigError) else "error"
        print(f"feedsync: {kind}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StorageError as exc:
        print(f"feedsync: storage error: {exc}", file=sys.stderr)
        return EXIT_STORAGE
    except KeyboardInterrupt:
        print("feedsync: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`feedsync feeds | head`): stop quietly, as cat would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        print(
            f"feedsync: internal error: {reason} (run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from feedsync.demo import run_demo

        return run_demo(sys.stdout, keep=args.keep)

    config = config_module.load(args.config)
    handler = {
        "run": cmd_run,
        "add": cmd_add,
        "remove": cmd_remove,
        "feeds": cmd_feeds,
        "status": cmd_status,
        "snapshot": cmd_snapshot,
        "restore": cmd_restore,
        "daemon": cmd_daemon,
    }
    return handler[args.command](args, config)


# ---------------------------------------------------------------- commands


def _notice(message: str) -> None:
    print(f"feedsync: {message}", file=sys.stderr, flush=True)


def _open(config: Config) -> Storage:
    """Open the database and bring the config file's feeds into it."""
    from feedsync import storage as storage_module
    from feedsync import timestamps

    urls = config_module.feed_urls(config)
    storage = storage_module.open_storage(config.storage, notice=_notice)
    try:
        storage.sync_config_feeds(urls, timestamps.to_iso(timestamps.now()))
    except BaseException:
        storage.close()
        raise
    return storage


def cmd_run(args: argparse.Namespace, config: Config) -> int:
    import signal
    import threading

    from feedsync import progress
    from feedsync.pipeline import run_pass

    # SIGTERM (a timeout, a shutdown) and Ctrl-C: stop taking new work, let the open
    # transaction finish, give back the rows this run holds, print the summary.
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    storage = _open(config)
    try:
        if not storage.feeds_to_poll() and not (args.quiet or args.json):
            where = config.source or "a config file"
            print(
                "feedsync: no feeds to poll: add one with 'feedsync add URL' or a [[feeds]] "
                f"entry in {where}; 'feedsync demo' shows a run on sample feeds",
                file=sys.stderr,
            )
        stats = run_pass(
            config,
            storage,
            progress.choose(args.json, args.quiet),
            due_only=args.due,
            stop=stop,
        )
    finally:
        storage.close()
    if stats.stopped:
        print("feedsync: stopped early by a signal; the next run carries on", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def cmd_daemon(args: argparse.Namespace, config: Config) -> int:
    from feedsync.daemon import run_daemon

    return run_daemon(config, args.config)


def _user_feed_url(url: str) -> str:
    from feedsync.canonical import canonical_url

    canonical = canonical_url(url)
    if canonical is None:
        raise UsageError(f"not an http:// or https:// URL: {url!r}")
    return canonical


def cmd_add(args: argparse.Namespace, config: Config) -> int:
    from feedsync import timestamps

    url = _user_feed_url(args.url)
    storage = _open(config)
    try:
        added = storage.add_feed(url, timestamps.to_iso(timestamps.now()))
    finally:
        storage.close()
    print(f"added {url}" if added else f"already there: {url}")
    return EXIT_OK


def cmd_remove(args: argparse.Namespace, config: Config) -> int:
    url = _user_feed_url(args.url)
    if url in config_module.feed_urls(config):
        raise UsageError(
            f"{url} is listed in {config.source}: delete it there (feedsync then stops polling it)"
        )
    storage = _open(config)
    try:
        removed = storage.remove_feed(url)
    finally:
        storage.close()
    if not removed:
        raise UsageError(f"no such feed: {url} (see 'feedsync feeds')")
    print(f"removed {url} (its articles are kept)")
    return EXIT_OK


def _short(timestamp: str | None) -> str:
    """'2026-11-22T10:05:00Z' -> '2026-11-22 10:05Z'."""
    return f"{timestamp[:10]} {timestamp[11:16]}Z" if timestamp else "never"


def feed_health_line(feed: FeedHealth, failing_after: int) -> str:
    """ok / not polled yet / retrying / FAILING / DISABLED, with the reason."""
    if not feed.enabled:
        return f"DISABLED: {feed.disabled_reason}"
    if feed.error_count >= failing_after:
        return f"FAILING ({feed.error_count} in a row): {feed.last_error}"
    if feed.error_count:
        return f"retrying ({feed.error_count} failed in a row): {feed.last_error}"
    if feed.last_poll_at is None:
        return "not polled yet"
    return "ok"


def cmd_feeds(args: argparse.Namespace, config: Config) -> int:
    storage = _open(config)
    try:
        feeds = storage.feed_health()
    finally:
        storage.close()
    if not feeds:
        print("no feeds yet: add one with 'feedsync add URL'")
        return EXIT_OK
    for feed in feeds:
        origin = " (config)" if feed.origin == "config" else ""
        print(f"[{feed.id}] {feed.title or '(no title yet)'}{origin}")
        print(f"    {feed.url}")
        if feed.moved_from:
            print(f"    (moved from {feed.moved_from})")
        print(f"    {feed_health_line(feed, config.poll.failing_after)}")
        if feed.last_warning and feed.enabled:
            print(f"    warning: {feed.last_warning}")
        latest = _short(feed.latest_published) if feed.latest_published else "none"
        print(
            f"    last success {_short(feed.last_success_at)} | latest entry {latest} | "
            f"{feed.entries} entries"
        )
    return EXIT_OK


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


def cmd_status(args: argparse.Namespace, config: Config) -> int:
    import json
    from dataclasses import asdict

    storage = _open(config)
    try:
        where = storage.status()
        counts = storage.counts()
    finally:
        storage.close()
    if args.json:
        print(json.dumps({"version": __version__, "storage": asdict(where), "counts": counts}))
        return EXIT_OK
    print(f"feedsync {__version__}")
    print(f"live database   {where.live} ({_size(where.live_bytes)})")
    if where.snapshot is None:
        print("snapshot        none configured (the live database is the only copy)")
    else:
        taken = _short(where.snapshot_at) if where.snapshot_at else "none yet"
        print(f"snapshot        {where.snapshot} ({_size(where.snapshot_bytes)}, taken {taken})")
        unsaved = where.unsaved_changes or 0
        print(
            f"unsaved         {unsaved} change{'s' if unsaved != 1 else ''} since the last snapshot"
            if unsaved
            else "unsaved         nothing: the snapshot is current"
        )
    print(
        f"feeds           {counts['feeds_enabled']} enabled of {counts['feeds']}, "
        f"{counts['feeds_failing']} failing"
    )
    print(
        f"queue           {counts['queue_new']} new, {counts['queue_failed']} failed "
        f"(to retry), {counts['gone']} given up"
    )
    print(f"articles        {counts['articles']} (from {counts['entries']} entries)")
    return EXIT_OK


def cmd_snapshot(args: argparse.Namespace, config: Config) -> int:
    if config.storage.snapshot is None:
        raise UsageError("no snapshot is configured: set [storage] snapshot in the config")
    storage = _open(config)
    try:
        result = storage.snapshot(force=args.force)
    finally:
        storage.close()
    assert result is not None
    if result.written:
        print(f"snapshot written: {result.path} ({_size(result.size)}, {result.seconds:.1f}s)")
    else:
        print(f"{result.detail} ({_short(result.taken_at)}): nothing written")
    return EXIT_OK


def cmd_restore(args: argparse.Namespace, config: Config) -> int:
    from feedsync import storage as storage_module

    source = storage_module.restore_snapshot(config.storage, args.force, _notice)
    print(f"restored {config.storage.db} from {source}")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
