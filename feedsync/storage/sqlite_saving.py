"""SQLite: saving to the card, and retention. A save writes what changed since the last
one to the card database (feedsync/storage/card.py does the writing), then lets go of
what the card now holds, so the RAM disk holds days, not years; retention drops old
months on the card. Part of :class:`feedsync.storage.sqlite.SQLiteStorage`.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

from feedsync import clock, heap, timestamps
from feedsync.clock import Sync
from feedsync.config import StorageConfig
from feedsync.records import (
    SnapshotResult,
)
from feedsync.storage import budget, card_files, card_upgrade
from feedsync.storage import card as cards
from feedsync.storage.base import SQLStorage
from feedsync.storage.interface import Keep
from feedsync.storage_errors import CardReadOnly, StorageFull

T = TypeVar("T")

# Retention runs at a save when it last ran this long ago (the daemon also runs it daily):
# `feedsync run` from cron prunes too.
RETENTION_EVERY = timedelta(hours=20)


class SQLiteSaving(SQLStorage):
    """The saving and retention of :class:`feedsync.storage.sqlite.SQLiteStorage`, which
    sets these attributes and supplies the methods declared here without a body."""

    _conn: sqlite3.Connection
    _q: dict[str, str]
    _keep: Keep
    _card: cards.Card | None
    _wal_pages: int
    config: StorageConfig
    path: Path
    card_path: Path
    clock: Callable[[], datetime]
    sync: Callable[[], Sync]

    def _retry(self, work: Callable[[], T]) -> T:
        raise NotImplementedError

    def _neutral(self, conn: sqlite3.Connection, action: Callable[[], object]) -> None:
        raise NotImplementedError

    def _card_budget(self) -> budget.Budget:
        raise NotImplementedError

    def _check_card_file(self) -> None:
        raise NotImplementedError

    def _reattach(self) -> None:
        raise NotImplementedError

    def _writable_card(self, what: str) -> None:
        """Before anything writes the card: a read-only card is said in one line, before
        a lock file or a journal fails to be created on it with a less useful reason."""
        read_only = card_files.why_read_only(self.card_path)
        if read_only is not None:
            raise CardReadOnly(f"{what}: {read_only}")

    def _card_db(self) -> cards.Card:
        if self._card is None:
            self._card = cards.Card(self.card_path, self.path)
        return self._card

    def save(self, *, force: bool = False) -> SnapshotResult:
        """Write to the card what changed since the last save (nothing when nothing
        worth keeping did; ``force``: anyway, and over a card of another database, which
        is set aside), then let go of what the card now holds. Raises StorageFull when
        the card has no room even after retention, SnapshotRefused for another
        database's card, CardReadOnly when the card's file system is read-only (what
        changed stays in RAM: the pass goes on as far as the RAM budget allows)."""
        self._writable_card("not saved")
        started = time.monotonic()
        now = self.clock()
        self._check_card_file()
        moving = budget.files_size(self.path, *card_files.sidecars(self.path))
        trouble = budget.save_room(moving, self._card_budget())
        if trouble is not None:
            waits = self._retention(now, due_only=False)
            trouble = budget.save_room(moving, self._card_budget())
            if trouble is not None and waits is not None:
                trouble += f"; retention waits: the clock is {waits}"
        if trouble is not None:
            raise StorageFull(f"not saved to the card: {trouble}")
        try:
            saved = self._card_db().save(timestamps.to_iso(now), force=force)
        except card_files.SnapshotRefused:
            if not force:
                raise
            self._replace_card(now)
            saved = self._card_db().save(timestamps.to_iso(now), force=True)
        meta = self._meta()
        record = {
            "snapshot_seq": str(saved.seq),
            "snapshot_content_version": saved.captured,
            "snapshot_at": saved.at,
        }
        adopted = any(meta.get(k) != v for k, v in record.items())
        if adopted:
            self._record_snapshot(record)
        if saved.written or adopted:
            self._evict(now)
        self._retention(now, due_only=True)
        # the save's transient memory (journal pages, FTS5 merges, sorts) back to the
        # system, not stranded in the heap: a daemon's RSS stays flat (feedsync.heap)
        heap.give_back()
        return SnapshotResult(
            saved.written,
            str(self.card_path),
            budget.files_size(self.card_path),
            saved.at,
            time.monotonic() - started,
            saved.detail,
        )

    def _replace_card(self, now: datetime) -> None:
        """``--force`` over another database's card: it is set aside, a new one begun."""
        if self._card is not None:
            self._card.close()
            self._card = None
        card_files.set_aside(self.card_path, lambda _said: None)  # the caller says it
        lineage = self._meta()["lineage"]
        with card_files.file_lock(card_files.lock_path(self.card_path)):
            card_upgrade.create(self.card_path, lineage, timestamps.to_iso(now))
        self._reattach()

    def _evict(self, now: datetime) -> None:
        """What the card now holds leaves the RAM disk: articles (all but the newest),
        entries that are settled and older than the days kept, their links."""
        keep_since = timestamps.to_iso(now - self._keep.live)

        def work(conn: sqlite3.Connection) -> None:
            self._neutral(
                conn,
                lambda: (
                    conn.execute(self._q["live_evict_articles"]),
                    conn.execute(self._q["live_evict_entries"], {"keep_since": keep_since}),
                    conn.execute(self._q["live_evict_links"]),
                ),
            )

        self._write(work)
        self._give_back_freed_pages()

    def _give_back_freed_pages(self) -> None:
        """The pages an eviction freed go back to the RAM disk, half a WAL's worth at a
        time. ``incremental_vacuum`` moves every page it keeps through the WAL: in one
        step (40 articles evicted: ~700 KB) the WAL grew as large as what was freed, on
        top of the file not yet shrunk, past a small RAM budget. Each step is folded
        back into the file (checkpoint, WAL truncated) before the next. (executescript:
        the pragma frees one page per step of its statement, a plain execute steps once.)"""
        step = max(1, self._wal_pages // 2)
        free = int(self._conn.execute("PRAGMA main.freelist_count").fetchone()[0])
        while free > 0:
            self._retry(
                lambda: self._conn.executescript(f"PRAGMA main.incremental_vacuum({step});")
            )
            self._retry(
                lambda: self._conn.execute("PRAGMA main.wal_checkpoint(TRUNCATE)").fetchall()
            )
            left = int(self._conn.execute("PRAGMA main.freelist_count").fetchone()[0])
            if left >= free:  # nothing moved (a reader holds the file): the next save
                break
            free = left

    def _retention(self, now: datetime, *, due_only: bool) -> str | None:
        """[retention] on the card, when it last ran RETENTION_EVERY ago (``due_only``),
        or now (the card needs room). A last run later than now was timed by a clock
        ahead of this one (or this one stepped back since): it says nothing of when
        retention is due. Only on a clock feedsync believes (clock.judge): else it
        waits, and returns why (None: it ran, or was not due). Before it prunes, the
        articles fetched under a clock it could not believe take now as their fetch
        time (:meth:`clock_settle`)."""
        if due_only:
            last = self._meta().get("retention_at", "")
            moment = timestamps.to_iso(now)
            if last and timestamps.to_iso(now - RETENTION_EVERY) < last <= clock.horizon(moment):
                return None
        verdict = clock.judge(now, self.newest_poll(), self.sync())
        if not verdict.believed:
            return f"{verdict.state}: {verdict.why}"
        self.clock_settle(timestamps.to_iso(now))
        keep = self._keep

        def before(days: int) -> str | None:
            return timestamps.to_iso(now - timedelta(days=days)) if days else None

        self.prune(before(keep.news_days), before(keep.tombstone_days))
        self._write(
            lambda conn: self._exec(
                conn, "meta_set", key="retention_at", value=timestamps.to_iso(now)
            )
        )
        return None

    def clock_settle(self, now: str) -> int:
        """On the card first (where retention judges), then the live database's copies;
        the mark is on either side (a save carries the live database's to the card)."""
        self._writable_card("not settled")
        marks = [m for m in (self.clock_suspect_from(), self._card_db().suspect_from()) if m]
        if not marks:
            return 0
        first = min(int(m) for m in marks)
        settled = self._card_db().settle(first, now)

        def work(conn: sqlite3.Connection) -> set[int]:
            rows = self._exec(conn, "clock_settle_news", now=now, first_id=first).fetchall()
            self._exec(conn, "clock_suspect_clear")
            return {int(row["id"]) for row in rows}

        return len(settled | self._write(work))

    def prune(
        self, news_before: str | None, tombstones_before: str | None, batch: int = 500
    ) -> tuple[int, int]:
        """Retention: on the card, a month of articles goes once all of it is older than
        ``news_before``, then the entries of articles gone older than
        ``tombstones_before``; the live database lets go of its copies. CardReadOnly on a
        read-only card (nothing can be removed from it)."""
        self._writable_card("retention skipped")
        pruned = self._card_db().prune(news_before, tombstones_before, batch)

        def work(conn: sqlite3.Connection) -> None:
            articles = json.dumps(pruned.articles)
            entries = json.dumps(pruned.entries)

            def forget() -> None:
                conn.execute(self._q["live_forget_duplicates"], {"ids": articles})
                conn.execute(self._q["live_forget_articles"], {"ids": articles})
                conn.execute(self._q["live_forget_links"], {"ids": entries})
                conn.execute(self._q["live_forget_revisions"], {"ids": entries})
                conn.execute(self._q["live_forget_entries"], {"ids": entries})

            self._neutral(conn, forget)

        if pruned.articles or pruned.entries:
            self._write(work)
        # here, where every retention ends (the daemon's daily job, a save's, `run`'s):
        # what it freed (a month's table and index dropped, the ids listed) back to the
        # system (feedsync.heap). Not SQLite's page caches (PRAGMA shrink_memory): they
        # fill again within the hour, and the churn left the process ~2 MB larger
        heap.give_back()
        return len(pruned.articles), len(pruned.entries)
