"""The live database from the card: built anew when it is missing (a reboot emptied the
RAM disk), checked against the card when both are there (:func:`prepare`), restored on
``feedsync restore`` (never over unsaved changes without ``--force``)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from feedsync.storage import busy
from feedsync.storage.card_files import (
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
    set_aside_file,
    sidecars,
    uri,
    why_read_only,
)
from feedsync.storage.card_layout import MONTH, schema_version
from feedsync.storage.card_upgrade import create, flush_legacy, needs_upgrade, upgrade
from feedsync.storage.errors import CardReadOnly, StorageError
from feedsync.storage.sqlfiles import migrate_sqlite, queries
from feedsync.terminal import plural, short_time


def _live_state(live: Path) -> tuple[int, dict[str, str]] | None:
    """(schema version, meta) of a live database file, None when there is none."""
    if not live.exists():
        return None
    try:
        conn = sqlite3.connect(uri(live, "ro"), uri=True)
        try:
            return schema_version(conn), read_meta(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read {live}: {exc}") from None


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
    ``path``, and a live database at ``live`` (built from the card when missing).

    A card from before version 7 is upgraded in place; a live database from before
    version 7 saves what its snapshot lacks first, then is rebuilt from the upgraded
    card (its rows are all in it). A live database that was saved to a card that is now
    missing is refused (the card may not be mounted): nothing is written until the card
    is back, or ``feedsync snapshot --force`` starts a new one from the live database.
    """
    require_file(path, "snapshot" if on_card else "db")
    require_file(live, "db")
    read_only = why_read_only(path)
    with file_lock(lock_path(path)):
        if path.exists():
            roll_back(path)
            if read_only is not None:
                readable_as_it_is(path)
        state = _live_state(live)
        old_live = state is not None and state[0] < 7
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
            elif (
                state is not None
                and int(state[1].get("snapshot_seq", "0")) > 0
                and not (damaged or new_card)
            ):
                raise StorageError(
                    f"the card database {path} is missing, yet {live} was saved to it "
                    f"{state[1]['snapshot_seq']} times: is the card mounted? Nothing is "
                    "written until it is back ('feedsync snapshot --force' starts a new one "
                    "from the live database)"
                )
            else:
                create(path, state[1].get("lineage") if state else None, now)
                if damaged and state is None:
                    notice(
                        f"no usable card database: starting with an empty one at {path} "
                        "(the damaged file is kept beside it)"
                    )
        elif old_live and state is not None and _legacy_unsaved(state[1], path):
            flush_legacy(live, path)
        if needs_upgrade(path):
            upgrade(path, now, notice)
        if old_live:
            remove_database(live)  # everything it held is on the card now
        if not live.exists():
            restore_live(live, path, keep_since)
            meta = file_meta(path) or {}
            if int(meta.get("snapshot_seq", "0")) > 0:
                saved = short_time(meta.get("snapshot_at"), "?")  # as every time for people
                notice(f"restored {live} from {path} (saved {saved})")


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
    ``<live>.before-restore``.
    """
    with file_lock(lock_path(live), wait=False), file_lock(lock_path(path)):
        if not path.exists():
            raise StorageError(f"no card database at {path}")
        roll_back(path)
        problem = problem_of(path)
        if problem is not None:
            raise StorageError(f"the card database {path} is damaged ({problem})")
        state = _live_state(live)
        if state is not None:
            if not force:
                _refuse_overwrite(live, path, state[1], file_meta(path) or {})
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
            "'feedsync snapshot' saves them; --force replaces it (kept as .before-restore)"
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
