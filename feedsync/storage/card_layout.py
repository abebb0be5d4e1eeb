"""The card's layout: one ``news_YYYY_MM`` table per month of saving, each with its search
index, ``news`` a view over them; creating a card, and upgrading a database from before
version 7 into that layout, once, in one transaction (sql/card.sql holds the SQL)."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence

from feedsync.clock import EARLIEST
from feedsync.storage.sqlfiles import queries, split_statements
from feedsync.storage_errors import StorageError
from feedsync.timestamps import to_iso

MONTH = re.compile(r"^\d{4}_\d{2}$")


def configure_card(conn: sqlite3.Connection, schema: str = "main") -> None:
    """How the card is written: a rollback journal (readers open the file alone, no
    -wal or -shm beside it), fsync at commit (a power cut leaves the last save or the
    one before, whole), and freed pages not zeroed: Debian builds SQLite with
    SECURE_DELETE on, which rewrites every page a deletion frees, on a card."""
    mode = conn.execute(f"PRAGMA {schema}.journal_mode = DELETE").fetchone()[0]
    if str(mode).lower() != "delete":
        raise StorageError(f"cannot put the card database in rollback-journal mode ({mode})")
    conn.execute(f"PRAGMA {schema}.synchronous = FULL")
    conn.execute(f"PRAGMA {schema}.secure_delete = OFF")


def month_names(conn: sqlite3.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute(queries()["card_months"])]


def month_of(iso: str) -> str:
    """'2026-11-23T...' -> '2026_11'."""
    return iso[:7].replace("-", "_")


def sql(name: str, month: str = "", arms: str = "") -> str:
    """A named template of sql/card.sql with its month (checked) or arms filled in."""
    text = queries()[name]
    if "{month}" in text:
        if not MONTH.match(month):
            raise ValueError(f"not a month: {month!r}")
        text = text.replace("{month}", month)
    return text.replace("{arms}", arms)


def run_script(conn: sqlite3.Connection, text: str) -> None:
    for statement in split_statements(text):
        conn.execute(statement)


def rebuild_view(conn: sqlite3.Connection) -> None:
    """The card's `news` view over every month's table."""
    months = month_names(conn)
    conn.execute(sql("card_drop_news_view"))
    conn.execute(
        sql("card_news_view", arms=" UNION ALL ".join(f"SELECT * FROM news_{m}" for m in months))
    )


def ensure_month(conn: sqlite3.Connection, month: str) -> None:
    if month not in month_names(conn):
        run_script(conn, sql("card_month_create", month))
        rebuild_view(conn)


def _next_month(dashed: str) -> str:
    year, month = int(dashed[:4]), int(dashed[5:7])
    return f"{year + month // 12:04d}-{month % 12 + 1:02d}"


def to_card_layout(conn: sqlite3.Connection, now: str) -> int:
    """Inside a transaction: the `news` table of a database (empty, or a whole archive)
    into one table per month of fetching and the `news` view. An article whose fetch
    time is no month (a clock gone wrong) goes to the current month: none is left
    behind (counted before the table is dropped). The current month is never one before
    feedsync existed: a card made at 1970 (a Pi's clock before NTP) is not given a
    news_1970_01 that retention would take for decades old. Returns the articles
    moved."""
    total = conn.execute("SELECT count(*) FROM news").fetchone()[0]
    moved = 0
    current = max(month_of(now), month_of(to_iso(EARLIEST)))
    filed: list[str] = []
    for (dashed,) in conn.execute(sql("card_table_months")).fetchall():
        month = str(dashed or "").replace("-", "_")
        if not MONTH.match(month) or month > current:
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
    rebuild_view(conn)
    return moved


def _ensure_table(conn: sqlite3.Connection, month: str) -> None:
    if month not in month_names(conn):
        run_script(conn, sql("card_month_create", month))


def is_card(conn: sqlite3.Connection) -> bool:
    return conn.execute(sql("card_is_card")).fetchone() is not None


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def month_tables(conn: sqlite3.Connection) -> Sequence[str]:
    """The month tables of a card database open on ``conn`` (for feedsync migrate)."""
    return [f"news_{m}" for m in month_names(conn)]
