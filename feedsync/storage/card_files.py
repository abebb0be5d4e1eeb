"""The card database's files: locks (flock) among savers, restorers and upgraders, fsync,
new private files, read-only opens, the checks that say whether a file is a usable
database, and setting a damaged one aside. What a save or a restore does is in
:mod:`feedsync.storage.card` and :mod:`feedsync.storage.card_restore`."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

from feedsync.storage import busy
from feedsync.storage.sqlfiles import queries
from feedsync.storage_errors import CardReadOnly, StorageError

# A saver or restorer holds the card's lock for seconds; waiting longer means trouble.
LOCK_TIMEOUT_S = 300.0


Notice = Callable[[str], None]


class SnapshotRefused(StorageError):
    """Writing or restoring would lose data; ``--force`` overrides."""


class LockHeld(StorageError):
    """Another process holds the lock asked for without waiting (:func:`acquire`)."""


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def sidecars(db: Path) -> list[Path]:
    """The files SQLite keeps beside a database."""
    return [db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def why_read_only(path: Path) -> str | None:
    """Why nothing can be written to the database at ``path`` (None: it can): its file
    system is mounted read-only, as the kernel remounts an SD card after write errors."""
    probe = path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        if not os.statvfs(probe).f_flag & os.ST_RDONLY:
            return None
    except OSError:
        return None
    return (
        f"the card's file system ({probe}) is mounted read-only (the kernel does so after "
        f"write errors: see dmesg): nothing can be saved to {path}; feedsync runs in RAM, "
        "and what changed since the last save is lost at power-off"
    )


def _open_lock_file(path: Path) -> int:
    """The lock file, created 0600 if needed. On a read-only file system (a card the
    kernel remounted read-only) it cannot be created or opened for writing, and nobody
    can write the card either: the lock file read-only, or its folder when it was never
    made, serves the readers (flock works on either)."""
    flags = os.O_CLOEXEC
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o600)
    except OSError as exc:
        if exc.errno != errno.EROFS:
            raise StorageError(f"cannot create {path}: {exc.strerror or exc}") from None
    try:
        return os.open(path, os.O_RDONLY | flags)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageError(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        return os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | flags)
    except OSError as exc:
        raise StorageError(f"cannot open {path.parent}: {exc.strerror or exc}") from None


def acquire(
    path: Path, *, shared: bool = False, wait: bool = True, timeout: float = LOCK_TIMEOUT_S
) -> int:
    """flock(2) on ``path`` (created if needed); returns the fd that holds it (close it to
    release). Raises StorageError when the lock cannot be had."""
    fd = _open_lock_file(path)
    mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, mode)
            return fd
        except BlockingIOError:
            if not wait or time.monotonic() > deadline:
                os.close(fd)
                raise LockHeld(
                    f"{path} is held by another feedsync process"
                    + ("" if wait else " (stop it first, e.g. the feedsync service)")
                ) from None
            time.sleep(0.05)


# Exclusive locks this process holds: path -> (thread holding it, depth). flock(2) is
# per open file: a second open of the same lock file by its holder would wait forever.
_held: dict[Path, tuple[int, int]] = {}


_held_guard = threading.Lock()


@contextlib.contextmanager
def file_lock(
    path: Path, *, shared: bool = False, wait: bool = True, timeout: float = LOCK_TIMEOUT_S
) -> Iterator[None]:
    """``acquire`` as a context; an exclusive lock is re-entrant for the thread holding
    it (a save that prunes, an upgrade that indexes, all under one lock)."""
    key, me = path.absolute(), threading.get_ident()
    with _held_guard:
        holder = _held.get(key)
        if not shared and holder is not None and holder[0] == me:
            _held[key] = (me, holder[1] + 1)
            again = True
        else:
            again = False
    if again:
        try:
            yield
        finally:
            with _held_guard:
                _held[key] = (me, _held[key][1] - 1)
        return
    fd = acquire(path, shared=shared, wait=wait, timeout=timeout)
    if not shared:
        with _held_guard:
            _held[key] = (me, 1)
    try:
        yield
    finally:
        if not shared:
            with _held_guard:
                del _held[key]
        os.close(fd)


def fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


FILE_MODE = 0o600  # the databases feedsync creates, and so their journals


def new_private_file(path: Path) -> None:
    """An empty file at ``path``, readable by its owner only, for SQLite to fill (it
    gives a database's journal, WAL and -shm the database's own mode). SQLite would
    create it 0644 under the usual umask 022 of a shell or cron: every local user could
    read every article and feed. Nothing may be at ``path`` (a stale temporary is
    removed by the caller first)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    os.close(fd)


def uri(path: Path, mode: str) -> str:
    """A URI for sqlite3 (``uri=True``) opening ``path`` in ``mode`` (ro, rw, rwc)."""
    return f"file:{quote(str(path.absolute()))}?mode={mode}"


def open_read_only(path: Path) -> sqlite3.Connection:
    # immutable: no locks, no -shm, no journal: nothing is written beside the file
    return sqlite3.connect(uri(path, "ro") + "&immutable=1", uri=True)


def read_meta(conn: sqlite3.Connection, schema: str = "main") -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute(f"SELECT key, value FROM {schema}.meta")}


