"""The RAM budget and the card's room (feedsync/storage/budget.py): the decisions, then
feedsync on real small file systems (tmpfs mounts of a few MB) through its CLI."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sitegen
from conftest import FeedsyncEnv, Site
from sitegen import Item

from feedsync.storage import budget
from feedsync.storage.budget import Budget, Disk

MB = 1_000_000


# ---------------------------------------------------------------- the decisions


def test_the_ram_budget_is_half_the_ram_disk_unless_configured() -> None:
    disk = Disk(size=100 * MB, free=60 * MB)
    assert budget.ram_budget(None, disk) == 50 * MB
    assert budget.ram_budget(8 * MB, disk) == 8 * MB


def test_past_half_the_budget_the_live_database_goes_to_the_card() -> None:
    disk = Disk(size=100 * MB, free=60 * MB)
    assert not budget.should_spill(Budget(25 * MB, 50 * MB, disk))
    assert budget.should_spill(Budget(26 * MB, 50 * MB, disk))


def test_new_entries_wait_when_the_budget_or_the_ram_disk_is_nearly_used() -> None:
    roomy = Disk(size=100 * MB, free=60 * MB)
    assert budget.ram_full(Budget(40 * MB, 50 * MB, roomy)) is None
    assert "RAM budget" in str(budget.ram_full(Budget(43 * MB, 50 * MB, roomy)))
    # under budget, but the RAM disk itself is nearly full (other services fill /run)
    crowded = Disk(size=100 * MB, free=4 * MB)
    assert "RAM disk has 4.0 MB free" in str(budget.ram_full(Budget(1 * MB, 50 * MB, crowded)))


def test_a_save_needs_room_for_its_journal_and_leaves_the_reserve() -> None:
    card = Disk(size=1000 * MB, free=100 * MB)
    ok = Budget(500 * MB, budget.card_budget(None, 500 * MB, card), card)
    assert ok.budget == 550 * MB  # what it holds, and what is free beyond 5% of the disk
    assert budget.save_room(10 * MB, ok) is None
    assert "a save needs about 61.0 MB" in str(budget.save_room(30 * MB, ok))
    capped = Budget(500 * MB, budget.card_budget(505 * MB, 500 * MB, card), card)
    assert "takes 500.0 MB of its 505.0 MB budget" in str(budget.save_room(10 * MB, capped))


def test_the_write_ahead_log_is_kept_within_the_budget() -> None:
    assert budget.wal_pages(2 * MB) == 50  # a 4 MB RAM disk: at most 200 KB of log
    assert budget.wal_pages(50 * MB) == 762
    assert budget.wal_pages(10**10) == 1000  # SQLite's own default


# ---------------------------------------------------------------- real small file systems


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (root only: CI is; skipped otherwise)."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


class Peak:
    """The most a file system held, sampled every few milliseconds from another thread
    while feedsync runs (statvfs: what `df` shows)."""

    def __init__(self, path: Path):
        self.path = path
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            info = os.statvfs(self.path)
            self.most = max(self.most, (info.f_blocks - info.f_bfree) * info.f_frsize)
            time.sleep(0.002)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def big_page(site: Site, slug: str, title: str) -> str:
    """An article page whose text is about 16 KB."""
    paragraphs = [
        " ".join(sitegen.prose(f"{slug}:{n}", paragraphs=1, sentences=16)) for n in range(12)
    ]
    html = sitegen.article_page(title, seed=slug, paragraphs=paragraphs)
    return site.server.set(f"/articles/{slug}", html, "text/html; charset=utf-8")


@pytest.mark.slow
def test_on_a_small_ram_disk_the_budget_holds_and_nothing_is_lost(
    tmp_path: Path, site: Site
) -> None:
    """The live database on a 3 MB tmpfs (budget: half of it), the card on disk, and a
    site that brings several times the budget in articles over six runs: every run
    exits 0, the RAM disk never holds more than the budget, every article is there
    through `news --json` and `export`, and none was fetched twice."""
    with tmpfs(tmp_path / "ram", "3m") as ram:
        fs = FeedsyncEnv(
            root=tmp_path,
            db_path=ram / "feedsync.db",
            snapshot_path=tmp_path / "card" / "feedsync.db",
        )
        (tmp_path / "home").mkdir()
        feeds = [f"f{n}.xml" for n in range(5)]
        published: dict[str, list[Item]] = {name: [] for name in feeds}
        fs.configure([site.url(f"/feeds/{name}") for name in feeds], poll={"concurrency": 4})
        total = 0
        with Peak(ram) as peak:
            for run in range(6):
                for n in range(75):
                    story = f"story-{run}-{n}"
                    item = Item(f"Story {run}.{n}", big_page(site, story, f"Story {run}.{n}"))
                    published[feeds[n % 5]].insert(0, item)
                    total += 1
                for name in feeds:
                    site.feed(name, published[name][:40])
                done = fs.run("run", "--json")
                stats = json.loads(done.stdout)
                assert stats["feed_errors"] == 0 and stats["extract_failed"] == 0, done.stderr
                assert stats["not_taking"] is None, stats
        assert peak.most <= 1_500_000, f"the RAM disk held {peak.most} bytes"
        listed = json.loads(fs.run("news", "--json", "--limit", "100000").stdout)
        assert len(listed) == total == 450
        exported = fs.run("export").stdout.splitlines()
        assert len(exported) == total
        assert len({json.loads(line)["url"] for line in exported}) == total
        assert set(site.article_hits().values()) == {1}
        card = fs.card_path.stat().st_size
        print(f"small RAM disk: peak {peak.most} B of a 1500000 B budget; card {card} B")
        assert card > 4 * 1_500_000  # what went through RAM was several times its budget


@pytest.mark.slow
def test_a_full_card_is_lived_through_and_saving_resumes(tmp_path: Path, site: Site) -> None:
    """The card database on a 2 MB tmpfs that something else fills: the save is put off
    with one line saying why (the run still exits 0, the articles stay in RAM and are
    readable); once there is room again, the next run saves them."""
    with tmpfs(tmp_path / "card", "2m") as card_disk:
        fs = FeedsyncEnv(
            root=tmp_path,
            db_path=tmp_path / "ram" / "feedsync.db",
            snapshot_path=card_disk / "feedsync.db",
        )
        (tmp_path / "home").mkdir()
        items = [Item(f"Story {n}", big_page(site, f"s{n}", f"Story {n}")) for n in range(6)]
        site.feed("f.xml", items[:2])
        fs.configure([site.url("/feeds/f.xml")])
        fs.run("run")
        filler = card_disk / "something-else"
        free = os.statvfs(card_disk).f_bavail * os.statvfs(card_disk).f_frsize
        filler.write_bytes(b"\0" * (free - 150_000))  # leaves less than the 5% reserve
        site.feed("f.xml", items)
        done = fs.run("run")
        assert done.stderr.count("not saved to the card: the card has ") == 1, done.stderr
        assert "snapshot written" not in done.stdout
        titles = {a["title"] for a in json.loads(fs.run("news", "--json").stdout)}
        assert titles == {f"Story {n}" for n in range(6)}  # in RAM, readable
        status = json.loads(fs.run("status", "--json").stdout)["storage"]
        assert status["unsaved_changes"] > 0
        assert any(line.startswith("card: ") for line in status["nearly_full"]), status
        filler.unlink()
        assert fs.run_json()["snapshot"] == "written"  # what waited in RAM goes now
        assert json.loads(fs.run("status", "--json").stdout)["storage"]["unsaved_changes"] == 0
        with contextlib.closing(sqlite3.connect(fs.card_path)) as conn:
            assert conn.execute("SELECT count(*) FROM news").fetchone() == (6,)
