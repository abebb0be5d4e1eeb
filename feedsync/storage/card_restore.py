"""The live database from the card: built anew when it is missing (a reboot emptied the
RAM disk) or damaged (set aside first, whatever the damage), checked against the card when
both are there (:func:`prepare`), restored on ``feedsync restore`` (never over unsaved
changes without ``--force``)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import NamedTuple

from feedsync.storage import busy
from feedsync.storage.card_files import (
    LockHeld,
    Notice,
    SnapshotRefused,
    beside,
    file_lock,
    file_meta,
    fresh_database,
    fsync,
    lock_path,
    new_private_file,
    problem_of,
    read_meta,
    readable_as_it_is,
    remove_database,
    require_file,
    roll_back,
    set_aside_damaged,
    set_aside_file,
    sidecars,
    uri,
    why_read_only,
)
from feedsync.storage.card_layout import MONTH, schema_version
from feedsync.storage.card_upgrade import create, flush_legacy, needs_upgrade, upgrade
from feedsync.storage.sqlfiles import migrate_sqlite, queries, schema_steps
from feedsync.storage_errors import CardReadOnly, StorageDamaged, StorageError
from feedsync.terminal import plural, short_time

# The meta rows that saves and the content counter read: a live database lacking one
# cannot be saved from, whatever else it holds.
_META_NEEDED = ("lineage", "content_version")
_META_NUMBERS = ("content_version", "snapshot_seq", "snapshot_content_version")


class LiveState(NamedTuple):
    """A live database file as found: its schema version and meta table, or, when it is
    damaged, what is wrong (``damage``, one line; nothing else is known of it then)."""

    version: int
    meta: dict[str, str]
    damage: str | None = None


def _damaged(why: str) -> LiveState:
    return LiveState(0, {}, " ".join(why.split()))  # SQLite's reports span lines


def _live_state(live: Path, *, thorough: bool = False) -> LiveState | None:
    """The live database file, judged; None when there is none.

    Damaged is whatever keeps it from being a live database this feedsync can work on,
    as SQLite reads it: not a database at all (a header overwritten, another format),
    an empty file, a file shorter than its header says (cut mid-way: SQLite refuses it
    at the first read), another program's database, one of ours lacking a table or a
    meta row it needs, or a page of its small tables (feeds, hosts, meta) that makes no
    sense (``quick_check``). A WAL of another database played over it shows as one of
    these; a WAL or -shm that is merely stale or garbage SQLite itself ignores or
    rebuilds. ``thorough``: every page is checked (``feedsync restore``, and the start
    after a command met a malformed page, :func:`suspect`); not at every start, since
    that reads the whole file (47 ms for a 12 MB live database on x86, more on a Pi,
    at every cron run; the checks above take 0.8 ms).

    Not damaged: a file from a newer feedsync (refused when opened: upgrade feedsync),
    or one from before version 7 (upgraded). A file that cannot be read now for another
    reason (locked by another process, permissions, I/O) is a StorageError, as before:
    a lock says nothing about the file."""
    try:
        if live.stat().st_size == 0:
            return _damaged("an empty file")
    except FileNotFoundError:
        return None
    try:
        conn = sqlite3.connect(uri(live, "ro"), uri=True, timeout=busy.BUSY_TIMEOUT_S)
        try:
            return _judge_live(conn, thorough)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        if busy.is_damage(exc):
            return _damaged(str(exc))
        raise StorageError(f"cannot read {live}: {exc}") from None


# Checked page by page at every start: small, and what every command reads first.
_SMALL_TABLES = ("meta", "feeds", "hosts", "host_pace", "host_slots")


def _judge_live(conn: sqlite3.Connection, thorough: bool) -> LiveState:
    q = queries()
    version = schema_version(conn)  # the first read: a header that is not SQLite's fails
    if version == 0 or not conn.execute(q["is_feedsync_database"]).fetchone():
        return _damaged("not a feedsync database")
    if version > schema_steps()[-1][0]:
        return LiveState(version, read_meta(conn))  # a newer feedsync's: refused at open
    missing = [str(r[0]) for r in conn.execute(q["live_missing_tables"], {"version": version})]
    if missing:
        return _damaged(f"no table {', '.join(missing)}")
    present = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
    checks = (
        [q["live_quick_check"]]
        if thorough
        else [f"PRAGMA quick_check({t})" for t in _SMALL_TABLES if t in present]
    )
    for check in checks:
        problems = [str(r[0]) for r in conn.execute(check)]
        if problems != ["ok"]:
            return _damaged("quick_check: " + "; ".join(problems[:3]))
    meta = read_meta(conn)  # schema 1 had none: refused, as it always was
    if version >= 7:  # what a save needs (older ones are flushed whole, then rebuilt)
        lacking = [key for key in _META_NEEDED if key not in meta]
        if lacking:
            return _damaged(f"no {', '.join(lacking)} in its meta table")
        for key in _META_NUMBERS:
            if key in meta and not meta[key].lstrip("-").isdigit():
                return _damaged(f"its meta {key} is {meta[key][:20]!r}, not a number")
    return LiveState(version, meta)


def suspect_path(live: Path) -> Path:
    """The mark a command leaves beside the live database when SQLite found a page of it
    malformed: the next start checks every page (:func:`prepare`)."""
    return live.with_name(live.name + ".suspect")


class LiveSuspect(StorageDamaged):
    """A malformed page met through the live database's connection, marked (:func:`suspect`)."""


