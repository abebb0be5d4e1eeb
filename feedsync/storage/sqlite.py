"""The SQLite backend: one database file, shared safely by several processes.

Writers coordinate through SQLite itself: WAL (readers never wait for a writer),
``busy_timeout``, and ``BEGIN IMMEDIATE`` for every write transaction, which takes the
write lock at the start instead of upgrading a read lock half way (the upgrade is what
fails at once with "database is locked" no matter the timeout). A transaction that still
meets a busy database is retried whole, with a bounded, jittered backoff: each is short
and does no network I/O, so running it again is safe. The schema is applied and migrated
inside such a transaction, so two processes starting at once on an empty file apply it
once.
"""

from __future__ import annotations

import os
import random
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from feedsync.records import (
    NewsItem,
    SearchHit,
    SnapshotResult,
    StorageStatus,
)
from feedsync.storage import StorageError
from feedsync.storage import snapshot as snapshots
from feedsync.storage.base import SQLStorage, like_escape, snippet
from feedsync.storage.sqlfiles import (
    queries,
    schema_steps,
    split_statements,
    steps_to_apply,
)

T = TypeVar("T")

# How long one statement waits for another process's lock before SQLITE_BUSY.
BUSY_TIMEOUT_S = 5.0
# Retries of a whole write transaction that still met SQLITE_BUSY; with the backoff this
# bounds the wait at about a minute, far beyond any of feedsync's own transactions.
BUSY_RETRIES = 10


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(exc)
    return "locked" in text or "busy" in text


def _ignore(message: str) -> None:
    pass