def file_meta(path: Path) -> dict[str, str] | None:
    """The meta table of a database file, or None when it cannot be read."""
    try:
        conn = open_read_only(path)
        try:
            return read_meta(conn)
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def require_file(path: Path, key: str) -> None:
    """A path that holds something else (a directory) is a configuration problem, not a
    damaged database: say so, and touch nothing."""
    if path.exists() and not path.is_file():
        raise StorageError(f"the {key} path {path} is not a file: check [storage] {key}")


def roll_back(path: Path) -> None:
    """A save cut by a power failure leaves its journal beside the card database (a "hot"
    journal): the first connection that may write puts the file back as it was before
    that save. Done here, under the card's lock, before anything reads it read-only (a
    read-only connection cannot, and would fail)."""
    if not any(s.exists() for s in sidecars(path)):
        return
    with contextlib.suppress(sqlite3.Error):  # problem_of says what is wrong with it
        _open_and_read(path, "rw")


def _open_and_read(path: Path, mode: str) -> None:
    """Open the database in ``mode`` and read its schema: what makes SQLite roll back a
    hot journal (``rw``), or refuse a file it cannot read as it is (``ro``)."""
    conn = sqlite3.connect(uri(path, mode), uri=True, timeout=busy.BUSY_TIMEOUT_S)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    finally:
        conn.close()


def readable_as_it_is(path: Path) -> None:
    """On a read-only card: a save cut by a power failure or by the errors that made
    the kernel remount the card left its journal, which cannot be rolled back there;
    SQLite then refuses to read the file, rightly (half a save is not a database).
    Say so in one line instead of failing later on every read."""
    try:
        _open_and_read(path, "ro")
    except sqlite3.Error as exc:
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_READONLY_ROLLBACK":
            raise CardReadOnly(
                f"the card database {path} holds an unfinished save ({path.name}-journal) "
                "that cannot be rolled back on a read-only file system: remount the card "
                "read-write (after checking it) and run feedsync again"
            ) from None
        raise StorageError(f"cannot read the card database {path}: {exc}") from None


def problem_of(path: Path) -> str | None:
    """None when ``path`` opens as a feedsync database whose small tables pass SQLite's
    check, else what is wrong (one line). The articles are not read: on a card of
    years, that would take minutes at every boot; damage there shows when it is read."""
    try:
        conn = open_read_only(path)
        try:
            if not conn.execute(queries()["is_feedsync_database"]).fetchone():
                return "not a feedsync database"
            present = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
            for table in ("meta", "feeds", "hosts"):
                if table not in present:  # a database from before it (upgraded next)
                    continue
                rows = [str(r[0]) for r in conn.execute(f"PRAGMA quick_check({table})")]
                if rows != ["ok"]:
                    return "quick_check: " + "; ".join(rows[:3])
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return str(exc)
    return None


def set_aside_file(path: Path, why: str, notice: Notice) -> Path:
    aside = path.with_name(f"{path.name}.{why}-{time.strftime('%Y%m%dT%H%M%S')}")
    path.replace(aside)
    for sidecar in sidecars(path):
        if sidecar.exists():
            sidecar.replace(aside.with_name(aside.name + sidecar.name[len(path.name) :]))
    fsync(path.parent, directory=True)
    return aside


def set_aside_damaged(path: Path) -> tuple[Path, bool]:
    """A damaged live database out of the way, kept for its owner to look into, as
    ``<path>.damaged``, with its WAL (or journal) beside it under that name, where
    SQLite looks for it when the copy is opened, if it holds anything; the -shm (an
    index SQLite rebuilds) is removed. One copy only: the RAM disk is small (/run is
    10% of RAM), so the one set aside before is replaced (the second item says so).
    Renamed, never copied: setting aside takes no room."""
    aside = path.with_name(path.name + ".damaged")
    replaced = aside.exists()
    remove_database(aside)
    path.replace(aside)
    for sidecar in sidecars(path):
        try:
            keep = not sidecar.name.endswith("-shm") and sidecar.stat().st_size > 0
        except FileNotFoundError:
            continue
        if keep:
            sidecar.replace(aside.with_name(aside.name + sidecar.name[len(path.name) :]))
        else:
            sidecar.unlink(missing_ok=True)
    fsync(path.parent, directory=True)
    return aside, replaced


def remove_database(path: Path) -> None:
    for file in (path, *sidecars(path)):
        file.unlink(missing_ok=True)


def beside(path: Path, tag: str) -> Path:
    """Where a database that will replace ``path`` is written first: a hidden name in
    the same folder (a rename within it is atomic), this process's own."""
    return path.with_name(f".{path.name}.{tag}-{os.getpid()}")


@contextlib.contextmanager
def fresh_database(path: Path) -> Iterator[sqlite3.Connection]:
    """A new, empty, private database at ``path`` (what a crash left there removed
    first), open in autocommit mode, closed on the way out. The caller renames it into
    place, or removes it on an error."""
    remove_database(path)
    new_private_file(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def set_aside(path: Path, notice: Notice) -> Path:
    """``--force`` over a card of another database or copy: keep it, under another name."""
    with file_lock(lock_path(path)):
        aside = set_aside_file(path, "replaced", notice)
    notice(f"the card database {path} was set aside as {aside}")
    return aside