def suspect(live: Path, error: StorageDamaged) -> LiveSuspect:
    """A command met a malformed page through the live database's connection (the page
    may be the card's, attached to it: the whole check at the next start tells). Marks
    the live database for that check, and returns the error to raise, saying so (once,
    however many calls it passes through)."""
    if isinstance(error, LiveSuspect):
        return error
    with contextlib.suppress(OSError):  # a full RAM disk: the error is said all the same
        suspect_path(live).touch()
    return LiveSuspect(
        f"{error} (the next feedsync command checks every page of {live}, and builds it "
        "again from the card if it is the damaged one)"
    )


def prepare(
    live: Path,
    path: Path,
    now: str,
    keep_since: str,
    notice: Notice,
    *,
    new_card: bool = False,
    on_card: bool = True,
) -> None:
    """Before the live database is opened: a card database in this feedsync's layout at
    ``path``, and a live database at ``live`` (built from the card when missing, set
    aside and built again when damaged: :func:`_rebuild_damaged`).

    A card from before version 7 is upgraded in place; a live database from before
    version 7 saves what its snapshot lacks first, then is rebuilt from the upgraded
    card (its rows are all in it). A live database that was saved to a card that is now
    missing is refused (the card may not be mounted): nothing is written until the card
    is back, or ``feedsync save --force`` starts a new one from the live database.
    A damaged live database with no card is refused the same way (what it was saved to
    cannot be read from it). Called holding no lock on ``<live>.lock``: all of it runs
    under the card's lock, so processes starting together do it one at a time.
    """
    require_file(path, "card" if on_card else "db")
    require_file(live, "db")
    read_only = why_read_only(path)
    with file_lock(lock_path(path)):
        if path.exists():
            roll_back(path)
            if read_only is not None:
                readable_as_it_is(path)
        mark = suspect_path(live)
        thorough = mark.exists()
        found = _live_state(live, thorough=thorough)
        broken = found.damage if found is not None else None
        if thorough and found is not None and broken is None:
            notice(
                f"every page of {live} checked, after a command met a malformed page: it "
                f"is whole, so that page is the card database's ({path})"
            )
        state = found if broken is None else None  # nothing is known of a damaged one
        old_live = state is not None and state.version < 7
        damaged = False
        if path.exists():
            problem = problem_of(path)
            if problem is not None and not on_card:
                raise StorageError(f"cannot open {path}: {problem}")
            if problem is not None and read_only is not None:
                raise CardReadOnly(
                    f"the card database {path} is damaged ({problem}) and cannot be set "
                    "aside: the card is mounted read-only"
                )
            if problem is not None:
                aside = set_aside_file(path, "corrupt", notice)
                notice(f"the card database {path} is damaged ({problem}); set aside as {aside}")
                damaged = True
        if not path.exists():
            if old_live:
                flush_legacy(live, path)
            elif broken is not None and not (damaged or new_card):
                raise StorageError(
                    f"the live database {live} is damaged ({broken}) and the card database "
                    f"{path} is missing: is the card mounted? Nothing is changed until it is "
                    "back ('feedsync save --force' starts an empty one)"
                )
            elif (
                state is not None
                and int(state.meta.get("snapshot_seq", "0")) > 0
                and not (damaged or new_card)
            ):
                raise StorageError(
                    f"the card database {path} is missing, yet {live} was saved to it "
                    f"{state.meta['snapshot_seq']} times: is the card mounted? Nothing is "
                    "written until it is back ('feedsync save --force' starts a new one "
                    "from the live database)"
                )
            else:
                create(path, state.meta.get("lineage") if state else None, now)
                if damaged and state is None:
                    notice(
                        f"no usable card database: starting with an empty one at {path} "
                        "(the damaged file is kept beside it)"
                    )
        elif old_live and state is not None and _legacy_unsaved(state.meta, path):
            flush_legacy(live, path)
        if needs_upgrade(path):
            upgrade(path, now, notice)
        if old_live:
            remove_database(live)  # everything it held is on the card now
        if broken is not None:
            _rebuild_damaged(live, path, broken, keep_since, notice)
        elif not live.exists():
            restore_live(live, path, keep_since)
            saved = _saved(path)
            if saved is not None:
                notice(f"restored {live} from {path} (saved {saved})")
        mark.unlink(missing_ok=True)  # checked whole, or built anew


