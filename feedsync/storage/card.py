"""The card database: everything feedsync keeps, on the SD card, and all that writes it.

SD cards wear out with writes and corrupt files when the power goes mid-write, and the
RAM disk is small; so the SQLite backend keeps two files with one schema (sql/card.sql
says which rows live where):

- the **live database** on the RAM disk (``[storage] db``): the feeds, the extraction
  queue, the entries of the last days, and what changed since the last save;
- the **card database** (``[storage] snapshot``): everything, as of the last save. It is
  a complete, consistent SQLite database at every instant, which ``sqlite3`` and
  datasette open, which a backup copies, and which a power cut leaves.

A **save** (:meth:`Card.save`) is one transaction on the card, in its rollback journal:
the feeds and entries that differ from the card's, the new links, the new articles into
the current month's table (``news_YYYY_MM``; ``news`` on the card is a view over them),
then the live database's counters. SQLite's journal makes it atomic on the card, and the
card is written in appends: bytes per save follow the news, not the archive. After a
save the live database lets go of what the card now holds
(:meth:`feedsync.storage.sqlite.SQLiteStorage.save`), so the RAM disk holds days, not
years. Retention drops a month's table (:meth:`Card.prune`), which writes next to
nothing. The search index of a month is filled in batches (:meth:`Card.index`), so that
no merge rewrites what the card already holds.

**Restoring** (:func:`restore_live`): when the live database is missing (a reboot
emptied the RAM disk), a new one is built from the card: feeds, queue, the last days'
entries, the newest rows. A power cut therefore loses what changed since the last save,
which the next polls bring back.

**Upgrading** (:func:`prepare`): a card database from before version 7 (a whole-file
snapshot, or a database used directly on a disk) is migrated and turned into the card
layout in place, once, in one transaction.

Locks: ``<card>.lock`` (flock) serialises savers, restorers and upgraders across
processes; every open database holds a shared flock on ``<live>.lock``, so ``feedsync
restore`` (exclusive) never swaps the live file under a running process. A card of
another database (``lineage``), or one written by another copy of this one after it was
restored from it, is never written over without ``--force`` (which sets it aside).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from feedsync.storage import CardReadOnly, StorageError, budget, busy, search, sqlfiles
from feedsync.storage.sqlfiles import migrate_sqlite, queries, split_statements
from feedsync.terminal import plural, short_time
from feedsync.timestamps import from_iso

# A saver or restorer holds the card's lock for seconds; waiting longer means trouble.
LOCK_TIMEOUT_S = 300.0
# Search indexing: a save indexes a month's new articles once this many wait, or once
# the oldest has waited INDEX_AGE_S; a search scans the ones not indexed yet.
INDEX_BATCH = 500
INDEX_AGE_S = 20 * 3600
INDEX_CHUNK = 2000  # at most this many a month per save (an upgrade indexes them all)

Notice = Callable[[str], None]
_MONTH = re.compile(r"^\d{4}_\d{2}$")


class SnapshotRefused(StorageError):
    """Writing or restoring would lose data; ``--force`` overrides."""


# ---------------------------------------------------------------- files and locks


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
                raise StorageError(
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


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


FILE_MODE = 0o600  # the databases feedsync creates, and so their journals


def _new_private_file(path: Path) -> None:
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


def _open_read_only(path: Path) -> sqlite3.Connection:
    # immutable: no locks, no -shm, no journal: nothing is written beside the file
    return sqlite3.connect(uri(path, "ro") + "&immutable=1", uri=True)


def read_meta(conn: sqlite3.Connection, schema: str = "main") -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute(f"SELECT key, value FROM {schema}.meta")}


def file_meta(path: Path) -> dict[str, str] | None:
    """The meta table of a database file, or None when it cannot be read."""
    try:
        conn = _open_read_only(path)
        try:
            return read_meta(conn)
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def _require_file(path: Path, key: str) -> None:
    """A path that holds something else (a directory) is a configuration problem, not a
    damaged database: say so, and touch nothing."""
    if path.exists() and not path.is_file():
        raise StorageError(f"the {key} path {path} is not a file: check [storage] {key}")


def _roll_back(path: Path) -> None:
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


def _readable_as_it_is(path: Path) -> None:
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
        conn = _open_read_only(path)
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


def _set_aside(path: Path, why: str, notice: Notice) -> Path:
    aside = path.with_name(f"{path.name}.{why}-{time.strftime('%Y%m%dT%H%M%S')}")
    path.replace(aside)
    for sidecar in sidecars(path):
        if sidecar.exists():
            sidecar.replace(aside.with_name(aside.name + sidecar.name[len(path.name) :]))
    _fsync(path.parent, directory=True)
    return aside


def _configure_card(conn: sqlite3.Connection, schema: str = "main") -> None:
    """How the card is written: a rollback journal (readers open the file alone, no
    -wal or -shm beside it), fsync at commit (a power cut leaves the last save or the
    one before, whole), and freed pages not zeroed: Debian builds SQLite with
    SECURE_DELETE on, which rewrites every page a deletion frees, on a card."""
    mode = conn.execute(f"PRAGMA {schema}.journal_mode = DELETE").fetchone()[0]
    if str(mode).lower() != "delete":
        raise StorageError(f"cannot put the card database in rollback-journal mode ({mode})")
    conn.execute(f"PRAGMA {schema}.synchronous = FULL")
    conn.execute(f"PRAGMA {schema}.secure_delete = OFF")


def _months(conn: sqlite3.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute(queries()["card_months"])]


def month_of(iso: str) -> str:
    """'2026-11-23T...' -> '2026_11'."""
    return iso[:7].replace("-", "_")


def sql(name: str, month: str = "", arms: str = "") -> str:
    """A named template of sql/card.sql with its month (checked) or arms filled in."""
    text = queries()[name]
    if "{month}" in text:
        if not _MONTH.match(month):
            raise ValueError(f"not a month: {month!r}")
        text = text.replace("{month}", month)
    return text.replace("{arms}", arms)


def _run_script(conn: sqlite3.Connection, text: str) -> None:
    for statement in split_statements(text):
        conn.execute(statement)


def _rebuild_view(conn: sqlite3.Connection) -> None:
    """The card's `news` view over every month's table."""
    months = _months(conn)
    conn.execute(sql("card_drop_news_view"))
    conn.execute(
        sql("card_news_view", arms=" UNION ALL ".join(f"SELECT * FROM news_{m}" for m in months))
    )


def _ensure_month(conn: sqlite3.Connection, month: str) -> None:
    if month not in _months(conn):
        _run_script(conn, sql("card_month_create", month))
        _rebuild_view(conn)


def _next_month(dashed: str) -> str:
    year, month = int(dashed[:4]), int(dashed[5:7])
    return f"{year + month // 12:04d}-{month % 12 + 1:02d}"


def _to_card_layout(conn: sqlite3.Connection, now: str) -> int:
    """Inside a transaction: the `news` table of a database (empty, or a whole archive)
    into one table per month of fetching and the `news` view. An article whose fetch
    time is no month (a clock gone wrong) goes to the current month: none is left
    behind (counted before the table is dropped). Returns the articles moved."""
    total = conn.execute("SELECT count(*) FROM news").fetchone()[0]
    moved = 0
    current = month_of(now)
    filed: list[str] = []
    for (dashed,) in conn.execute(sql("card_table_months")).fetchall():
        month = str(dashed or "").replace("-", "_")
        if not _MONTH.match(month) or month > current:
            continue
        _ensure_table(conn, month)
        moved += conn.execute(
            sql("card_move_table_rows", month),
            {"start": dashed, "end": _next_month(str(dashed))},
        ).rowcount
        filed.append(str(dashed))
    _ensure_table(conn, current)
    if moved < total:
        moved += conn.execute(
            sql("card_move_table_rest", current), {"moved": json.dumps(filed)}
        ).rowcount
    if moved != total:
        raise StorageError(f"moving the articles by month moved {moved} of {total}")
    conn.execute(sql("card_drop_news_table"))
    _rebuild_view(conn)
    return moved


def _ensure_table(conn: sqlite3.Connection, month: str) -> None:
    if month not in _months(conn):
        _run_script(conn, sql("card_month_create", month))


def _is_card(conn: sqlite3.Connection) -> bool:
    return conn.execute(sql("card_is_card")).fetchone() is not None


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


# ---------------------------------------------------------------- the card, open


@dataclass(frozen=True)
class Saved:
    """What a save did."""

    written: bool
    seq: int  # the card's save number now
    captured: str  # the live database's content version the card now holds
    at: str  # when the card was last written ('' if never)
    articles: int  # articles written now
    indexed: int  # articles added to the search index now
    detail: str


@dataclass(frozen=True)
class Pruned:
    """What retention removed from the card (the live database drops its copies)."""

    articles: list[int]
    entries: list[int]


class Card:
    """A connection to the card database, the live database attached read-only as
    ``live``: the one place that writes the card."""

    def __init__(self, path: Path, live: Path | None):
        self.path = path
        try:
            self._conn = sqlite3.connect(
                uri(path, "rw"),
                uri=True,
                timeout=busy.BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the card database {path}: {exc}") from None
        self._conn.row_factory = sqlite3.Row
        try:
            busy.retrying(lambda: _configure_card(self._conn), str(path))
            self._conn.execute("PRAGMA temp_store = MEMORY")
            if live is not None:
                self._conn.execute("ATTACH ? AS live", (uri(live, "ro"),))
        except BaseException:
            self._conn.close()
            raise

    def close(self) -> None:
        self._conn.close()

    def _write(self, work: Callable[[sqlite3.Connection], object]) -> object:
        return busy.write(self._conn, work, f"the card database {self.path}")

    # ------------------------------------------------------------ saving

    def save(self, now: str, *, force: bool = False) -> Saved:
        """Write what the live database holds and the card does not (or holds otherwise)
        in one transaction. Raises SnapshotRefused when the card belongs to another
        database or another copy of this one wrote it since (``force``: the caller sets
        such a card aside first)."""

        def work(conn: sqlite3.Connection) -> Saved:
            live = {str(r["key"]): str(r["value"]) for r in conn.execute(sql("card_live_meta"))}
            card = read_meta(conn)
            seq = int(live.get("snapshot_seq", "0"))
            card_seq = int(card.get("snapshot_seq", "0"))
            if card.get("lineage") != live.get("lineage"):
                raise SnapshotRefused(
                    f"{self.path} holds another database (not a copy of this one): refusing "
                    "to write to it; move it away, or use --force to set it aside"
                )
            if card_seq > seq:
                if card.get("saved_from") != live.get("live_id"):
                    raise SnapshotRefused(
                        f"{self.path} was written by another copy of this database after this "
                        "one was restored from it: refusing to write to it; use --force to "
                        "set it aside and keep this one"
                    )
                seq = card_seq  # this database's own save, whose bookkeeping was lost
                live["snapshot_content_version"] = card.get("snapshot_content_version", "-1")
            elif card_seq < seq:
                # The card lacks saves this live database made to it (begun anew after a
                # damaged one was set aside, or an older copy put back): what it holds is
                # what it says it holds, and the rest is written now, not "unchanged".
                live["snapshot_content_version"] = card.get("snapshot_content_version", "-1")
            if not force and live["content_version"] == live["snapshot_content_version"]:
                return Saved(
                    False, seq, live["content_version"], card.get("snapshot_at", ""), 0, 0,
                    "unchanged since the last save",
                )  # fmt: skip
            q = queries()
            conn.execute(q["card_save_feeds"])
            for row in conn.execute(q["card_removed_feeds"]).fetchall():
                # the same deletes as `feedsync remove`'s, on the card (main) this time; no
                # feed_id index there (links are appended by entry): a scan, which a
                # removal can afford
                conn.execute(q["feed_delete_links"], {"id": row["id"]})
                conn.execute(q["feed_delete"], {"id": row["id"]})
            conn.execute(q["card_save_entries"])
            conn.execute(q["card_save_links"])
            articles = self._save_articles(conn, now)
            conn.execute(q["card_save_hosts_gone"])
            conn.execute(q["card_save_hosts"])
            indexed = self._index(conn, now, everything=False)
            for key, value in (
                ("snapshot_seq", str(seq + 1)),
                ("snapshot_content_version", live["content_version"]),
                ("snapshot_at", now),
                ("saved_from", live.get("live_id", "")),
            ):
                conn.execute(q["meta_set"], {"key": key, "value": value})
            return Saved(True, seq + 1, live["content_version"], now, articles, indexed, "written")

        with file_lock(lock_path(self.path)):
            result = self._write(work)
        assert isinstance(result, Saved)
        return result

    def _save_articles(self, conn: sqlite3.Connection, now: str) -> int:
        """New articles into the current month's table; changed ones where they are
        (their search index entry updated, if they have one)."""
        ids = [int(r["id"]) for r in conn.execute(sql("card_changed_articles"))]
        if not ids:
            return 0
        months = _months(conn)
        left = set(ids)
        for month in reversed(months):
            held = conn.execute(
                sql("card_articles_in", month), {"ids": json.dumps(sorted(left))}
            ).fetchall()
            if not held:
                continue
            mark = self._watermark(conn, month)
            indexed = [r for r in held if r["id"] <= mark]
            for row in indexed:
                conn.execute(sql("card_unindex_article", month), _index_row(row))
            conn.execute(
                sql("card_save_articles", month), {"ids": json.dumps([r["id"] for r in held])}
            )
            if indexed:
                again = json.dumps([r["id"] for r in indexed])
                for row in conn.execute(sql("card_articles_in", month), {"ids": again}):
                    conn.execute(sql("card_index_article", month), _index_row(row))
            left -= {int(r["id"]) for r in held}
            if not left:
                return len(ids)
        # never an older month than the newest: a clock that stepped back after a save
        # must not revive a month that retention dropped
        target = max([month_of(now), *months[-1:]])
        _ensure_month(conn, target)
        conn.execute(sql("card_save_articles", target), {"ids": json.dumps(sorted(left))})
        return len(ids)

    # ------------------------------------------------------------ the search index

    @staticmethod
    def _watermark(conn: sqlite3.Connection, month: str) -> int:
        row = conn.execute(
            "SELECT value FROM meta WHERE key = ?", (f"search_indexed_{month}",)
        ).fetchone()
        return int(row[0]) if row else 0

    def _index(self, conn: sqlite3.Connection, now: str, *, everything: bool) -> int:
        """Inside a transaction: index the months' new articles where it is due (enough
        of them, or waiting long enough), at most INDEX_CHUNK a month per save so that no
        save holds the card for long (``everything``: all of them)."""
        done = 0
        for month in _months(conn):
            mark = self._watermark(conn, month)
            row = conn.execute(sql("card_unindexed_count", month), {"after": mark}).fetchone()
            if not row["n"]:
                continue
            waited = row["oldest"] is not None and _age_s(row["oldest"], now) >= INDEX_AGE_S
            if not (everything or row["n"] >= INDEX_BATCH or waited):
                continue
            while True:
                rows = conn.execute(
                    sql("card_unindexed", month), {"after": mark, "limit": INDEX_CHUNK}
                ).fetchall()
                for article in rows:
                    conn.execute(sql("card_index_article", month), _index_row(article))
                if rows:
                    mark = int(rows[-1]["id"])
                    done += len(rows)
                if len(rows) < INDEX_CHUNK or not everything:
                    break
            conn.execute(
                queries()["meta_set"], {"key": f"search_indexed_{month}", "value": str(mark)}
            )
        return done

    def index_all(self, now: str) -> int:
        """Every article not in the search index yet (after an upgrade)."""
        with file_lock(lock_path(self.path)):
            result = self._write(lambda conn: self._index(conn, now, everything=True))
        assert isinstance(result, int)
        return result

    # ------------------------------------------------------------ retention

    def prune(
        self, news_before: str | None, tombstones_before: str | None, batch: int = 500
    ) -> Pruned:
        """Retention on the card: a month's table goes once its newest article is older
        than ``news_before`` (never the newest month: new articles go there); then the
        entries of the articles gone, dated and older than ``tombstones_before``, a
        batch at a time. None: keep."""
        articles: list[int] = []
        entries: list[int] = []
        with file_lock(lock_path(self.path)):
            for month in _months(self._conn)[:-1] if news_before is not None else []:
                span = self._conn.execute(sql("card_month_span", month)).fetchone()
                if span["articles"] and span["newest"] >= news_before:
                    continue

                def drop(conn: sqlite3.Connection, month: str = month) -> list[int]:
                    ids = [int(r[0]) for r in conn.execute(f"SELECT id FROM news_{month}")]
                    conn.execute(sql("card_month_unlink", month))
                    _run_script(conn, sql("card_month_drop", month))
                    conn.execute("DELETE FROM meta WHERE key = ?", (f"search_indexed_{month}",))
                    _rebuild_view(conn)
                    return ids

                gone = self._write(drop)
                assert isinstance(gone, list)
                articles += gone
            while tombstones_before is not None:
                found = self._write(lambda conn: _forget(conn, tombstones_before, batch))
                assert isinstance(found, list)
                entries += found
                if len(found) < batch:
                    break
        return Pruned(articles, entries)

    # ------------------------------------------------------------ figures

    def months(self) -> list[str]:
        return _months(self._conn)

    def unindexed(self) -> dict[str, int]:
        """Per month, the id after which its articles are not in the search index."""
        return {m: self._watermark(self._conn, m) for m in self.months()}


def _forget(conn: sqlite3.Connection, before: str, batch: int) -> list[int]:
    q = queries()
    ids = [
        int(r["id"]) for r in conn.execute(q["card_tombstones"], {"before": before, "limit": batch})
    ]
    if ids:
        listed = json.dumps(ids)
        for name in ("card_forget_entries", "card_forget_revisions", "card_forget_rows"):
            conn.execute(q[name], {"ids": listed})
    return ids


def _index_row(row: sqlite3.Row) -> dict[str, object]:
    return {
        "id": row["id"],
        "title": search.index_text(row["title"]),
        "body": search.index_text(row["body"]),
    }


def _age_s(iso: str, now: str) -> float:
    try:
        return (from_iso(now) - from_iso(iso)).total_seconds()
    except ValueError:
        return 0.0


# ---------------------------------------------------------------- creating, upgrading


def create(path: Path, lineage: str | None, now: str) -> None:
    """A new card database at ``path`` (nothing there), of ``lineage`` (None: a new
    database's own), written beside it and renamed into place."""
    temporary = path.with_name(f".{path.name}.new-{os.getpid()}")
    _remove_database(temporary)
    try:
        _new_private_file(temporary)
        conn = sqlite3.connect(temporary, isolation_level=None)
        try:
            migrate_sqlite(conn, str(path))
            busy.write(conn, lambda c: _to_card_layout(c, now), str(path))
            if lineage is not None:
                with conn:
                    conn.execute(queries()["meta_set"], {"key": "lineage", "value": lineage})
        finally:
            conn.close()
        _fsync(temporary)
        _orphans_aside(path)
        temporary.replace(path)
        _fsync(path.parent, directory=True)
    except (OSError, sqlite3.Error) as exc:
        _remove_database(temporary)
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
    conn = _open_read_only(path)
    try:
        version = _version(conn)
        sqlfiles.steps_to_apply(sqlfiles.schema_steps(), version, str(path))
        return version < sqlfiles.schema_steps()[-1][0] or not _is_card(conn)
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
    size = budget.files_size(path, *sidecars(path))
    room = budget.disk_of(path).free
    if room < size + budget.SAVE_MARGIN:
        raise StorageError(
            f"cannot upgrade {path}: it needs about {size / 1e6:.0f} MB free beside it, the "
            f"file system has {room / 1e6:.0f} MB"
        )
    notice(f"upgrading {path} to schema {sqlfiles.schema_steps()[-1][0]} (the card layout); once")
    card = Card(path, None)  # checkpoints a WAL and leaves the rollback journal
    try:
        conn = card._conn
        migrate_sqlite(conn, str(path))
        if not _is_card(conn):
            moved = busy.write(conn, lambda c: _to_card_layout(c, now), str(path))
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
    room = budget.disk_of(path).free
    if room < size + budget.SAVE_MARGIN:
        raise StorageError(
            f"cannot save {live} to {path} before upgrading: it needs about "
            f"{size / 1e6:.0f} MB on the card, which has {room / 1e6:.0f} MB free"
        )
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temporary.unlink(missing_ok=True)
    try:
        _new_private_file(temporary)  # VACUUM INTO fills an empty file
        conn = sqlite3.connect(live)
        try:
            conn.execute("VACUUM INTO ?", (str(temporary),))
        finally:
            conn.close()
        _fsync(temporary)
        temporary.replace(path)
        _fsync(path.parent, directory=True)
    except (OSError, sqlite3.Error) as exc:
        temporary.unlink(missing_ok=True)
        raise StorageError(f"cannot save {live} to {path}: {exc}") from None


# ---------------------------------------------------------------- the live side from the card


def _live_state(live: Path) -> tuple[int, dict[str, str]] | None:
    """(schema version, meta) of a live database file, None when there is none."""
    if not live.exists():
        return None
    try:
        conn = sqlite3.connect(uri(live, "ro"), uri=True)
        try:
            return _version(conn), read_meta(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read {live}: {exc}") from None


def _remove_database(path: Path) -> None:
    for file in (path, *sidecars(path)):
        file.unlink(missing_ok=True)


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
    _require_file(path, "snapshot" if on_card else "db")
    _require_file(live, "db")
    read_only = why_read_only(path)
    with file_lock(lock_path(path)):
        if path.exists():
            _roll_back(path)
            if read_only is not None:
                _readable_as_it_is(path)
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
                aside = _set_aside(path, "corrupt", notice)
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
            _remove_database(live)  # everything it held is on the card now
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
    temporary = live.with_name(f".{live.name}.restore-{os.getpid()}")
    _remove_database(temporary)
    try:
        _new_private_file(temporary)
        conn = sqlite3.connect(temporary, isolation_level=None)
        try:
            # the pages a save frees go back to the RAM disk (PRAGMA incremental_vacuum)
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            migrate_sqlite(conn, str(live))
            conn.execute("ATTACH ? AS card", (uri(path, "ro"),))
            busy.write(conn, lambda c: _copy_hot(c, keep_since), str(live))
            conn.execute("DETACH card")
        finally:
            conn.close()
        temporary.replace(live)
    except sqlite3.Error as exc:
        _remove_database(temporary)
        if busy.is_full(exc):
            raise StorageError(
                f"cannot restore {live} from {path}: the RAM disk is full ({exc})"
            ) from None
        raise StorageError(f"cannot restore {live} from {path}: {exc}") from None
    except BaseException:
        _remove_database(temporary)
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
        ("live_id", secrets.token_hex(8)),
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
        _new_private_file(temporary)  # VACUUM INTO fills an empty file
        busy.retrying(lambda: conn.execute(f"VACUUM {schema} INTO ?", (str(temporary),)), str(path))
        _fsync(temporary)
        temporary.replace(path)
        _fsync(path.parent, directory=True)
    except (OSError, StorageError):
        temporary.unlink(missing_ok=True)
        raise


def set_aside(path: Path, notice: Notice) -> Path:
    """``--force`` over a card of another database or copy: keep it, under another name."""
    with file_lock(lock_path(path)):
        aside = _set_aside(path, "replaced", notice)
    notice(f"the card database {path} was set aside as {aside}")
    return aside


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
        _roll_back(path)
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
        if _MONTH.match(m)
    ]
    values = [int(v) for v in found if v is not None]
    return max(values) if values else None


def month_tables(conn: sqlite3.Connection) -> Sequence[str]:
    """The month tables of a card database open on ``conn`` (for feedsync migrate)."""
    return [f"news_{m}" for m in _months(conn)]
