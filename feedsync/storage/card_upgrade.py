"""Creating a card database, and upgrading one from before version 7 (a whole-file
snapshot, or a database used directly on a disk) into the card layout, in place, once,
in one transaction."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from feedsync.storage import budget, busy, sqlfiles
from feedsync.storage.card import Card
from feedsync.storage.card_files import (
    Notice,
    beside,
    fresh_database,
    fsync,
    new_private_file,
    open_read_only,
    remove_database,
    sidecars,
    why_read_only,
)
from feedsync.storage.card_layout import is_card, schema_version, to_card_layout
from feedsync.storage.sqlfiles import migrate_sqlite, queries
from feedsync.storage_errors import CardReadOnly, StorageError


def create(path: Path, lineage: str | None, now: str) -> None:
    """A new card database at ``path`` (nothing there), of ``lineage`` (None: a new
    database's own), written beside it and renamed into place."""
    temporary = beside(path, "new")
    try:
        with fresh_database(temporary) as conn:
            migrate_sqlite(conn, str(path))
            busy.write(conn, lambda c: to_card_layout(c, now), str(path))
            if lineage is not None:
                with conn:
                    conn.execute(queries()["meta_set"], {"key": "lineage", "value": lineage})
        fsync(temporary)
        _orphans_aside(path)
        temporary.replace(path)
        fsync(path.parent, directory=True)
    except (OSError, sqlite3.Error) as exc:
        remove_database(temporary)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise StorageError(f"cannot create the card database {path}: {reason}") from None


def _orphans_aside(path: Path) -> None:
    """Before a new database takes ``path`` (nothing there): a journal left beside it
    (a card set aside by a process cut between moving the file and its journal) would
    be "rolled back" into the new database by SQLite, writing the old card's pages over
    it. Kept, under another name, never deleted: it belongs to the card set aside."""
    for sidecar in sidecars(path):
        if sidecar.exists():
            sidecar.replace(
                sidecar.with_name(f"{sidecar.name}.orphan-{time.strftime('%Y%m%dT%H%M%S')}")
            )


def needs_upgrade(path: Path) -> bool:
    """A database at ``path`` older than this feedsync, or not yet in the card layout.
    One newer than this feedsync is refused (its tables may mean what this code does
    not know)."""
    conn = open_read_only(path)
    try:
        version = schema_version(conn)
        sqlfiles.steps_to_apply(sqlfiles.schema_steps(), version, str(path))
        return version < sqlfiles.schema_steps()[-1][0] or not is_card(conn)
    finally:
        conn.close()


def upgrade(path: Path, now: str, notice: Notice) -> None:
    """Migrate the database at ``path`` to this feedsync's schema and turn it into the
    card layout, in one transaction (a power cut leaves it as it was), then index its
    articles for search. A database in WAL mode (used live on a disk) goes to the
    rollback journal first."""
    read_only = why_read_only(path)
    if read_only is not None:
        raise CardReadOnly(f"cannot upgrade {path} to this feedsync's layout: {read_only}")
    budget.need_room(budget.files_size(path, *sidecars(path)), path, f"cannot upgrade {path}")
    notice(f"upgrading {path} to schema {sqlfiles.schema_steps()[-1][0]} (the card layout); once")
    card = Card(path, None)  # checkpoints a WAL and leaves the rollback journal
    try:
        moved = card.to_this_layout(now)
        if moved is not None:
            notice(f"{path}: {moved} articles filed by month")
        indexed = card.index_all(now)
        if indexed:
            notice(f"{path}: {indexed} articles indexed for search")
    finally:
        card.close()


def flush_legacy(live: Path, path: Path) -> None:
    """A live database from before version 7 holding changes its snapshot lacks: the
    whole file to the card first (as feedsync did then: VACUUM INTO beside it, fsync,
    rename), so that the upgrade starts from everything."""
    size = budget.files_size(live, *sidecars(live))
    budget.need_room(size, path, f"cannot save {live} to {path} before upgrading")
    temporary = beside(path, "tmp")
    temporary.unlink(missing_ok=True)
    try:
        new_private_file(temporary)  # VACUUM INTO fills an empty file
        conn = sqlite3.connect(live)
        try:
            conn.execute("VACUUM INTO ?", (str(temporary),))
        finally:
            conn.close()
        fsync(temporary)
        temporary.replace(path)
        fsync(path.parent, directory=True)
    except (OSError, sqlite3.Error) as exc:
        temporary.unlink(missing_ok=True)
        raise StorageError(f"cannot save {live} to {path}: {exc}") from None