def _saved(path: Path) -> str | None:
    """When the card database was last saved to, as every time is shown to people; None
    when it never was."""
    meta = file_meta(path) or {}
    if int(meta.get("snapshot_seq", "0")) > 0:
        return short_time(meta.get("snapshot_at"), "?")
    return None


def _rebuild_damaged(live: Path, path: Path, damage: str, keep_since: str, notice: Notice) -> None:
    """A damaged live database set aside (kept as ``<live>.damaged``, one copy) and built
    again from the card as a missing one is, said in one line.

    Only when no other feedsync process has it open (each holds a shared lock on
    ``<live>.lock`` from the moment it has opened the live database): that process
    works on the file still, and a second live database beside it would be two writers
    saving to one card; it is refused in one line instead, and the next start after it
    ends does it. Two processes starting together on a damaged file are kept apart by
    the card's lock (the caller holds it): the first sets it aside and rebuilds it, the
    second finds it whole. The card is only read."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(file_lock(lock_path(live), wait=False))
        except LockHeld:
            raise StorageError(
                f"the live database {live} is damaged ({damage}), and another feedsync "
                "process has it open: stop it (the feedsync service?); the next feedsync "
                "command then sets it aside and builds it again from the card"
            ) from None
        aside, replaced = set_aside_damaged(live)
        said = f"the live database {live} is damaged ({damage}): set aside as {aside}"
        if replaced:
            said += " (replacing the one set aside before)"
        try:
            restore_live(live, path, keep_since)
        except StorageError as exc:
            raise StorageError(f"{said}; {exc}") from None
        saved = _saved(path)
        notice(
            f"{said}, and built again from {path}"
            + (f" (saved {saved})" if saved is not None else ", which holds no save yet")
        )


def _legacy_unsaved(live_meta: dict[str, str], path: Path) -> bool:
    """Whether a live database from before version 7 holds what its snapshot lacks."""
    saved = file_meta(path) or {}
    return (
        saved.get("lineage") != live_meta.get("lineage")
        or live_meta.get("content_version") != live_meta.get("snapshot_content_version")
        or saved.get("snapshot_seq") != live_meta.get("snapshot_seq")
    )


def restore_live(live: Path, path: Path, keep_since: str) -> None:
    """Build the live database from the card: its feeds and hosts, the queue, the
    entries first seen since ``keep_since`` with their links, the newest entry and
    article (so new ids follow the card's), and its counters; leases cleared (whoever
    held them worked on a live database that no longer exists). Written beside and
    renamed into place."""
    for stale in sidecars(live):  # a WAL of another database must never meet this one
        stale.unlink(missing_ok=True)
    temporary = beside(live, "restore")
    try:
        with fresh_database(temporary) as conn:
            # the pages a save frees go back to the RAM disk (PRAGMA incremental_vacuum)
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            migrate_sqlite(conn, str(live))
            conn.execute("ATTACH ? AS card", (uri(path, "ro"),))
            busy.write(conn, lambda c: _copy_hot(c, keep_since), str(live))
            conn.execute("DETACH card")
        temporary.replace(live)
    except sqlite3.Error as exc:
        remove_database(temporary)
        if busy.is_full(exc):
            raise StorageError(
                f"cannot restore {live} from {path}: the RAM disk is full ({exc})"
            ) from None
        raise StorageError(f"cannot restore {live} from {path}: {exc}") from None
    except BaseException:
        remove_database(temporary)
        raise


def _copy_hot(conn: sqlite3.Connection, keep_since: str) -> None:
    q = queries()
    conn.execute("DELETE FROM main.meta")  # the new file's own; the card's come next
    for name in ("live_restore_feeds", "live_restore_hosts", "live_restore_meta"):
        conn.execute(q[name])
    conn.execute(q["live_restore_entries"], {"keep_since": keep_since})
    conn.execute(q["live_restore_links"])
    newest = newest_article(conn, "card")
    if newest is not None:
        conn.execute(q["live_restore_article"], {"id": newest})
    meta = read_meta(conn, "card")
    saved = meta.get("snapshot_content_version", "0")
    for key, value in (
        ("content_version", saved),
        ("snapshot_content_version", saved),
        ("live_id", os.urandom(8).hex()),  # secrets.token_hex, without hashlib's ~7 ms
    ):
        conn.execute(q["meta_set"], {"key": key, "value": value})
    conn.execute(q["restore_free_entries"])
    conn.execute(q["restore_free_feeds"])


def copy_attached(conn: sqlite3.Connection, schema: str, path: Path) -> None:
    """The database attached as ``schema`` on ``conn`` (still open, its file perhaps
    removed) written whole to ``path``: beside it, fsynced, renamed into place."""
    temporary = path.with_name(f".{path.name}.new-{os.getpid()}")
    temporary.unlink(missing_ok=True)
    try:
        new_private_file(temporary)  # VACUUM INTO fills an empty file
        busy.retrying(lambda: conn.execute(f"VACUUM {schema} INTO ?", (str(temporary),)), str(path))
        fsync(temporary)
        temporary.replace(path)
        fsync(path.parent, directory=True)
    except (OSError, StorageError):
        temporary.unlink(missing_ok=True)
        raise


def restore(live: Path, path: Path, keep_since: str, *, force: bool, notice: Notice) -> None:
    """``feedsync restore``: rebuild the live database from the card.

    Refuses while another feedsync process has the live database open, and (without
    ``force``) when the live database holds changes the card lacks, or is another
    database altogether. A live database replaced by force is kept as
    ``<live>.before-restore``; a damaged one is set aside as any command does, with or
    without ``force``.
    """
    with file_lock(lock_path(live), wait=False), file_lock(lock_path(path)):
        if not path.exists():
            raise StorageError(f"no card database at {path}")
        roll_back(path)
        problem = problem_of(path)
        if problem is not None:
            raise StorageError(f"the card database {path} is damaged ({problem})")
        state = _live_state(live, thorough=True)  # a restore can afford every page
        if state is not None and state.damage is not None:
            # no changes can be read from it, and none are lost: it is kept aside
            _rebuild_damaged(live, path, state.damage, keep_since, notice)
            suspect_path(live).unlink(missing_ok=True)
            return
        if state is not None:
            if not force:
                _refuse_overwrite(live, path, state.meta, file_meta(path) or {})
            kept = live.with_name(live.name + ".before-restore")
            conn = sqlite3.connect(live)
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()
            live.replace(kept)
            for stale in sidecars(live):
                stale.unlink(missing_ok=True)
            notice(f"the live database was kept as {kept}")
        restore_live(live, path, keep_since)
        suspect_path(live).unlink(missing_ok=True)


def _refuse_overwrite(
    live: Path, path: Path, current: dict[str, str], saved: dict[str, str]
) -> None:
    if current.get("lineage") != saved.get("lineage"):
        raise SnapshotRefused(
            f"{live} is not a copy of {path}: refusing to replace it "
            "(--force replaces it, keeping it as .before-restore)"
        )
    unsaved = int(current.get("content_version", "0")) - int(
        current.get("snapshot_content_version", "0")
    )
    if unsaved > 0 or int(current.get("snapshot_seq", "0")) > int(saved.get("snapshot_seq", "0")):
        raise SnapshotRefused(
            f"{live} is newer than {path} ({plural(max(unsaved, 0), 'change')} not on the card): "
            "'feedsync save' saves them; --force replaces it (kept as .before-restore)"
        )


def what_is_unsaved(live: dict[str, str], card: dict[str, str]) -> tuple[int, str | None]:
    """For ``feedsync status``: how many changes of the live database the card database
    lacks, and, when the card holds fewer saves than the live database made to it, why
    (None otherwise). Judged by what the card itself holds, not only by the live
    database's notes: a card begun anew after a damaged one was set aside holds none of
    them, though the notes still say "saved"."""
    content = int(live.get("content_version", "0"))
    noted = int(live.get("snapshot_content_version", "-1"))
    live_seq = int(live.get("snapshot_seq", "0"))
    card_seq = int(card.get("snapshot_seq", "0"))
    if card.get("lineage") != live.get("lineage") or card_seq == live_seq:
        return max(content - noted, 0), None
    held = int(card.get("snapshot_content_version", "-1"))
    if card_seq > live_seq:  # its own save whose note was lost, or another copy's
        own = card.get("saved_from") == live.get("live_id")
        return max(content - (held if own else noted), 0), None
    why = (
        f"begun anew after {plural(live_seq, 'save')} to the one before"
        if card_seq == 0
        else f"an older copy (save {card_seq} of {live_seq})"
    )
    return max(content - held, 0), why


def newest_article(conn: sqlite3.Connection, schema: str) -> int | None:
    """The highest article id of a card database attached as ``schema`` (each month's
    table asked on its own: an aggregate over the `news` view would read every row)."""
    months = [
        str(r[0])
        for r in conn.execute(
            f"SELECT substr(name, 6) FROM {schema}.sqlite_master WHERE type = 'table' "
            "AND name GLOB 'news_[0-9][0-9][0-9][0-9]_[0-9][0-9]'"
        )
    ]
    found = [
        conn.execute(f"SELECT max(id) FROM {schema}.news_{m}").fetchone()[0]
        for m in months
        if MONTH.match(m)
    ]
    values = [int(v) for v in found if v is not None]
    return max(values) if values else None
