"""Storage: the one layer that knows which database engine runs.

The stages (poll, stage, extract, the commands) call the methods of :class:`Storage`
with typed records and never see SQL, a connection or an engine. Every method is one
short transaction; none does network I/O. The SQLite backend is
:mod:`feedsync.storage.sqlite` (SQL in ``sql/``), the PostgreSQL backend
:mod:`feedsync.storage.postgresql` (the same query names; ``sql/postgresql/`` holds
those it writes differently, the others come from ``sql/``); both
share their logic through :mod:`feedsync.storage.base`.

Here: choosing and opening the engine, and what the commands ask about where the data
is. The interface is :mod:`feedsync.storage.interface` (by role), the errors
:mod:`feedsync.storage_errors`; both are re-exported. Nothing inside the package imports
this module back: each engine imports the interface, errors and helpers it needs.
"""

from __future__ import annotations

from collections.abc import Callable

from feedsync.config import StorageConfig
from feedsync.storage.interface import (
    ArticleQueue,
    Feeds,
    Keep,
    Polling,
    Reading,
    Storage,
    Upkeep,
)
from feedsync.storage_errors import (
    SNAPSHOTS_DO_NOT_APPLY,
    CardReadOnly,
    StorageDamaged,
    StorageError,
    StorageFull,
    StorageUnavailable,
)

__all__ = [
    "NO_CARD",
    "SNAPSHOTS_DO_NOT_APPLY",
    "ArticleQueue",
    "CardReadOnly",
    "Feeds",
    "Keep",
    "Polling",
    "Reading",
    "Storage",
    "StorageDamaged",
    "StorageError",
    "StorageFull",
    "StorageUnavailable",
    "Upkeep",
    "display_url",
    "open_storage",
    "restore_snapshot",
    "saves_to_card",
]


def _ignore(message: str) -> None:
    pass


def open_storage(
    config: StorageConfig,
    notice: Callable[[str], None] = _ignore,
    keep: Keep | None = None,
    *,
    new_card: bool = False,
) -> Storage:
    """Open (restoring, creating and migrating when needed) the database the config names.

    ``notice`` hears what the opening did that a user should know (a restore from the
    card, an upgrade, a damaged card set aside). ``keep``: how long what stays where
    (:meth:`Keep.of` the config). ``new_card``: on SQLite, a card database that is
    missing although the live database was saved to it may be started anew.
    """
    if config.url is not None:
        from feedsync.storage.postgresql import PostgreSQLStorage

        return PostgreSQLStorage.open(config.url)
    from feedsync.storage.sqlite import SQLiteStorage

    return SQLiteStorage.open(config, notice, keep, new_card=new_card)


def restore_snapshot(
    config: StorageConfig, force: bool, notice: Callable[[str], None], keep: Keep | None = None
) -> str:
    """``feedsync restore``: build the live database again from the card database;
    returns the card's path. Raises StorageError (SnapshotRefused without ``force``)."""
    from feedsync import clock, timestamps
    from feedsync.storage import card_files, card_restore
    from feedsync.storage.folders import check_directory

    if config.url is not None:
        raise StorageError(SNAPSHOTS_DO_NOT_APPLY)
    if config.card is None:
        raise StorageError("no card database is configured ([storage] card)")
    check_directory(config.live_path.parent, notice)  # a folder planted in /dev/shm: no
    saved = (card_files.file_meta(config.card_path) or {}).get("snapshot_at")
    since = timestamps.to_iso(clock.at_least(timestamps.now(), saved) - (keep or Keep()).live)
    card_restore.restore(config.live_path, config.card_path, since, force=force, notice=notice)
    return str(config.card_path)


# ---------------------------------------------------------------- for the commands
# What the commands say and decide about where the data is, without naming an engine.

#: ``feedsync status``'s snapshot line for a database that saves to no card
NO_CARD = "a PostgreSQL database is backed up with pg_dump"


def saves_to_card(config: StorageConfig) -> bool:
    """True: the database is a file on the RAM disk, saved to the card by snapshots;
    False: a server's database ([storage] url), backed up by the server's own tools."""
    return config.url is None


def display_url(url: str) -> str:
    """A database URL fit to print: the server and the database, never a password."""
    from feedsync.storage.pg_connect import display_url as shown

    return shown(url)
