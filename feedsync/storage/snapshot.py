"""What touches the SD card: consistent snapshots of the live database, and their restore.

The live SQLite database sits on tmpfs (RAM): polling and extraction never write to the
card. The card holds snapshots, written so that a power cut at any instant leaves a
complete one under the snapshot's name:

1. ``VACUUM INTO`` a temporary file beside the snapshot: a consistent, compacted copy of
   the live database, taken while writers go on (WAL), in rollback-journal mode, so
   opening a snapshot never creates ``-wal``/``-shm`` files on the card;
2. stamp it (sequence number, time), ``PRAGMA quick_check`` it, ``fsync`` it;
3. hard-link the current snapshot to ``<name>.prev`` (the previous good one stays until
   the next snapshot, and longer if the new one turns out damaged);
4. ``rename`` the temporary file over the snapshot (atomic), ``fsync`` the directory.

A snapshot is skipped when nothing worth keeping changed since the last one (the
``content_version`` counter kept by triggers, see sql/migrations/0002_snapshot_meta.sql),
so a day of polls that all answer 304 writes nothing to the card. A file lock
(``<name>.lock``) serialises snapshot writers and restorers across processes. A snapshot is
never overwritten by a database that is not a copy of it (``lineage``), nor by a stale copy
(``snapshot_seq``), unless forced.

On open, a missing live database is restored from the snapshot (``PRAGMA
integrity_check`` first); a damaged snapshot is set aside as ``<name>.corrupt-<time>`` with
a message, and ``<name>.prev`` is used instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

from feedsync.records import SnapshotResult
from feedsync.storage import StorageError
from feedsync.storage.sqlfiles import queries
from feedsync.timestamps import now, to_iso

# A snapshot writer holds the lock for seconds; waiting longer means something is stuck.
LOCK_TIMEOUT_S = 300.0

Notice = Callable[[str], None]


class SnapshotRefused(StorageError):
    """Writing or restoring would lose data; ``--force`` overrides."""


def prev_path(snapshot: Path) -> Path:
    return snapshot.with_name(snapshot.name + ".prev")


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def sidecars(db: Path) -> list[Path]:
    """The files SQLite keeps beside a database."""
    return [db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def acquire(
    path: Path, *, shared: bool = False, wait: bool = True, timeout: float = LOCK_TIMEOUT_S
) -> int:
    """flock(2) on ``path`` (created if needed); returns the fd that holds it (close it to
    release). Raises StorageError when the lock cannot be had."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, mode)
            return fd
        except BlockingIOError:
            if not wait or time.monotonic() > deadline:
                os.close(fd)
                raise StorageError(
                    f"{path} is held by another feedsync process"
                    + ("" if wait else " (stop it first, e.g. the feedsync service)")
                ) from None
            time.sleep(0.05)


@contextlib.contextmanager
def file_lock(
    path: Path, *, shared: bool = False, wait: bool = True, timeout: float = LOCK_TIMEOUT_S
) -> Iterator[None]:
    fd = acquire(path, shared=shared, wait=wait, timeout=timeout)
    try:
        yield
    finally:
        os.close(fd)


def _open_read_only(path: Path) -> sqlite3.Connection:
    # immutable: no locks, no -shm, no journal: nothing is written beside a snapshot
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro&immutable=1", uri=True)


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute(queries()["meta_read"])}


def snapshot_meta(path: Path) -> dict[str, str] | None:
    """The meta of a snapshot file, or None when it cannot be read."""
    try:
        conn = _open_read_only(path)
        try:
            return read_meta(conn)
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def integrity_problem(path: Path) -> str | None:
    """None when ``path`` is a sound feedsync database, else what is wrong (one line)."""
    try:
        conn = _open_read_only(path)
        try:
            rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
            if rows != ["ok"]:
                return "integrity_check: " + "; ".join(rows[:3])
            if not conn.execute(queries()["is_feedsync_database"]).fetchone():
                return "not a feedsync database"
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return str(exc)
    return None


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fold_wal(path: Path) -> None:
    """A snapshot path holding a database that was used live (a -wal beside it, as the
    first feedsync versions left it): fold the WAL in so the file alone is complete."""
    if not path.with_name(path.name + "-wal").exists():
        return
    try:
        conn = sqlite3.connect(path)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("PRAGMA journal_mode = DELETE")
        finally:
            conn.close()
    except sqlite3.Error:
        pass  # integrity_problem will say what is wrong with it


