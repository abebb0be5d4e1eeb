"""``feedsync migrate --to postgresql://...``: moving up from one Pi's SQLite database.

The SQLite database is the card database (it holds everything; the command saves the
live database to it first), or a copy of it; it is read inside ONE read transaction,
so what is copied is one consistent state even if a process writes to it meanwhile;
what changes after that state is not carried over (rows are copied once, by key: an
update to a copied row is not), so feedsync is stopped first (README). Each table goes
over in key order, in batches of a few thousand rows, each batch one transaction on the
server; rows keep their ids, so every link and reference stays true. The order follows
the references: feeds, entries, links, articles (the card's months merged by id), then
the entries' duplicate_of (it points into news).

Resumable and idempotent: before each table the copy asks the server for the highest
key it already has and reads on from there (the batches commit in key order), and every
insert is ``ON CONFLICT DO NOTHING``; so a copy killed at any instant resumes where it
stopped, and running it again copies nothing. A target that holds another database's
rows is refused (the source's lineage is recorded in the target's meta table). At the
end the row counts of both sides are compared, and the identities continue after the
highest ids copied. The SQL is in sql/migrate.sql (read) and sql/postgresql/migrate.sql
(write).
"""

from __future__ import annotations

import heapq
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from feedsync.storage import StorageError, card_layout
from feedsync.storage.postgresql import PostgreSQLStorage
from feedsync.storage.sqlfiles import queries, schema_steps

BATCH = 5000
TABLES = ("feeds", "news_summary", "feed_entries", "news", "hosts")


@dataclass
class MigrateResult:
    source: dict[str, int]  # rows per table in the SQLite database
    target: dict[str, int]  # ... and in PostgreSQL at the end
    copied: dict[str, int] = field(default_factory=dict)  # by this run
    seconds: float = 0.0

    @property
    def equal(self) -> bool:
        return self.source == self.target


# (table, reading query, writing query, how the last key copied is found in watermarks)
Step = tuple[str, str, str, Callable[[dict[str, Any]], dict[str, Any]]]
STEPS: tuple[Step, ...] = (
    ("feeds", "migrate_read_feeds", "migrate_write_feeds", lambda w: {"after": w["feeds"]}),
    (
        "news_summary",
        "migrate_read_news_summary",
        "migrate_write_news_summary",
        lambda w: {"after": w["news_summary"]},
    ),
    (
        "feed_entries",
        "migrate_read_feed_entries",
        "migrate_write_feed_entries",
        lambda w: {"after_summary": w["entries_summary"], "after_feed": w["entries_feed"]},
    ),
    ("news", "", "migrate_write_news", lambda w: {"after": w["news"]}),
)


def _next_key(table: str, row: sqlite3.Row) -> dict[str, Any]:
    if table == "feed_entries":
        return {"after_summary": row["summary_id"], "after_feed": row["feed_id"]}
    return {"after": row["id"]}


