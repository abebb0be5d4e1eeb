"""The card database: everything feedsync keeps, on the SD card, and all that writes it.

SD cards wear out with writes and corrupt files when the power goes mid-write, and the
RAM disk is small; so the SQLite backend keeps two files with one schema (sql/card.sql
says which rows live where):

- the **live database** on the RAM disk (``[storage] db``): the feeds, the extraction
  queue, the entries of the last days, and what changed since the last save;
- the **card database** (``[storage] card``): everything, as of the last save. It is
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

What writes the card, by file: this module (:class:`Card`: save, index, prune),
``card_files.py`` (locks, fsync, checks, setting a file aside), ``card_layout.py`` (the
month tables and their view), ``card_upgrade.py`` (creating a card, upgrading an old
database) and ``card_restore.py`` (the live database from the card).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from feedsync.clock import EARLIEST, SLACK
from feedsync.storage import busy, search
from feedsync.storage.card_files import SnapshotRefused, file_lock, lock_path, read_meta, uri
from feedsync.storage.card_layout import (
    configure_card,
    ensure_month,
    is_card,
    month_names,
    month_of,
    rebuild_view,
    run_script,
    sql,
    to_card_layout,
)
from feedsync.storage.sqlfiles import migrate_sqlite, queries
from feedsync.storage_errors import StorageError
from feedsync.timestamps import from_iso, to_iso

# Search indexing: a save indexes a month's new articles once this many wait, or once
# the oldest has waited INDEX_AGE_S; a search scans the ones not indexed yet.
INDEX_BATCH = 500


INDEX_AGE_S = 20 * 3600


INDEX_CHUNK = 2000  # at most this many a month per save (an upgrade indexes them all)
# meta: the first article id fetched under a clock feedsync could not believe, until
# retention settles it (sql/meta.sql: clock_suspect)
SUSPECT = "clock_suspect_from"
# ... and the newest time stored when the clock was found wrong, which a clock must pass
# before it settles them (sql/meta.sql: clock_suspect_until); back to RAM with a restore
SUSPECT_UNTIL = "clock_suspect_until"


class Saved(NamedTuple):
    """What a save did."""

    written: bool
    seq: int  # the card's save number now
    captured: str  # the live database's content version the card now holds
    at: str  # when the card was last written ('' if never)
    articles: int  # articles written now
    indexed: int  # articles added to the search index now
    detail: str


class Pruned(NamedTuple):
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
            busy.retrying(lambda: configure_card(self._conn), str(path))
            self._conn.execute("PRAGMA temp_store = MEMORY")
            if live is not None:
                self._conn.execute("ATTACH ? AS live", (uri(live, "ro"),))
        except BaseException:
            self._conn.close()
            raise

    def close(self) -> None:
        self._conn.close()

    def to_this_layout(self, now: str) -> int | None:
        """This feedsync's schema (its migrations) and the card layout, each in one
        transaction: how many articles were filed by month (None: it had the layout)."""
        migrate_sqlite(self._conn, str(self.path))
        if is_card(self._conn):
            return None
        return int(busy.write(self._conn, lambda c: to_card_layout(c, now), str(self.path)))

    def _write(self, work: Callable[[sqlite3.Connection], object]) -> object:
        """``work`` in one write transaction on the card; if it changed anything (a row,
        a table: a save, retention, a clock settled), a new random ``card_mark`` in the
        card's meta, in the same transaction: the card's part of the storage's
        content_key (sql/news.sql). Random, not counted: a card begun anew must not
        repeat a mark an older one had. A save that found nothing to write leaves it."""

        def marked(conn: sqlite3.Connection) -> object:
            before = (conn.total_changes, _schema_version(conn))
            result = work(conn)
            if (conn.total_changes, _schema_version(conn)) != before:
                conn.execute(
                    queries()["meta_set"], {"key": "card_mark", "value": os.urandom(8).hex()}
                )
            return result

        return busy.write(self._conn, marked, f"the card database {self.path}")

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
                if live.get("daemon_started_at", "") != card.get("daemon_started_at", ""):
                    _daemon_heartbeat(conn, live)  # once per daemon start, nothing else
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
            _daemon_heartbeat(conn, live)
            # articles saved now that were fetched under a clock feedsync could not
            # believe: the mark goes with them, for retention on the card (Card.settle)
            suspect = [v for v in (live.get(SUSPECT), card.get(SUSPECT)) if v]
            if suspect:
                first = str(min(int(v) for v in suspect))
                conn.execute(q["meta_set"], {"key": SUSPECT, "value": first})
            until = [v for v in (live.get(SUSPECT_UNTIL), card.get(SUSPECT_UNTIL)) if v]
            if until:
                conn.execute(q["meta_set"], {"key": SUSPECT_UNTIL, "value": max(until)})
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
        months = month_names(conn)
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
        # must not revive a month that retention dropped; nor one before feedsync
        # existed: a save at 1970 (a Pi's clock before NTP) made news_1970_01
        target = max([month_of(now), *months[-1:], month_of(to_iso(EARLIEST))])
        ensure_month(conn, target)
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
        for month in month_names(conn):
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

    def suspect_from(self) -> int | None:
        """The first article id the card holds that was fetched under a clock feedsync
        could not believe, not settled yet (None: none)."""
        value = read_meta(self._conn).get(SUSPECT)
        return int(value) if value else None

    def settle(self, first: int, now: str) -> set[int]:
        """The articles from id ``first`` on take ``now`` (a clock feedsync believes) as
        their fetch time, in the months that hold them, and the card's mark goes: one
        transaction. Returns the ids that took it."""

        def work(conn: sqlite3.Connection) -> set[int]:
            settled: set[int] = set()
            for month in month_names(conn):  # a range of each month's rowids: cheap
                rows = conn.execute(
                    sql("card_month_settle", month), {"first_id": first, "now": now}
                ).fetchall()
                settled.update(int(row[0]) for row in rows)
            conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (SUSPECT, SUSPECT_UNTIL))
            return settled

        with file_lock(lock_path(self.path)):
            result = self._write(work)
        assert isinstance(result, set)
        return result

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
            for month in month_names(self._conn)[:-1] if news_before is not None else []:
                span = self._conn.execute(sql("card_month_span", month)).fetchone()
                if span["articles"] and span["newest"] >= news_before:
                    continue

                def drop(conn: sqlite3.Connection, month: str = month) -> list[int]:
                    ids = [int(r[0]) for r in conn.execute(f"SELECT id FROM news_{month}")]
                    conn.execute(sql("card_month_unlink", month))
                    run_script(conn, sql("card_month_drop", month))
                    conn.execute("DELETE FROM meta WHERE key = ?", (f"search_indexed_{month}",))
                    rebuild_view(conn)
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
        return month_names(self._conn)

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
    """How long ago ``iso`` was, by ``now``; one later than now (saved by a clock ahead
    of this one, or this one stepped back since) has waited for as long as anything: it
    would otherwise wait for the clock to catch up."""
    try:
        age = (from_iso(now) - from_iso(iso)).total_seconds()
    except ValueError:
        return 0.0
    return age if age >= -SLACK.total_seconds() else float("inf")


def _daemon_heartbeat(conn: sqlite3.Connection, live: dict[str, str]) -> None:
    """The daemon's last heartbeat (its pid, host, start, last seen) onto the card, with
    a save, and at a save with nothing else to write when a daemon started since the
    last: after a reboot (the live database restored from the card) ``status`` says when
    it was last seen, not "never started here"."""
    for key, value in live.items():
        if key.startswith("daemon_"):
            conn.execute(queries()["meta_set"], {"key": key, "value": value})


def _schema_version(conn: sqlite3.Connection) -> int:
    """The card's schema cookie: moves when a month's table is made or dropped."""
    return int(conn.execute("PRAGMA main.schema_version").fetchone()[0])
