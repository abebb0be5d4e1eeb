"""``feedsync migrate``: a 100k-row SQLite database into PostgreSQL, killed half way,
resumed, run again; then feedsync works on the copy."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from conftest import FeedsyncEnv, cli_env, on_a_terminal, wait_until

ROWS = 100_000
FEEDS = 200
T = "2026-11-01T00:00:00Z"


def fill(fs: FeedsyncEnv) -> None:
    """feeds, entries each linked to one feed (one in ten to two), articles, a revision,
    a duplicate and a host in backoff: every table and every reference."""
    import sqlite3

    body = "A line of an article body, with a comma, and some more words. " * 4
    # into the live database, as the pipeline would have (a run's save takes it to the card)
    with sqlite3.connect(fs.live_path) as conn:
        conn.executemany(
            "INSERT INTO feeds (id, url, origin, added_at, latest_published) "
            "VALUES (?, ?, 'cli', ?, ?)",
            ((n, f"https://site{n}.example/feed", T, T) for n in range(1, FEEDS + 1)),
        )
        conn.executemany(
            "INSERT INTO news_summary (id, url, title, published, first_seen_at, state) "
            "VALUES (?, ?, ?, ?, ?, 'done')",
            ((n, f"https://e.com/{n}", f"Story {n}", T, T) for n in range(1, ROWS + 1)),
        )
        links = [(n % FEEDS + 1, n, T) for n in range(1, ROWS + 1)]
        links += [((n + 7) % FEEDS + 1, n, T) for n in range(1, ROWS + 1, 10)]
        conn.executemany(
            "INSERT INTO feed_entries (feed_id, summary_id, first_seen_at) VALUES (?, ?, ?)",
            links,
        )
        conn.executemany(
            "INSERT INTO news (id, summary_id, url, title, body, fetched_at, fingerprint) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                (n, n, f"https://e.com/{n}", f"Story {n}", body, T, -(2**63) + n)
                for n in range(1, ROWS - 1)
            ),
        )
        conn.execute(
            "UPDATE news_summary SET revision_of = 1, link_reason = 'same guid' WHERE id = ?",
            (ROWS - 1,),
        )
        conn.execute(
            "UPDATE news_summary SET duplicate_of = 2, link_reason = 'same text' WHERE id = ?",
            (ROWS,),
        )
        conn.execute("INSERT INTO hosts VALUES ('slow.example', ?, 2, 'HTTP 429')", (T,))


def pg_count(url: str, table: str) -> int:
    import psycopg

    try:
        with psycopg.connect(url) as conn:
            row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # type: ignore[arg-type]
            return int(row[0]) if row else 0
    except psycopg.errors.UndefinedTable:
        return 0


@pytest.mark.slow
def test_migrate_100k_rows_killed_resumed_and_run_again(fs: FeedsyncEnv, pg_url: str) -> None:
    fs.configure([])
    fs.run("feeds")  # creates the SQLite database
    fill(fs)
    fs.run("save")  # a save takes it all to the card (it is what migrate copies)
    command = fs.command("migrate", "--to", pg_url, "--from", str(fs.db_path))
    env = cli_env(fs.root / "home")

    started = time.monotonic()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    wait_until(lambda: pg_count(pg_url, "news_summary") >= 20_000, "the copy to be under way")
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL  # killed mid-copy, not finished
    killed_at = pg_count(pg_url, "news_summary") + pg_count(pg_url, "news")

    resumed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    resumed_seconds = time.monotonic() - started
    assert resumed.returncode == 0, resumed.stderr
    lines = {line.split()[0]: line for line in resumed.stdout.splitlines()[:5]}
    for table, rows in (
        ("feeds", FEEDS),
        ("news_summary", ROWS),
        ("feed_entries", ROWS + ROWS // 10),
        ("news", ROWS - 2),
        ("hosts", 1),
    ):
        assert f"sqlite {rows}, postgresql {rows}: ok" in lines[table], resumed.stdout
    copied_after_kill = int(lines["news_summary"].split()[1])
    assert 0 < copied_after_kill < ROWS  # it went on from where it was killed

    # a third time, on a terminal: progress bars, and nothing copied again
    code, text = on_a_terminal([*command], env)
    assert code == 0, text
    assert "100000/100000" in text and "ok" in text
    for table in ("feeds", "news_summary", "feed_entries", "news", "hosts"):
        assert f"{table:<13}         0 copied now" in text, text

    # feedsync runs on the copy: references kept, new ids after the copied ones
    fs.url = pg_url
    fs.configure()
    article = json.loads(fs.run("show", "2", "--json").stdout)
    assert article["title"] == "Story 2"
    assert [d["url"] for d in article["duplicates"]] == [f"https://e.com/{ROWS}"]
    assert fs.scalar("SELECT max(id) FROM news_summary") == ROWS
    for table, last in (("feeds", FEEDS), ("news_summary", ROWS), ("news", ROWS - 2)):
        assert fs.scalar(f"SELECT last_value FROM {table}_id_seq") == last
    print(
        f"migrate {ROWS} entries + {ROWS - 2} articles + {ROWS + ROWS // 10} links: "
        f"killed after {killed_at} rows, resumed and finished in {resumed_seconds:.1f}s "
        f"from the start; second run copied 0",
        file=sys.stderr,
    )
