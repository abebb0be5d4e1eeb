"""The SQLite backend: the live database on the RAM disk, everything on the card.

Two files with one schema (sql/card.sql draws the split): the live database
(``StorageConfig.live_path``, WAL, on tmpfs on a Pi) takes every write of the pipeline;
the card database (``StorageConfig.card_path``) holds everything as of the last save,
and is attached read-only to this connection as ``card``. Reads see both through the
``*_all`` views (the live row wins where both hold one); deduplication spans both, so an
entry seen years ago is never staged again. :meth:`SQLiteStorage.save` writes what
changed to the card (:mod:`feedsync.storage.card`) and then lets go of what the card now
holds, so the RAM disk holds days, not years.

The RAM budget (:mod:`feedsync.storage.budget`) is watched after every write that grows
the live database: past half of it, a save moves what it can to the card at once; when
even that leaves it nearly full (the card is full or missing, or the queue alone is too
big), no new entries are taken (``StorageFull``) until there is room again, while saves
and reads go on.

Several processes share the files: writers coordinate through SQLite itself
(:mod:`feedsync.storage.busy`), savers through the card's lock; the schema is applied
and migrated inside one such transaction, so two processes starting at once on an empty
file apply it once. Foreign keys are not enforced on SQLite (links and references point
from the live database into the card's rows): what they would do on delete is done by
the queries that delete.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from feedsync import clock as clock_module
from feedsync import timestamps
from feedsync.config import StorageConfig
from feedsync.records import (
    STAGED,
    Article,
    HostNote,
    LinkedEntry,
    PollIntent,
    PollRecord,
    StorageStatus,
)
from feedsync.storage import budget, busy, card_files, card_restore
from feedsync.storage import card as cards
from feedsync.storage import search as fulltext
from feedsync.storage.folders import check_directory
from feedsync.storage.interface import Keep
from feedsync.storage.sqlfiles import migrate_sqlite, queries, split_statements
from feedsync.storage.sqlite_reading import SQLiteReading
from feedsync.storage.sqlite_saving import SQLiteSaving
from feedsync.storage.sqlite_staging import SQLiteStaging
from feedsync.storage_errors import StorageDamaged, StorageError, StorageFull

T = TypeVar("T")

# After a save that spilled (the RAM budget's half reached), the next spill waits until
# the live database has grown by this share of the budget again: a live database that
# cannot shrink (a queue too big, a card that refuses) is not saved after every write.
SPILL_STEP = 0.1


def _ignore(message: str) -> None:
    pass


def _saved_at(card: Path) -> str | None:
    """When the card database was last saved to, as it says (None: unreadable, or no
    card)."""
    return (card_files.file_meta(card) or {}).get("snapshot_at")


class SQLiteStorage(SQLiteStaging, SQLiteSaving, SQLiteReading):
    """:class:`feedsync.storage.Storage` on the live database and the card database."""

    def __init__(self, conn: sqlite3.Connection, config: StorageConfig, keep: Keep, in_use: int):
        self._conn = conn
        self._q = queries()
        self._in_use = in_use  # fd holding a shared lock: `feedsync restore` waits for us
        self.config = config
        self.path = config.live_path
        self.card_path = config.card_path
        self.location = str(self.card_path)
        self._keep = keep
        self._card: cards.Card | None = None
        self._tokenizer: fulltext.Tokenizer | None = None
        self._matches_registered = False
        self._spill_above = 0  # live bytes past which the next spill may happen
        self._wal_pages = 50  # set from the RAM budget when the database is opened
        # what time it is for saves, months and retention (a bench simulating a year
        # sets its own clock)
        self.clock: Callable[[], datetime] = timestamps.now
        # what the system says of that clock (feedsync/clock.py): retention waits for one
        # it may believe
        self.sync: Callable[[], clock_module.Sync] = clock_module.system_synchronization
        self._notice: card_files.Notice = _ignore
        self._card_file: tuple[int, int] | None = None  # (device, inode) attached

    # ------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        config: StorageConfig | Path,
        notice: card_files.Notice = _ignore,
        keep: Keep | None = None,
        *,
        new_card: bool = False,
        clock: Callable[[], datetime] = timestamps.now,
    ) -> SQLiteStorage:
        """Open the live database, building it from the card database when it is missing
        (a reboot emptied the RAM disk) or damaged (set aside first); create, or upgrade,
        the card database first when needed. A path alone is a database on a disk
        (``[storage] db`` and no card).
        ``notice`` hears what a user should know (a restore, an upgrade, a damaged card
        set aside); ``new_card``: a card database that is missing may be started anew
        (``feedsync save --force``); ``clock``: what time it is (the storage's
        :attr:`clock`)."""
        if isinstance(config, Path):
            config = StorageConfig(db=config, card=None)
        keep = keep or Keep()
        live = config.live_path
        check_directory(live.parent, notice)
        check_directory(config.card_path.parent, notice)
        now = clock()
        in_use = -1
        since = now
        if now < clock_module.EARLIEST:  # a clock that cannot be right (1970, at boot)
            since = clock_module.at_least(now, _saved_at(config.card_path))
        try:
            card_restore.prepare(
                live,
                config.card_path,
                timestamps.to_iso(now),
                timestamps.to_iso(since - keep.live),
                notice,
                new_card=new_card,
                on_card=config.card is not None,
            )
            # Taken once the live database is ready, not before: a process holding it
            # has the file open, so a damaged live database is set aside only when no
            # process holds it (card_restore._rebuild_damaged), and two processes
            # starting together, one waiting on the card's lock, do not count each other.
            # `feedsync restore` that slips in between rebuilds it whole, and this waits.
            in_use = card_files.acquire(card_files.lock_path(live), shared=True)
            conn = sqlite3.connect(
                card_files.uri(live, "rw"),
                uri=True,
                timeout=busy.BUSY_TIMEOUT_S,
                isolation_level=None,  # we say BEGIN IMMEDIATE / COMMIT ourselves
                check_same_thread=False,  # used from one thread at a time (the pipeline lane)
            )
        except (sqlite3.Error, OSError) as exc:
            if in_use >= 0:
                os.close(in_use)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise StorageError(f"cannot open {live}: {reason}") from None
        except BaseException:
            if in_use >= 0:
                os.close(in_use)
            raise
        conn.row_factory = sqlite3.Row
        storage = cls(conn, config, keep, in_use)
        storage.clock = clock
        storage._notice = notice
        try:
            storage._retry(storage._configure)
            storage._retry(lambda: migrate_sqlite(conn, str(live)))
            storage._retry(storage._attach)
        except BaseException:
            storage.close()
            raise
        return storage

    def _configure(self) -> None:
        conn = self._conn
        conn.execute("PRAGMA foreign_keys = OFF")  # see the module's docstring
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StorageError(f"{self.path}: cannot switch to WAL mode (got {mode!r})")
        # Durability comes from saves to the card, not from fsync on every commit (the
        # live database sits on tmpfs); NORMAL in WAL mode still never corrupts.
        conn.execute("PRAGMA synchronous = NORMAL")
        # Sorts and temporary tables in RAM: SQLite's temp files would otherwise go to
        # /var/tmp or /tmp, which on a Pi is the SD card.
        conn.execute("PRAGMA temp_store = MEMORY")
        # The WAL is folded back, and cut, at a size the RAM budget allows.
        pages = budget.wal_pages(self._ram().budget)
        self._wal_pages = pages
        conn.execute(f"PRAGMA wal_autocheckpoint = {pages:d}")
        conn.execute(f"PRAGMA journal_size_limit = {pages * 4096:d}")

    def _attach(self) -> None:
        self._attach_card_only()
        for name in ("live_indexes", "live_views"):
            for statement in split_statements(self._q[name]):
                self._conn.execute(statement)
        self._write(self._settle)

    def _settle(self, conn: sqlite3.Connection) -> None:
        """The live database holds the newest entry and article ids (SQLite hands out
        max(id) + 1: an id the card holds must never come again), and an id of its own
        (which card saves name)."""
        row = conn.execute(self._q["live_newest"]).fetchone()
        newest = card_restore.newest_article(conn, "card")

        def bring() -> None:
            if row["card_entry"] is not None and (row["live_entry"] or 0) < row["card_entry"]:
                conn.execute(self._q["live_pull_entry"], {"id": row["card_entry"]})
            if newest is not None and (row["live_article"] or 0) < newest:
                conn.execute(self._q["live_pull_article"], {"id": newest})

        self._neutral(conn, bring)
        if not conn.execute("SELECT 1 FROM main.meta WHERE key = 'live_id'").fetchone():
            conn.execute(self._q["meta_set"], {"key": "live_id", "value": os.urandom(8).hex()})

    def _reattach(self) -> None:
        """After the card database was replaced (``--force``): this connection's view of
        it follows."""
        self._retry(lambda: self._conn.execute("DETACH card"))
        self._retry(self._attach_card_only)

    def _attach_card_only(self) -> None:
        self._conn.execute("ATTACH ? AS card", (card_files.uri(self.card_path, "ro"),))
        info = self.card_path.stat()
        self._card_file = (info.st_dev, info.st_ino)

    def _check_card_file(self) -> None:
        """Before a save: the card database is still the file this process opened. A
        directory there is refused; another file is reopened (and its lineage checked by
        the save); a card database removed while feedsync ran is written again from the
        copy this process still has open, so the removal loses nothing."""
        try:
            info = self.card_path.stat()
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise StorageError(
                f"the card path {self.card_path} is not a file: check [storage] card"
            )
        if info is not None and (info.st_dev, info.st_ino) == self._card_file:
            return
        if self._card is not None:
            self._card.close()
            self._card = None
        if info is None:
            with card_files.file_lock(card_files.lock_path(self.card_path)):
                if not self.card_path.exists():
                    card_restore.copy_attached(self._conn, "card", self.card_path)
                    self._notice(
                        f"the card database {self.card_path} was removed while feedsync "
                        "ran: written again from the copy still open"
                    )
        self._reattach()

    def close(self) -> None:
        if self._card is not None:
            self._card.close()
            self._card = None
        if self._tokenizer is not None:
            self._tokenizer.close()
            self._tokenizer = None
        self._conn.close()
        if self._in_use >= 0:
            os.close(self._in_use)
            self._in_use = -1

    # ------------------------------------------------------------ transactions

    def _retry(self, work: Callable[[], T]) -> T:
        try:
            return busy.retrying(work, str(self.path))
        except StorageDamaged as exc:  # deep in the file: checked whole at the next start
            raise card_restore.suspect(self.path, exc) from None

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        self.writes += 1
        try:
            return busy.write(self._conn, work, str(self.path))
        except StorageDamaged as exc:
            raise card_restore.suspect(self.path, exc) from None

    def _read(self, name: str, **params: Any) -> list[sqlite3.Row]:
        return self._retry(lambda: self._conn.execute(self._q[name], params).fetchall())

    def _exec(self, conn: sqlite3.Connection, name: str, **params: Any) -> sqlite3.Cursor:
        return conn.execute(self._q[name], params)

    def _exec_tuples(self, conn: sqlite3.Connection, name: str, **params: Any) -> sqlite3.Cursor:
        cursor = conn.cursor()
        cursor.row_factory = None
        return cursor.execute(self._q[name], params)

    def _neutral(self, conn: sqlite3.Connection, action: Callable[[], object]) -> None:
        """``action`` moves rows between the files; it changes no content, so the counter
        that says "something worth saving changed" is put back as it was."""
        version = conn.execute(self._q["live_content_version"]).fetchone()["version"]
        action()
        conn.execute(self._q["live_set_content_version"], {"version": str(version)})

    def _pull_entry(self, conn: sqlite3.Connection, summary_id: int) -> None:
        self._neutral(conn, lambda: conn.execute(self._q["live_pull_entry"], {"id": summary_id}))

    def _pull_article_of(self, conn: sqlite3.Connection, summary_id: int) -> None:
        self._neutral(
            conn,
            lambda: conn.execute(self._q["live_pull_article_of"], {"summary_id": summary_id}),
        )

    # ------------------------------------------------------------ the RAM budget

    def _ram(self) -> budget.Budget:
        disk = budget.disk_of(self.path)
        used = budget.files_size(self.path, *card_files.sidecars(self.path))
        return budget.Budget(used, budget.ram_budget(self.config.ram_budget, disk), disk)

    def _card_budget(self) -> budget.Budget:
        disk = budget.disk_of(self.card_path)
        used = budget.files_size(self.card_path, *card_files.sidecars(self.card_path))
        return budget.Budget(used, budget.card_budget(self.config.card_budget, used, disk), disk)

    def _grown(self) -> None:
        """After a write that grows the live database: past half the RAM budget, save to
        the card now (at most once per SPILL_STEP of the budget grown since)."""
        ram = self._ram()
        if budget.should_spill(ram) and ram.used > self._spill_above:
            with contextlib.suppress(StorageError):  # said by the next save, and `status`
                self.save()
            after = self._ram()
            self._spill_above = after.used + int(SPILL_STEP * after.budget)

    def room_for_entries(self) -> str | None:
        """Why the RAM disk cannot take new entries now, a save to the card having been
        tried first to make room (None: it can)."""
        reason = budget.ram_full(self._ram())
        if reason is not None:
            with contextlib.suppress(StorageError):
                self.save()
            reason = budget.ram_full(self._ram())
        return None if reason is None else f"not taking new entries: {reason}"

    def record_polls(self, polls: Sequence[tuple[PollIntent, HostNote]]) -> list[PollRecord]:
        """No new entries when the RAM disk has no room for them (StorageFull: the whole
        group is refused; polled again alone, only the polls that bring entries are)."""
        bringing = any(intent.outcome == STAGED and intent.entries for intent, _ in polls)
        if bringing:
            full = self.room_for_entries()
            if full is not None:
                raise StorageFull(full)
        result = super().record_polls(polls)
        if bringing:
            self._grown()
        return result

    def save_article(
        self,
        job_id: int,
        article: Article,
        published: str | None,
        fetched_at: str,
        window_start: str | None = None,
    ) -> LinkedEntry | None:
        result = super().save_article(job_id, article, published, fetched_at, window_start)
        self._grown()
        return result

    # ------------------------------------------------------------ status

    def status(self) -> StorageStatus:
        meta = self._meta()
        ram = self._ram()
        card = self._card_budget()
        nearly: list[str] = []
        if ram.nearly_full:
            nearly.append(
                f"RAM disk: the live database takes {ram.used / 1e6:.1f} MB of its "
                f"{ram.budget / 1e6:.1f} MB budget, {ram.disk.free / 1e6:.1f} MB free of "
                f"{ram.disk.size / 1e6:.1f} MB"
            )
        put_off = budget.save_room(ram.used, card)
        if put_off is not None:
            nearly.append(f"card: saving is put off: {put_off}")
        elif card.nearly_full:
            nearly.append(
                f"card: the database takes {card.used / 1e6:.1f} MB of its "
                f"{card.budget / 1e6:.1f} MB budget, {card.disk.free / 1e6:.1f} MB free of "
                f"{card.disk.size / 1e6:.1f} MB"
            )
        card_meta = {str(r["key"]): str(r["value"]) for r in self._read("live_card_meta")}
        unsaved, behind = card_restore.what_is_unsaved(meta, card_meta)
        return StorageStatus(
            engine="sqlite",
            live=str(self.path),
            live_bytes=ram.used,
            snapshot=str(self.card_path),
            snapshot_bytes=card.used,
            # the card's own time: a card begun anew was never saved, whatever the notes say
            snapshot_at=(card_meta.get("snapshot_at") or None)
            if int(card_meta.get("snapshot_seq", "0"))
            else None,
            unsaved_changes=unsaved,
            ram_budget=ram.budget,
            ram_disk_size=ram.disk.size,
            ram_disk_free=ram.disk.free,
            card_budget=card.budget,
            card_disk_size=card.disk.size,
            card_disk_free=card.disk.free,
            nearly_full=tuple(nearly),
            not_taking=budget.ram_full(ram),
            card_read_only=card_files.why_read_only(self.card_path),
            card_behind=behind,
        )