def _check_directory(folder: Path) -> None:
    """Create the database's folder. In a world-writable place (/dev/shm, /tmp) it must be
    ours: another local user could pre-create /dev/shm/feedsync-1000 and read or swap the
    database. Elsewhere, a folder shared through its group is the owner's business."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        owner = folder.stat().st_uid
        parent_mode = folder.parent.stat().st_mode
    except OSError as exc:
        raise StorageError(f"cannot create {folder}: {exc.strerror or exc}") from None
    if parent_mode & stat.S_IWOTH and owner not in (os.geteuid(), 0):
        raise StorageError(
            f"{folder} belongs to another user (uid {owner}) in the world-writable "
            f"{folder.parent}: refusing to keep the database there"
        )


class SQLiteStorage(SQLStorage):
    """:class:`feedsync.storage.Storage` on one SQLite file (the live database), with
    optional snapshots to a persistent path (:mod:`feedsync.storage.snapshot`)."""

    def __init__(self, conn: sqlite3.Connection, path: Path, snapshot: Path | None, in_use: int):
        self._conn = conn
        self._q = queries()
        self._in_use = in_use  # fd holding a shared lock: `feedsync restore` waits for us
        self.path = path
        self.snapshot_path = snapshot
        self.location = str(path)

    # ------------------------------------------------------------ opening

    @classmethod
    def open(
        cls, path: Path, snapshot: Path | None = None, notice: snapshots.Notice = _ignore
    ) -> SQLiteStorage:
        """Open the live database at ``path``; when it is missing and a ``snapshot`` is
        configured, restore the snapshot first. ``notice`` hears what was restored or set
        aside."""
        _check_directory(path.parent)
        in_use = snapshots.acquire(snapshots.lock_path(path), shared=True)
        try:
            if snapshot is not None:
                snapshots.restore_if_missing(path, snapshot, notice)
            conn = sqlite3.connect(
                path,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,  # we say BEGIN IMMEDIATE / COMMIT ourselves
                check_same_thread=False,  # used from one thread at a time (the pipeline lane)
            )
        except (sqlite3.Error, OSError) as exc:
            os.close(in_use)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise StorageError(f"cannot open {path}: {reason}") from None
        except BaseException:
            os.close(in_use)
            raise
        conn.row_factory = sqlite3.Row
        storage = cls(conn, path, snapshot, in_use)
        try:
            storage._retry(storage._configure)
            storage._retry(storage._migrate)
        except BaseException:
            storage.close()
            raise
        return storage

    def _configure(self) -> None:
        self._conn.execute("PRAGMA foreign_keys = ON")
        mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StorageError(f"{self.path}: cannot switch to WAL mode (got {mode!r})")
        # Durability comes from snapshots, not from fsync on every commit (the live
        # database sits on tmpfs); NORMAL in WAL mode still never corrupts.
        self._conn.execute("PRAGMA synchronous = NORMAL")
        # Sorts and temporary tables in RAM: SQLite's temp files would otherwise go to
        # /var/tmp or /tmp, which on a Pi is the SD card.
        self._conn.execute("PRAGMA temp_store = MEMORY")

    def _migrate(self) -> None:
        steps = schema_steps()
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            for target, script in steps_to_apply(steps, version, str(self.path)):
                for statement in split_statements(script.read_text(encoding="utf-8")):
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {target:d}")
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._conn.close()
        if self._in_use >= 0:
            os.close(self._in_use)
            self._in_use = -1

    # ------------------------------------------------------------ transactions

    def _retry(self, work: Callable[[], T]) -> T:
        """Run ``work`` (one whole transaction), again if the database was busy."""
        delay = 0.05
        for attempt in range(BUSY_RETRIES + 1):
            try:
                return work()
            except sqlite3.Error as exc:
                if _is_busy(exc) and attempt < BUSY_RETRIES:
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 2.0)
                    continue
                if _is_busy(exc):
                    raise StorageError(
                        f"{self.path}: still busy after {BUSY_RETRIES} retries: another "
                        "program holds a long write transaction"
                    ) from None
                raise StorageError(f"{self.path}: {exc}") from None
        raise AssertionError("unreachable")

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` inside BEGIN IMMEDIATE ... COMMIT, retried whole when busy."""

        def transaction() -> T:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(self._conn)
                self._conn.execute("COMMIT")
                return result
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

        return self._retry(transaction)

    def _read(self, name: str, **params: Any) -> list[sqlite3.Row]:
        return self._retry(lambda: self._conn.execute(self._q[name], params).fetchall())

    def _exec(self, conn: sqlite3.Connection, name: str, **params: Any) -> sqlite3.Cursor:
        return conn.execute(self._q[name], params)

    def snapshot(self, force: bool = False) -> SnapshotResult | None:
        if self.snapshot_path is None:
            return None
        return snapshots.take(self._conn, self.snapshot_path, self._record_snapshot, force=force)

    def status(self) -> StorageStatus:
        meta = self._meta()
        live_bytes = sum(
            p.stat().st_size for p in (self.path, *snapshots.sidecars(self.path)) if p.exists()
        )
        snap = self.snapshot_path
        snap_exists = snap is not None and snap.exists()
        prev = snapshots.prev_path(snap) if snap is not None else None
        unsaved = int(meta["content_version"]) - int(meta["snapshot_content_version"])
        return StorageStatus(
            engine="sqlite",
            live=str(self.path),
            live_bytes=live_bytes,
            snapshot=str(snap) if snap is not None else None,
            snapshot_bytes=snap.stat().st_size if snap is not None and snap_exists else None,
            snapshot_at=meta["snapshot_at"] or None if snap_exists else None,
            previous_snapshot=str(prev) if prev is not None and prev.exists() else None,
            unsaved_changes=max(unsaved, 0) if snap is not None else None,
        )

    # ------------------------------------------------------------ the user's commands

    def search(self, query: str, limit: int, marks: tuple[str, str]) -> list[SearchHit]:
        """Full text: every term of three characters or more through the trigram index
        (ranked by bm25, with the index's snippet); a query with a shorter term, below
        what trigrams can match, through a scan (newest first, snippet made here)."""
        terms = query.split()
        if not terms:
            return []
        if all(len(term) >= 3 for term in terms):
            fts = " AND ".join('"' + term.replace('"', '""') + '"' for term in terms)
            rows = self._read("news_search", query=fts, limit=limit, open=marks[0], close=marks[1])
            return [SearchHit(**dict(r)) for r in rows]
        pattern = "%" + "%".join(like_escape(t) for t in terms) + "%"
        rows = self._read("news_search_short", pattern=pattern, limit=limit)
        return [
            SearchHit(
                **{**dict(r), "snippet": snippet(r["title"] + " " + r["snippet"], terms, marks)}
            )
            for r in rows
        ]

    def export_news(self, since: str) -> Iterator[NewsItem]:
        """Every article since ``since``, oldest first, one at a time: a cursor, never
        the whole table in memory."""
        cursor = self._retry(lambda: self._conn.execute(self._q["news_export"], {"since": since}))
        try:
            while rows := cursor.fetchmany(200):
                for row in rows:
                    yield NewsItem(**dict(row))
        finally:
            cursor.close()
