"""The database itself: ``status``, ``save`` (``snapshot`` before), ``restore`` and
``migrate``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from feedsync import __version__

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.records import StorageStatus
from feedsync.cli.common import EXIT_OK, UsageError, notice, open_storage, write_metrics


def cmd_status(args: argparse.Namespace, config: Config) -> int:
    import json

    from feedsync import status
    from feedsync import terminal as t
    from feedsync.records import StorageStatus

    with open_storage(config) as storage:
        report = status.report(config, storage)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return EXIT_OK
    where = StorageStatus(**report["storage"])
    daemon = status.DaemonState(**report["daemon"])
    feeds, queue, articles = report["feeds"], report["queue"], report["articles"]
    room = t.width()
    if daemon.running:
        state = t.paint("running", "green") + (
            f" (pid {daemon.pid} on {daemon.host}, since {t.short_time(daemon.since)})"
        )
    elif daemon.last_seen:
        state = t.paint("not running", "yellow") + (
            f" (last seen {t.short_time(daemon.last_seen)})"
        )
    else:
        state = "not running (never started here; `feedsync run` works without it)"
    lines = [
        f"feedsync {__version__}",
        f"daemon     {state}",
        f"feeds      {feeds['total']}: {feeds['healthy']} ok, {feeds['retrying']} retrying, "
        f"{feeds['failing']} failing, {feeds['disabled']} disabled",
        f"queue      {queue['new']} new, {queue['failed_waiting']} failed (waiting to "
        f"retry), {queue['given_up']} given up",
    ]
    # the counts alone send the owner hunting: name the listing that says which and why
    troubled = [
        name
        for name, n in (("failed", queue["failed_waiting"]), ("given-up", queue["given_up"]))
        if n
    ]
    if troubled:  # commands as typed: "failed|given-up" would be a pipe in a shell
        lines.append(
            "           which, and why: feedsync news "
            + ", or ".join(f"--state {name}" for name in troubled)
        )
    lines += [
        f"articles   {articles['today']} today, {articles['total']} in all",
        f"next poll  {t.short_time(report['next_poll_at'], 'none scheduled')}",
    ]
    lines += _clock_lines(report["clock"], room)
    if where.snapshot is None:  # a server's database: its name, never a password
        from feedsync.storage import NO_CARD

        lines += [
            f"database   {t.cut_middle(where.live, room - 24)} ({t.size(where.live_bytes)})",
            f"snapshot   none: {NO_CARD}",
        ]
    else:
        lines += _storage_lines(where, room)
    for line in lines:
        print(line)
    return EXIT_OK


def _clock_lines(state: dict[str, str], room: int) -> list[str]:
    """``feedsync status``'s clock: believed (synchronized, or nothing known against it:
    it reads after every poll stored), or not, what waits for it, and why."""
    from feedsync import clock
    from feedsync import terminal as t

    why = state["why"]
    if state["state"] == clock.SYNCHRONIZED:
        return [t.cut(f"clock      synchronized ({why})", room)]
    if state["state"] == clock.UNKNOWN:
        return [t.cut(f"clock      not known to be synchronized ({why}); believed", room)]
    unsynchronized = state["state"] == clock.UNSYNCHRONIZED
    word = "NOT SYNCHRONIZED" if unsynchronized else "CANNOT BE RIGHT"
    return [
        "clock      "
        + t.paint(word, "yellow" if unsynchronized else "red")
        + ": retention waits for it",
        t.cut(f"           {why}", room),
    ]


def _storage_lines(where: StorageStatus, room: int) -> list[str]:
    """``feedsync status`` of a database that saves to the card: the live database
    against its RAM budget, the card database, what is not saved yet, and whatever is
    nearly full."""
    from feedsync import terminal as t

    assert where.snapshot is not None
    unsaved = where.unsaved_changes or 0
    changes = t.plural(unsaved, "change")
    if where.snapshot_at is None:  # never saved: nothing is "since" anything
        saved = "never, " + (f"{changes} not on the card yet" if unsaved else "nothing to save yet")
    else:
        saved = f"{t.short_time(where.snapshot_at)}, " + (
            f"{changes} since, not on the card yet"
            if unsaved
            else "nothing since: the card is current"
        )
    ram = (
        f" ({t.size(where.live_bytes)} of {t.size(where.ram_budget or 0)}, "
        f"{t.size(where.ram_disk_free or 0)} free)"
    )
    card = f" ({t.size(where.snapshot_bytes)}, {t.size(where.card_disk_free or 0)} free)"
    lines = [
        f"live       {t.cut_middle(where.live, room - 11 - len(ram))}{ram}",
        f"card       {t.cut_middle(where.snapshot, room - 11 - len(card))}{card}",
        f"saved      {saved}",
    ]
    if where.card_behind:  # the notes said "saved"; the card says otherwise
        lines.append(
            t.paint("CARD BEHIND", "red")
            + " "
            + t.cut(f"{where.card_behind}: the next save fills it", room - 12)
        )
    for problem in where.nearly_full:
        lines.append(t.paint("NEARLY FULL", "red") + f" {problem}")
    if where.not_taking:
        lines.append(t.paint("NOT TAKING", "red") + f" new entries: {where.not_taking}")
    if where.card_read_only:
        lines.append(t.paint("READ-ONLY", "red") + f" {where.card_read_only}")
    return lines


def cmd_save(args: argparse.Namespace, config: Config) -> int:
    from feedsync import terminal
    from feedsync.storage import SNAPSHOTS_DO_NOT_APPLY, saves_to_card

    if not saves_to_card(config.storage):
        raise UsageError(SNAPSHOTS_DO_NOT_APPLY)
    with open_storage(config, new_card=args.force, saving=True) as storage:
        try:
            result = storage.save(force=args.force)
        finally:
            write_metrics(config, storage)
    assert result is not None
    if result.written:
        print(
            f"snapshot written: {result.path} ({terminal.size(result.size)}, {result.seconds:.1f}s)"
        )
    else:
        print(f"{result.detail} ({terminal.short_time(result.taken_at)}): nothing written")
    return EXIT_OK


def cmd_migrate(args: argparse.Namespace, config: Config) -> int:
    """Copy the SQLite card database (everything) into PostgreSQL; the user then sets
    [storage] url. Progress bars on a terminal; the row counts of both sides at the end."""
    import contextlib

    from feedsync.config import database_url
    from feedsync.storage import StorageError, migrate

    try:
        url = database_url(args.to)
    except ValueError as exc:
        raise UsageError(f"--to: {exc}") from None
    source = args.source
    if source is None:
        from feedsync.storage import saves_to_card

        if not saves_to_card(config.storage):  # migrate's own words may name the engines
            raise UsageError("no SQLite database to copy: name one with --from FILE")
        # everything to the card first: that is the database copied
        with open_storage(config) as storage:
            storage.save()
        source = config.storage.card_path
    with contextlib.ExitStack() as stack:
        progress = (
            stack.enter_context(migrate.TerminalBar())
            if sys.stderr.isatty()
            else (lambda table, done, total: None)
        )
        result = migrate.migrate(source, url, progress=progress)
    migrate.report(result)
    if not result.equal:
        raise StorageError("the row counts differ (above): run feedsync migrate again")
    from feedsync.storage import display_url

    print(
        f"copied {source} into {display_url(url)} in {result.seconds:.1f}s; now set "
        f"[storage] url to that URL in {config.source or 'the config file'} and remove db "
        "and card (a password belongs in ~/.pgpass or PGPASSWORD)"
    )
    return EXIT_OK


def cmd_restore(args: argparse.Namespace, config: Config) -> int:
    from feedsync import storage as storage_module

    if not storage_module.saves_to_card(config.storage):
        raise UsageError(storage_module.SNAPSHOTS_DO_NOT_APPLY)
    source = storage_module.restore_snapshot(
        config.storage, args.force, notice, storage_module.Keep.of(config)
    )
    print(f"restored {config.storage.live_path} from {source}")
    return EXIT_OK
