"""The ``feedsync`` command line.

Exit codes (a contract for cron and scripts, documented in README):

- 0: the command did its work (for ``run``: the pass completed; a feed or an article
  that failed is recorded and reported, not fatal),
- 1: an unexpected internal error (``--debug`` shows the traceback),
- 2: a usage or configuration error, with a one-line message naming what is wrong,
- 3: a storage failure (the database cannot be opened, read or written),
- 4: refused: doing it would lose data (``restore`` over unsaved changes, a save to the
  card of another database); the message says what ``--force`` would do,
- 130: interrupted (Ctrl-C); 141: the output pipe closed early (``| head``).

The package is laid out by command group: ``parser`` (the grammar), ``service`` (run,
daemon), ``feeds`` (add, remove, feeds, OPML), ``news`` (news, show, search, export),
``admin`` (status, save, restore, migrate), ``serve`` (serve), and ``common`` (what they
share). Imports stay light: only the group of the command given is imported, and what a
command needs when it runs, so ``feedsync run`` from cron with nothing new never loads
trafilatura or rich.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from feedsync import config as config_module
from feedsync.cli.common import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    EXIT_STORAGE,
    EXIT_USAGE,
    UsageError,
)
from feedsync.cli.parser import build_parser, dashed_words_as_query, not_utf8, unmark

# command -> (module of feedsync.cli, function): only the command's own group is imported
COMMANDS = {
    "run": ("service", "cmd_run"),
    "daemon": ("service", "cmd_daemon"),
    "serve": ("serve", "cmd_serve"),
    "add": ("feeds", "cmd_add"),
    "remove": ("feeds", "cmd_remove"),
    "feeds": ("feeds", "cmd_feeds"),
    "import-opml": ("feeds", "cmd_import_opml"),
    "export-opml": ("feeds", "cmd_export_opml"),
    "news": ("news", "cmd_news"),
    "show": ("news", "cmd_show"),
    "search": ("news", "cmd_search"),
    "export": ("news", "cmd_export"),
    "status": ("admin", "cmd_status"),
    "save": ("admin", "cmd_save"),
    "snapshot": ("admin", "cmd_save"),  # save's name before (an alias: scripts, crontabs)
    "restore": ("admin", "cmd_restore"),
    "migrate": ("admin", "cmd_migrate"),
}

__all__ = ["COMMANDS", "build_parser", "entry", "main"]


def entry() -> NoReturn:
    """The process's way in and out (the ``feedsync`` script, ``python -m feedsync``):
    :func:`main`, then the exit.

    A stop does not wait for a feed's parse under way (it has nothing to save:
    parse_thread.ParseThread runs it on a daemon thread). Left to the interpreter's
    finalization, that thread is ended in the middle of the parser's C code, and glibc
    then aborts the process ("FATAL: exception not rethrown", exit status -6) after a
    clean stop: systemd would log a crash, and a restart policy would count one (seen
    in tests/test_daemon.py under load, in ~1 run of 3). Such an exit skips the
    finalization instead, once every line is out: nothing is left to do by then (the
    save is written, the extraction workers stopped)."""
    code = main()
    parses = sys.modules.get("feedsync.parse_thread")  # no parse without it
    if parses is not None and parses.parsing():
        import logging

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(dashed_words_as_query(parser, words))
    unmark(args)
    problem = not_utf8(args)
    if problem is not None:
        parser.error(problem)
    from feedsync.config import ConfigError
    from feedsync.storage import StorageError
    from feedsync.storage.card_files import SnapshotRefused

    try:
        return _dispatch(args)
    except (UsageError, ConfigError) as exc:
        kind = "config error" if isinstance(exc, ConfigError) else "error"
        print(f"feedsync: {kind}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SnapshotRefused as exc:  # not a failure: the state forbids it without --force
        print(f"feedsync: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
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
        from feedsync.terminal import clean

        reason = clean(f"{type(exc).__name__}: {exc}".splitlines()[0], one_line=True)
        print(
            f"feedsync: internal error: {reason} (run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from feedsync.demo import DemoRefused, run_demo

        try:
            return run_demo(sys.stdout, keep=args.keep)
        except DemoRefused as exc:
            raise UsageError(str(exc)) from None

    config = config_module.load(args.config)
    module, name = COMMANDS[args.command]
    handler = getattr(importlib.import_module(f"feedsync.cli.{module}"), name)
    return int(handler(args, config))
