"""SQLite transactions among several processes: run again whole when the file is busy.

Writers coordinate through SQLite itself: ``busy_timeout`` and ``BEGIN IMMEDIATE`` for
every write transaction, which takes the write lock at the start instead of upgrading a
read lock half way (the upgrade is what fails at once with "database is locked" no
matter the timeout). A transaction that still meets a busy database is run again whole,
with a bounded, jittered backoff: each is short and does no network I/O, so running it
again is safe. Used for the live database and for the card.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

from feedsync.storage_errors import StorageDamaged, StorageError

T = TypeVar("T")

# How long one statement waits for another process's lock before SQLITE_BUSY.
BUSY_TIMEOUT_S = 5.0
# Retries of a whole transaction that still met SQLITE_BUSY; with the backoff this
# bounds the wait at about a minute, far beyond any of feedsync's own transactions.
BUSY_RETRIES = 10


def is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(exc)
    return "locked" in text or "busy" in text


def is_full(exc: sqlite3.Error) -> bool:
    """The file system is full (SQLITE_FULL): said as such, not as a damaged database."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_FULL


def is_damage(exc: sqlite3.Error) -> bool:
    """SQLite found the file itself unreadable: not a database (a header that is not
    SQLite's), malformed (a page that makes no sense, a file shorter than its header
    says), or a format it does not know. Busy, locked, permissions, I/O and a full disk
    are not: they say nothing about the file, and another process's lock must never get
    a good database set aside."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_FORMAT)
    text = str(exc)
    return "malformed" in text or "not a database" in text


def retrying(work: Callable[[], T], where: str) -> T:
    """Run ``work`` (one whole transaction), again if the database was busy; any other
    SQLite error becomes a one-line StorageError naming ``where`` (StorageDamaged when
    the file itself is malformed)."""
    delay = 0.05
    for attempt in range(BUSY_RETRIES + 1):
        try:
            return work()
        except sqlite3.Error as exc:
            if is_busy(exc) and attempt < BUSY_RETRIES:
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 2.0)
                continue
            if is_busy(exc):
                raise StorageError(
                    f"{where}: still busy after {BUSY_RETRIES} retries: another "
                    "program holds a long write transaction"
                ) from None
            if is_full(exc):
                raise StorageError(f"{where}: the file system is full ({exc})") from None
            if is_damage(exc):
                raise StorageDamaged(f"{where}: {exc}") from None
            raise StorageError(f"{where}: {exc}") from None
    raise AssertionError("unreachable")


def write(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T], where: str) -> T:
    """``work`` inside BEGIN IMMEDIATE ... COMMIT on ``conn``, run again whole when busy."""

    def transaction() -> T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = work(conn)
            conn.execute("COMMIT")
            return result
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    return retrying(transaction, where)
