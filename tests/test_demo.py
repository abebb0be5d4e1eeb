"""`feedsync demo`: a newcomer's first run works offline and tells the true story."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import cli_env


def demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "home").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "feedsync", "demo", *args],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path / "home"),
        timeout=180,
    )


def test_demo_ingests_the_sample_site(tmp_path: Path) -> None:
    done = demo(tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "3 feeds polled, 9 entries read, 6 distinct articles staged." in out
    assert "3 entries repeated an article that another feed carries" in out
    assert "6 articles fetched and extracted (6 page requests: each page once)" in out
    assert "Café Lumière reopens on the promenade after flood repairs" in out
    assert "3 of 3 feeds answered 304 Not Modified, 0 parsed, 0 article pages requested." in out
    assert done.stderr == ""


def test_demo_can_keep_its_database(tmp_path: Path) -> None:
    keep = tmp_path / "kept"
    keep.mkdir()
    done = demo(tmp_path, "--keep", str(keep))
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(keep / "feedsync.db") as conn:
        assert conn.execute("SELECT count(*) FROM news").fetchone() == (6,)
        assert conn.execute("SELECT count(*) FROM feed_entries").fetchone() == (9,)
        bodies = [len(body.split()) for (body,) in conn.execute("SELECT body FROM news")]
    assert min(bodies) > 250


def test_demo_keep_says_how_to_read_what_it_kept(tmp_path: Path) -> None:
    """The commands it prints work as printed; its times say their zone."""
    keep = tmp_path / "kept"
    keep.mkdir()
    done = demo(tmp_path, "--keep", str(keep))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index(f"The database is kept in {keep}. Read it with")
    news, _search, sql = (line.strip().split() for line in lines[start + 1 : start + 4])
    assert news[:3] == ["feedsync", "--config", str(keep / "feedsync.toml")]
    read = subprocess.run(
        [sys.executable, "-m", "feedsync", *news[1:]],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path / "home"),
    )
    assert read.returncode == 0 and "Café Lumière reopens" in read.stdout, read.stderr
    assert sql[:2] == ["sqlite3", str(keep / "feedsync.db")]
    assert "    2026-11-21 14:50Z  Café Lumière reopens" in done.stdout  # Z: UTC