def _set_aside(path: Path, problem: str, notice: Notice) -> None:
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
    path.replace(aside)
    _fsync(path.parent, directory=True)
    notice(f"snapshot {path} is damaged ({problem}); set aside as {aside}")


def _require_file(path: Path) -> None:
    """A snapshot path that holds something else (a directory) is a configuration problem,
    not a damaged snapshot: say so, and touch nothing."""
    if path.exists() and not path.is_file():
        raise StorageError(f"the snapshot path {path} is not a file: check [storage] snapshot")


def _usable_snapshot(snapshot: Path, notice: Notice) -> Path | None:
    """The newest sound snapshot (the snapshot, else its .prev); damaged ones set aside."""
    for candidate in (snapshot, prev_path(snapshot)):
        _require_file(candidate)
        if not candidate.exists():
            continue
        _fold_wal(candidate)
        problem = integrity_problem(candidate)
        if problem is None:
            return candidate
        _set_aside(candidate, problem, notice)
    return None


def _copy_into_place(source: Path, live: Path) -> None:
    """Copy a snapshot to the live path, without the leases it carries: whoever held
    them worked on a live database that is gone (a reboot emptied the tmpfs, or
    `feedsync restore` replaced it with every other process stopped), so their rows must
    be claimable at once, not after the leases expire."""
    for stale in sidecars(live):  # a WAL of another database must never meet this one
        stale.unlink(missing_ok=True)
    temporary = live.with_name(f".{live.name}.restore-{os.getpid()}")
    shutil.copyfile(source, temporary)
    conn = sqlite3.connect(temporary, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.execute(queries()["restore_free_entries"])
        conn.execute(queries()["restore_free_feeds"])
        conn.execute("COMMIT")
    finally:
        conn.close()
    temporary.replace(live)


def restore_if_missing(live: Path, snapshot: Path, notice: Notice) -> None:
    """Before the live database is opened: bring the snapshot back when it is missing
    (after a reboot emptied the tmpfs). A live database that exists is used as it is."""
    if live.exists():
        return
    with file_lock(lock_path(snapshot)):
        if live.exists():  # another process restored it while we waited
            return
        had_snapshot = snapshot.exists() or prev_path(snapshot).exists()
        source = _usable_snapshot(snapshot, notice)
        if source is None:
            if had_snapshot:
                notice(
                    f"no usable snapshot of {live}: starting with an empty database "
                    "(the damaged files are kept beside the snapshot)"
                )
            return
        _copy_into_place(source, live)
        meta = snapshot_meta(source) or {}
        notice(f"restored {live} from {source} (snapshot of {meta.get('snapshot_at') or '?'})")


def take(
    conn: sqlite3.Connection,
    snapshot: Path,
    record: Callable[[dict[str, str]], None],
    *,
    force: bool = False,
) -> SnapshotResult:
    """Write a snapshot of the database behind ``conn`` to ``snapshot``.

    ``record`` stores the new snapshot's facts in the live database (in a write
    transaction of the caller's). Raises SnapshotRefused, or StorageError on I/O trouble;
    the previous snapshot is intact either way.
    """
    started = time.monotonic()
    _require_file(snapshot)
    with file_lock(lock_path(snapshot)):
        live = read_meta(conn)
        seq = int(live["snapshot_seq"])
        target = snapshot_meta(snapshot) if snapshot.exists() else None
        if target is not None and not force:
            if target.get("lineage") != live["lineage"]:
                raise SnapshotRefused(
                    f"{snapshot} holds another database (not a copy of this one): refusing "
                    "to overwrite it; move it away, or use --force"
                )
            if int(target.get("snapshot_seq", "0")) > seq:
                raise SnapshotRefused(
                    f"{snapshot} was written by another copy of this database after this one "
                    "was restored from it: refusing to overwrite it; use --force to keep this one"
                )
            if (
                int(target.get("snapshot_seq", "0")) == seq
                and live["content_version"] == live["snapshot_content_version"]
            ):
                return SnapshotResult(
                    False,
                    str(snapshot),
                    snapshot.stat().st_size,
                    live["snapshot_at"],
                    time.monotonic() - started,
                    "unchanged since the last snapshot",
                )
        for leftover in snapshot.parent.glob(f".{snapshot.name}.tmp-*"):
            leftover.unlink(missing_ok=True)  # from a writer that was killed
        temporary = snapshot.with_name(f".{snapshot.name}.tmp-{os.getpid()}")
        taken_at = to_iso(now())
        try:
            conn.execute(queries()["snapshot_copy"], {"path": str(temporary)})
            copy = sqlite3.connect(temporary, isolation_level=None)
            try:
                # The temporary file is thrown away on any failure, so its stamping needs
                # no journal (which would be one more write to the card); it is fsynced
                # below, before it takes the snapshot's name.
                copy.execute("PRAGMA journal_mode = OFF")
                copy.execute("PRAGMA synchronous = OFF")
                captured = read_meta(copy)["content_version"]
                copy.execute("BEGIN")
                for key, value in (
                    ("snapshot_seq", str(seq + 1)),
                    ("snapshot_content_version", captured),
                    ("snapshot_at", taken_at),
                ):
                    copy.execute(queries()["snapshot_stamp"], {"key": key, "value": value})
                copy.execute("COMMIT")
                check = copy.execute("PRAGMA quick_check").fetchone()[0]
            finally:
                copy.close()
            if check != "ok":
                raise StorageError(f"the new snapshot failed its check ({check})")
            _fsync(temporary)
            if target is not None:  # keep the current one as .prev (a readable one only)
                previous = prev_path(snapshot)
                previous.unlink(missing_ok=True)
                try:
                    previous.hardlink_to(snapshot)
                except OSError:  # a file system without hard links
                    shutil.copyfile(snapshot, previous)
                    _fsync(previous)
            temporary.replace(snapshot)
            _fsync(snapshot.parent, directory=True)
        except (OSError, sqlite3.Error) as exc:
            temporary.unlink(missing_ok=True)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise StorageError(f"cannot write the snapshot {snapshot}: {reason}") from None
        record(
            {
                "snapshot_seq": str(seq + 1),
                "snapshot_content_version": captured,
                "snapshot_at": taken_at,
            }
        )
        return SnapshotResult(
            True,
            str(snapshot),
            snapshot.stat().st_size,
            taken_at,
            time.monotonic() - started,
            "written",
        )


def restore(live: Path, snapshot: Path, *, force: bool, notice: Notice) -> Path:
    """``feedsync restore``: put the snapshot back as the live database.

    Refuses while another feedsync process has the live database open, and (without
    ``force``) when the live database holds changes that no snapshot has, or is another
    database altogether. A live database replaced by force is kept as
    ``<live>.before-restore``. Returns the snapshot file used.
    """
    with file_lock(lock_path(live), wait=False), file_lock(lock_path(snapshot)):
        source = _usable_snapshot(snapshot, notice)
        if source is None:
            raise StorageError(f"no usable snapshot at {snapshot} (nor {prev_path(snapshot)})")
        if live.exists():
            saved = snapshot_meta(source) or {}
            conn = sqlite3.connect(live)
            try:
                current = read_meta(conn)
                if not force:
                    _refuse_overwrite(live, source, current, saved)
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                if not force:
                    raise StorageError(
                        f"cannot read {live} ({exc}); use --force to replace it anyway"
                    ) from None
            finally:
                conn.close()
            kept = live.with_name(live.name + ".before-restore")
            live.replace(kept)
            for stale in sidecars(live):
                stale.unlink(missing_ok=True)
            notice(f"the live database was kept as {kept}")
        _copy_into_place(source, live)
        return source


def _refuse_overwrite(
    live: Path, source: Path, current: dict[str, str], saved: dict[str, str]
) -> None:
    if current.get("lineage") != saved.get("lineage"):
        raise SnapshotRefused(
            f"{live} is not a copy of {source}: refusing to replace it "
            "(--force replaces it, keeping it as .before-restore)"
        )
    unsaved = int(current["content_version"]) - int(current["snapshot_content_version"])
    if unsaved > 0 or int(current["snapshot_seq"]) > int(saved.get("snapshot_seq", "0")):
        raise SnapshotRefused(
            f"{live} is newer than {source} ({max(unsaved, 0)} changes not in any snapshot): "
            "'feedsync snapshot' saves them; --force replaces it (kept as .before-restore)"
        )