def open_source(path: Path) -> sqlite3.Connection:
    """The SQLite database, read-only, checked to be feedsync's at the newest schema."""
    if not path.is_file():
        raise StorageError(f"no SQLite database at {path}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        conn.row_factory = sqlite3.Row
        version = conn.execute(queries()["migrate_source_version"]).fetchone()[0]
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read {path}: {exc}") from None
    newest = schema_steps()[-1][0]
    if version != newest:
        conn.close()
        raise StorageError(
            f"{path} has schema version {version}, this feedsync copies version {newest}: "
            + (
                "open it once with this feedsync first (feedsync status)"
                if version < newest
                else "upgrade feedsync"
            )
        )
    if not card_layout.month_tables(conn):
        conn.close()
        raise StorageError(
            f"{path} is a live database, which holds only what is recent: copy the card "
            "database ([storage] card; db when there is no card)"
        )
    return conn


def _news_batches(source: sqlite3.Connection, after: int, size: int) -> Iterator[list[sqlite3.Row]]:
    """The articles after ``after`` in id order, a batch at a time: on the card they are
    in a table per month, each read in its own id order and merged."""
    query = queries()["migrate_read_news"]
    cursors = [
        source.execute(query.replace("{month}", table.removeprefix("news_")), {"after": after})
        for table in card_layout.month_tables(source)
    ]

    def rows(cursor: sqlite3.Cursor) -> Iterator[sqlite3.Row]:
        while chunk := cursor.fetchmany(size):
            yield from chunk

    batch: list[sqlite3.Row] = []
    for row in heapq.merge(*(rows(c) for c in cursors), key=lambda r: int(r["id"])):
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def migrate(
    source_path: Path,
    url: str,
    *,
    batch: int = BATCH,
    progress: Callable[[str, int, int], None] = lambda table, done, total: None,
) -> MigrateResult:
    """Copy ``source_path`` into the database at ``url`` (created or upgraded first).
    ``progress(table, rows_done, rows_total)`` hears each batch."""
    started = time.monotonic()
    read = queries()
    source = open_source(source_path)
    target = PostgreSQLStorage.open(url)
    try:
        source.execute("BEGIN")  # one consistent state for the whole copy
        source_counts = dict(source.execute(read["migrate_count"]).fetchone())
        lineage = source.execute(read["migrate_source_lineage"]).fetchone()[0]
        _claim_target(target, lineage, source_path)
        watermarks = target.bulk_read("migrate_watermarks")
        copied: dict[str, int] = {}
        for table, reading, writing, start in STEPS:
            copied[table] = 0
            key = start(watermarks)
            already = int(target.bulk_read("migrate_count")[table])
            progress(table, already, source_counts[table])
            batches = (
                _news_batches(source, key["after"], batch)
                if table == "news"
                else _batches(source, read[reading], key, table, batch)
            )
            for rows in batches:
                target.bulk_write(writing, [dict(r) for r in rows])
                copied[table] += len(rows)
                progress(table, already + copied[table], source_counts[table])
        duplicates = [dict(r) for r in source.execute(read["migrate_read_duplicates"])]
        for start_at in range(0, len(duplicates), batch):
            target.bulk_write("migrate_write_duplicates", duplicates[start_at : start_at + batch])
        hosts = [dict(r) for r in source.execute(read["migrate_read_hosts"])]
        before = int(target.bulk_read("migrate_count")["hosts"])
        target.bulk_write("migrate_write_hosts", hosts)
        copied["hosts"] = int(target.bulk_read("migrate_count")["hosts"]) - before
        target.bulk_read("migrate_sequences")
        target_counts = {k: int(v) for k, v in target.bulk_read("migrate_count").items()}
        source.execute("COMMIT")
    finally:
        source.close()
        target.close()
    return MigrateResult(
        source={k: int(v) for k, v in source_counts.items()},
        target=target_counts,
        copied=copied,
        seconds=time.monotonic() - started,
    )


def _claim_target(target: PostgreSQLStorage, lineage: str, source_path: Path) -> None:
    """The target must be empty, or a copy of this same source (a resumed migration)."""
    marked = target.bulk_read("migrate_source_of").get("value")
    if marked == lineage:
        return
    counts = target.bulk_read("migrate_count")
    if marked is not None or any(int(n) for n in counts.values()):
        raise StorageError(
            f"{target.location} already holds other data (not a copy of {source_path}): "
            "migrate into an empty database"
        )
    target.bulk_run("migrate_mark_source", lineage=lineage)


def _batches(
    source: sqlite3.Connection, query: str, key: dict[str, Any], table: str, size: int
) -> Iterator[list[sqlite3.Row]]:
    while True:
        rows = source.execute(query, {**key, "limit": size}).fetchall()
        if not rows:
            return
        yield rows
        key = _next_key(table, rows[-1])


class TerminalBar:
    """A progress bar per table on a terminal (rich, imported only then)."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._progress = Progress(
            TextColumn("{task.description:<13}"),
            BarColumn(),
            MofNCompleteColumn(),
            transient=False,
        )
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> TerminalBar:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, table: str, done: int, total: int) -> None:
        if table not in self._tasks:
            self._tasks[table] = self._progress.add_task(table, total=total)
        self._progress.update(self._tasks[table], completed=done)


def report(result: MigrateResult, out: Any = sys.stdout) -> None:
    """One line per table: rows copied now, and the counts of both sides."""
    for table in TABLES:
        mark = "ok" if result.source[table] == result.target[table] else "DIFFERENT"
        out.write(
            f"{table:<13} {result.copied.get(table, 0):>9} copied now; "
            f"sqlite {result.source[table]}, postgresql {result.target[table]}: {mark}\n"
        )
