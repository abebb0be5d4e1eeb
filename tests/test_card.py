"""The card database and the live database (feedsync/storage/card.py, storage/sqlite.py):
what moves from RAM to the card, what stays, what comes back after a reboot, retention
by month, search, upgrades from the whole-file snapshots of version 6.

Real SQLite files: the live database in a tmpfs folder, the card database in a disk
folder. Time moves through the storage's own clock (``storage.clock``), as the bench's
simulated year does.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import (
    CardMount,
    FeedsyncEnv,
    RunningDaemon,
    Site,
    cli_env,
    power_loss,
    wait_until,
    what_feedsync_sees,
)
from sitegen import Item

from feedsync.config import StorageConfig
from feedsync.records import Article, Entry, PollIntent
from feedsync.storage import Keep, StorageError
from feedsync.storage import card_files as files
from feedsync.storage.sqlfiles import queries, schema_steps
from feedsync.storage.sqlite import SQLiteStorage
from feedsync.timestamps import to_iso


class Clock:
    def __init__(self, start: datetime):
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def config(tmp_path: Path, ramdisk: Path) -> StorageConfig:
    return StorageConfig(
        db=ramdisk / "live" / "feedsync.db", card=tmp_path / "card" / "feedsync.db"
    )


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 3, 10, 12, 0, tzinfo=UTC))


def opened(config: StorageConfig, clock: Clock, **keep: object) -> SQLiteStorage:
    return SQLiteStorage.open(config, keep=Keep(**keep), clock=clock)  # type: ignore[arg-type]


@pytest.fixture
def store(config: StorageConfig, clock: Clock) -> Iterator[SQLiteStorage]:
    storage = opened(config, clock)
    yield storage
    storage.close()


def stage(
    storage: SQLiteStorage, clock: Clock, numbers: range, feed: str = "https://e.com/f"
) -> list[int]:
    """Entries n (https://e.com/n, "Story n") from one feed; returns the ids created."""
    now = to_iso(clock.now)
    entries = [Entry(url=f"https://e.com/{n}", title=f"Story {n}", published=now) for n in numbers]
    return poll(storage, clock, entries, feed)


def poll(
    storage: SQLiteStorage, clock: Clock, entries: list[Entry], feed: str = "https://e.com/f"
) -> list[int]:
    """A poll of one feed bringing these entries; returns the ids created."""
    storage.add_feed(feed, to_iso(clock.now))
    fid = next(f.id for f in storage.feeds_to_poll() if f.url == feed)
    now = to_iso(clock.now)
    created = storage.record_poll(
        PollIntent(
            feed_id=fid,
            polled_at=now,
            entries=tuple(entries),
            newest_published=now,
            warning=None,
            feed_title="Feed",
            etag=None,
            last_modified=None,
            next_poll_at=now,
            owner="A",
            lease_until=to_iso(clock.now + timedelta(minutes=15)),
        )
    ).created_ids
    return list(created)


def extract(
    storage: SQLiteStorage, clock: Clock, ids: list[int], text: str = "Body of {n}."
) -> None:
    now = to_iso(clock.now)
    for job in storage.claim_articles(
        "A", 0, now, now, to_iso(clock.now + timedelta(minutes=9)), 1000
    ):
        if job.id in ids:
            storage.save_article(job.id, Article(text=text.format(n=job.id)), now, now)


def live_rows(config: StorageConfig, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(config.live_path) as conn:
        return conn.execute(sql).fetchall()


def card_rows(config: StorageConfig, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{config.card_path}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# ---------------------------------------------------------------- the layout


def test_a_month_of_the_card_has_the_columns_of_news(
    store: SQLiteStorage, config: StorageConfig
) -> None:
    """The save copies rows with SELECT *: the two column lists must stay equal."""
    live = [r[1:3] for r in live_rows(config, "PRAGMA table_info(news)")]
    month = card_rows(
        config, "SELECT name FROM sqlite_master WHERE name GLOB 'news_[0-9]*' AND type = 'table'"
    )
    assert month, "a new card database has the current month's table"
    assert [r[1:3] for r in card_rows(config, f"PRAGMA table_info({month[0][0]})")] == live
    assert card_rows(config, "SELECT type FROM sqlite_master WHERE name = 'news'") == [("view",)]
    for table in ("feeds", "news_summary", "feed_entries", "hosts", "meta"):
        assert card_rows(config, f"PRAGMA table_info({table})") == live_rows(
            config, f"PRAGMA table_info({table})"
        ), table
    assert card_rows(config, "PRAGMA journal_mode") == [("delete",)]


# ---------------------------------------------------------------- saving, letting go


def test_a_save_moves_the_articles_to_the_card_and_they_leave_ram(
    store: SQLiteStorage, config: StorageConfig, clock: Clock
) -> None:
    ids = stage(store, clock, range(1, 21))
    extract(store, clock, ids)
    assert len(live_rows(config, "SELECT id FROM news")) == 20
    result = store.save()
    assert result.written
    # on the card: every entry, link and article, in the month of the save
    assert card_rows(config, "SELECT count(*) FROM news_2026_03") == [(20,)]
    assert card_rows(config, "SELECT count(*) FROM news_summary") == [(20,)]
    assert card_rows(config, "SELECT count(*) FROM feed_entries") == [(20,)]
    # in RAM: the newest article only (its id is where the next one's comes from); the
    # entries of the last days stay (the queries that look back a week read them)
    assert live_rows(config, "SELECT id FROM news") == [(max(ids),)]
    assert len(live_rows(config, "SELECT id FROM news_summary")) == 20
    # what every command sees is all of it
    assert store.counts()["articles"] == 20
    assert [n.id for n in store.news_list("", None, 100)] == sorted(ids, reverse=True)
    assert (
        store.news_get(ids[0]) is not None and store.news_get(ids[0]).body == f"Body of {ids[0]}."
    )  # type: ignore[union-attr]
    assert [i.id for i in store.export_news("")] == sorted(ids)
    # nothing changed since: nothing written
    assert not store.save().written


def test_entries_older_than_the_days_kept_leave_ram_and_are_never_staged_again(
    store: SQLiteStorage, config: StorageConfig, clock: Clock
) -> None:
    ids = stage(store, clock, range(1, 11))
    extract(store, clock, ids)
    store.save()
    clock.now += timedelta(days=9)  # past Keep().live (8 days)
    later = stage(store, clock, range(100, 101))  # something new to save
    store.save()
    assert [r[0] for r in live_rows(config, "SELECT id FROM news_summary")] == later
    assert live_rows(config, "SELECT count(*) FROM feed_entries") == [(1,)]
    # the old entries are found on the card: staging them again creates nothing
    assert stage(store, clock, range(1, 11)) == []
    assert store.counts()["entries"] == 11


def test_given_up_entries_on_the_card_alone_are_still_listed_once(
    store: SQLiteStorage, config: StorageConfig, clock: Clock
) -> None:
    """`news --state given-up` reads both files: a given-up entry that left RAM with a
    save is listed from the card, once, with its reason and its feed."""
    from feedsync.records import FailureOutcome

    ids = stage(store, clock, range(1, 4))
    now = to_iso(clock.now)
    jobs = store.claim_articles("A", 0, now, now, to_iso(clock.now + timedelta(minutes=9)), 10)
    for job in jobs:
        store.record_extract_failure(job.id, "A", FailureOutcome("gone", 5, None, "HTTP 410"))
    store.save()
    clock.now += timedelta(days=9)  # past Keep().live: the settled entries leave RAM
    stage(store, clock, range(100, 101))
    store.save()
    assert live_rows(config, "SELECT count(*) FROM news_summary WHERE state = 'gone'") == [(0,)]
    gone = store.entries_in_state("gone", "", None, 10)
    assert [e.id for e in gone] == sorted(ids, reverse=True)
    assert {(e.last_error, e.attempts, e.feeds[0][1]) for e in gone} == {
        ("HTTP 410", 5, "https://e.com/f")
    }
    assert [e.id for e in store.entries_by_url("https://e.com/2")] == [ids[1]]
    assert store.entries_in_state("new", "", None, 10)[0].url == "https://e.com/100"


def test_ids_never_come_again_after_the_ram_disk_is_lost(
    config: StorageConfig, clock: Clock
) -> None:
    store = opened(config, clock)
    first = stage(store, clock, range(1, 6))
    extract(store, clock, first)
    store.save()
    store.close()
    # a reboot: the RAM disk is empty; the card holds ids 1..5
    for path in config.live_path.parent.iterdir():
        path.unlink()
    store = opened(config, clock)
    try:
        again = stage(store, clock, range(10, 13))
        assert min(again) > max(first)
        extract(store, clock, again)
        store.save()
        news = [r[0] for r in card_rows(config, "SELECT id FROM news ORDER BY id")]
        assert len(news) == len(set(news)) == 8
    finally:
        store.close()


def test_a_restore_at_1970_keeps_the_days_before_the_last_save_not_the_archive(
    config: StorageConfig, clock: Clock
) -> None:
    """A Pi without fake-hwclock reboots and feedsync starts before NTP: the live
    database is built from the card with the days it keeps counted back from the card's
    last save, not from 1970 (from which every entry ever seen is "recent": the whole
    archive's entries into a RAM disk of ~100 MB)."""
    store = opened(config, clock)
    old = stage(store, clock, range(1, 6))
    extract(store, clock, old)
    store.save()
    clock.now += timedelta(days=30)
    recent = stage(store, clock, range(10, 13))
    extract(store, clock, recent)
    store.save()
    store.close()
    for path in config.live_path.parent.iterdir():  # the reboot empties the RAM disk
        path.unlink()
    clock.now = datetime(1970, 1, 1, 0, 5, tzinfo=UTC)
    store = opened(config, clock)
    try:
        assert [r[0] for r in live_rows(config, "SELECT id FROM news_summary")] == recent
        assert store.counts()["entries"] == 8  # the others are on the card, as ever
    finally:
        store.close()


def test_an_article_that_only_the_card_holds_can_still_change(
    store: SQLiteStorage, config: StorageConfig, clock: Clock
) -> None:
    """A revision's new title reaches an article already saved and gone from RAM; it is
    brought back to RAM, changed, and saved again in its month (its search entry too)."""
    ids = stage(store, clock, range(1, 4))
    extract(store, clock, ids)
    store.save()
    assert live_rows(config, "SELECT id FROM news") == [(max(ids),)]
    store.search("story", 10, ("[", "]"))  # a month's index exists for it
    with sqlite3.connect(config.live_path) as conn:  # as the identity rules do
        conn.execute("PRAGMA foreign_keys = OFF")
    store._write(lambda conn: store._pull_article_of(conn, ids[0]))
    store._write(
        lambda conn: conn.execute(
            "UPDATE news SET title = 'Retitled' WHERE summary_id = ?", (ids[0],)
        )
    )
    store.save()
    assert card_rows(config, f"SELECT title FROM news WHERE summary_id = {ids[0]}") == [
        ("Retitled",)
    ]
    assert card_rows(config, "SELECT count(*) FROM news") == [(3,)]


def test_an_article_fetched_after_its_revision_left_ram_takes_the_revision_title(
    store: SQLiteStorage, config: StorageConfig, clock: Clock
) -> None:
    """An entry whose page could not be fetched for days is retitled by its feed; the
    revision, settled, leaves RAM for the card; when the page is fetched at last, the
    article has the revision's title, found on the card."""
    [root] = stage(store, clock, range(1, 2))  # not fetched yet (its server is down)
    clock.now += timedelta(hours=1)
    now = to_iso(clock.now)
    [revision] = poll(store, clock, [Entry("https://e.com/1", "Story 1, corrected", now)])
    clock.now += timedelta(days=9)  # past Keep().live (8 days)
    stage(store, clock, range(100, 101))  # something new to save
    store.save()
    assert live_rows(config, f"SELECT id FROM news_summary WHERE id = {revision}") == []
    assert card_rows(config, f"SELECT revision_of FROM news_summary WHERE id = {revision}") == [
        (root,)
    ]
    extract(store, clock, [root])
    shown = [n for n in store.news_list("", None, 10) if n.url == "https://e.com/1"]
    assert [n.title for n in shown] == ["Story 1, corrected"]


def _archive(store: SQLiteStorage, clock: Clock, first: int, count: int) -> None:
    """``count`` more articles saved to the card and gone from RAM (9 days later)."""
    extract(store, clock, stage(store, clock, range(first, first + count)))
    store.save()
    clock.now += timedelta(days=9)
    stage(store, clock, range(first + count, first + count + 1))
    store.save()


def _steps_to_save_an_article(store: SQLiteStorage, clock: Clock, n: int) -> int:
    """SQLite's virtual machine steps (a count, not a time) that saving article n takes."""
    [job] = stage(store, clock, range(n, n + 1))
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    store._conn.set_progress_handler(count, 10)
    try:
        extract(store, clock, [job])
    finally:
        store._conn.set_progress_handler(None, 10)
    return steps[0]


def test_saving_an_article_costs_the_same_whatever_the_card_holds(
    store: SQLiteStorage, clock: Clock
) -> None:
    """A daemon saves every article it fetches for years: a save that read the card's
    archive (the title's lookup once read every entry of both files) made each one
    slower as the card grew, 6 ms an article at 12,000 entries here, and the bench's
    year of 100,000 articles never ended. Counted in SQLite's steps, not timed: the
    same with 5 and with 305 entries on the card (one claim, one save each)."""
    _archive(store, clock, 1, 5)
    small = _steps_to_save_an_article(store, clock, 10_000)
    _archive(store, clock, 20_000, 300)
    large = _steps_to_save_an_article(store, clock, 30_000)
    assert store.counts()["entries"] > 300
    assert large < small * 1.5, (small, large)


# ---------------------------------------------------------------- retention by month


def test_retention_drops_a_month_once_all_of_it_is_older_and_never_earlier(
    config: StorageConfig, clock: Clock
) -> None:
    store = opened(config, clock, news_days=0, tombstone_days=0)  # pruned by hand here
    try:
        march = stage(store, clock, range(1, 4))
        extract(store, clock, march)
        store.save()
        clock.now = datetime(2026, 4, 20, tzinfo=UTC)
        april = stage(store, clock, range(10, 13))
        extract(store, clock, april)
        store.save()
        assert card_rows(config, "SELECT count(*) FROM news_2026_03") == [(3,)]
        # a month is never dropped while one of its articles is inside news_days
        assert store.prune(to_iso(datetime(2026, 3, 10, tzinfo=UTC)), None) == (0, 0)
        # March 10 is 41 days old, past 30 days: its month goes, April stays
        assert store.prune(to_iso(clock.now - timedelta(days=30)), None) == (3, 0)
        months = card_rows(config, "SELECT name FROM sqlite_master WHERE name GLOB 'news_2026_0?'")
        assert months == [("news_2026_04",)]
        assert store.counts()["articles"] == 3
        # their entries stay (tombstones): nothing is fetched again
        assert stage(store, clock, range(1, 4)) == []
        # past tombstone_days the entries of the articles gone go too
        clock.now = datetime(2026, 6, 1, tzinfo=UTC)
        assert store.prune(None, to_iso(clock.now - timedelta(days=60))) == (0, 3)
        assert store.counts()["entries"] == 3
    finally:
        store.close()


def _bytes_read() -> int:
    """What this process has read through read(2) so far (page cache or not)."""
    with Path("/proc/self/io").open() as io:
        return int(next(line for line in io if line.startswith("rchar:")).split()[1])


def test_daily_retention_reads_each_month_s_index_not_its_articles(
    config: StorageConfig, clock: Clock
) -> None:
    """Retention asks each month for its newest article every day: that is one seek in
    the month's index. It once read the month's whole table, texts and all (SQLite
    scanned it for a count beside the newest date), so a daemon read every month's
    articles but the current month's from the SD card each day (93 MB of a 262 MB card
    at 40,000 articles)."""
    store = opened(config, clock, news_days=0, tombstone_days=0)  # pruned by hand here
    try:
        text = "An article {n}. " + "word " * 600  # 3 KB each, as extracted news
        extract(store, clock, stage(store, clock, range(1, 401)), text)
        store.save()
        clock.now = datetime(2026, 4, 20, tzinfo=UTC)
        extract(store, clock, stage(store, clock, range(1000, 1002)))
        store.save()
        store.close()  # what a save read is in its cache: a day later it is not
        store = opened(config, clock, news_days=0, tombstone_days=0)
        march = config.card_path.stat().st_size
        before = _bytes_read()
        # March's newest article is newer than March 1: nothing is dropped
        assert store.prune(to_iso(datetime(2026, 3, 1, tzinfo=UTC)), None) == (0, 0)
        read = _bytes_read() - before
        assert read < march / 20, (read, march)
        assert card_rows(config, "SELECT count(*) FROM news_2026_03") == [(400,)]
    finally:
        store.close()


def test_a_save_runs_retention_once_a_day(config: StorageConfig, clock: Clock) -> None:
    """Cron users have no daemon: `feedsync run` ends with a save, which prunes when it
    last did so 20 hours ago or more."""
    store = opened(config, clock, news_days=30)
    try:
        extract(store, clock, stage(store, clock, range(1, 4)))
        store.save()
        clock.now = datetime(2026, 4, 20, tzinfo=UTC)
        extract(store, clock, stage(store, clock, range(10, 13)))
        store.save()  # March is past 30 days: its month went with this save
        months = card_rows(config, "SELECT name FROM sqlite_master WHERE name GLOB 'news_2026_0?'")
        assert months == [("news_2026_04",)]
    finally:
        store.close()


def test_dropping_a_month_writes_next_to_nothing_to_the_card(
    config: StorageConfig, clock: Clock
) -> None:
    """Debian's SQLite zeroes every page a deletion frees (SECURE_DELETE); the card is
    opened without it, so a month's table goes in a few page writes, not its size."""
    store = opened(config, clock, news_days=0)
    try:
        ids = stage(store, clock, range(1, 101))
        extract(store, clock, ids, text="Words of the story {n}. " * 1500)
        store.save()
        clock.now = datetime(2026, 5, 1, tzinfo=UTC)
        newer = stage(store, clock, range(500, 501))
        extract(store, clock, newer)
        store.save()
        size = config.card_path.stat().st_size
        before = _written(config.card_path)
        assert store.prune(to_iso(clock.now - timedelta(days=30)), None)[0] == 100
        assert _written(config.card_path) - before < size // 20, size
    finally:
        store.close()


def _written(path: Path) -> int:
    """Bytes this process has written so far (all files): /proc/self/io's wchar."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


# ---------------------------------------------------------------- search


JAPANESE = "東京都の天気は晴れ。京都と大阪で祭りが開かれた。"


def test_search_finds_words_and_two_and_three_character_japanese(
    store: SQLiteStorage, clock: Clock
) -> None:
    ids = stage(store, clock, range(1, 4))
    texts = {
        ids[0]: "The harbour wall was repaired before the winter storms.",
        ids[1]: JAPANESE,
        ids[2]: "東京と京都を結ぶ新しい列車。",
    }
    now = to_iso(clock.now)
    for job in store.claim_articles("A", 0, now, now, now, 10):
        store.save_article(job.id, Article(text=texts[job.id]), now, now)

    def found(query: str) -> set[int]:
        return {hit.id for hit in store.search(query, 20, ("[", "]"))}

    # not in the index yet (in RAM, then on the card within a day): found by a scan
    assert found("harbour") == {ids[0]}
    store.save()
    for month in store._card_db().months():
        assert store._card_db().unindexed()[month] == 0  # not indexed yet...
    clock.now += timedelta(days=1)
    store._card_db().index_all(to_iso(clock.now))  # ...a day later it is
    assert found("harbour") == {ids[0]}
    assert found("harb") == {ids[0]}  # a word's beginning
    assert found("HARBOUR wall") == {ids[0]}
    assert found("京都") == {ids[1], ids[2]}  # two characters
    assert found("東京都") == {ids[1]}  # three: not 東京 and 京都 apart
    assert found("大阪") == {ids[1]}
    assert found("nothing-like-this") == set()
    (hit,) = store.search("東京都", 5, ("[", "]"))
    assert "[東京都]" in hit.snippet


def test_a_card_month_index_is_a_fraction_of_the_text(
    store: SQLiteStorage, config: StorageConfig, clock: Clock
) -> None:
    words = [
        "council",
        "harbour",
        "ferry",
        "island",
        "library",
        "volunteers",
        "survey",
        "winter",
        "storm",
        "repairs",
    ]
    stage(store, clock, range(1, 301))
    now = to_iso(clock.now)
    for job in store.claim_articles("A", 0, now, now, now, 1000):
        text = " ".join(words[(job.id * 7 + i) % 10] + str(i % 97) for i in range(600))
        store.save_article(job.id, Article(text=text), now, now)
    store.save()
    store._card_db().index_all(now)
    conn = sqlite3.connect(config.card_path)
    text = conn.execute("SELECT sum(length(body)) FROM news").fetchone()[0]
    index = conn.execute(
        "SELECT sum(pgsize) FROM dbstat WHERE name GLOB 'news_fts_2026_03*'"
    ).fetchone()[0]
    conn.close()
    assert index < 0.6 * text, (index, text)


# ---------------------------------------------------------------- the card's own safety


def test_a_card_that_went_missing_is_not_silently_begun_again(
    config: StorageConfig, clock: Clock
) -> None:
    store = opened(config, clock)
    extract(store, clock, stage(store, clock, range(1, 3)))
    store.save()
    store.close()
    config.card_path.rename(config.card_path.with_name("elsewhere.db"))  # not mounted
    with pytest.raises(StorageError, match=r"is missing, yet .* was saved to it 1 times"):
        SQLiteStorage.open(config)
    # feedsync save --force: a new card from what RAM holds
    store = SQLiteStorage.open(config, new_card=True)
    try:
        assert store.save(force=True).written
    finally:
        store.close()


def test_a_lost_bookkeeping_after_a_save_is_taken_back_not_refused(
    store: SQLiteStorage, config: StorageConfig, clock: Clock
) -> None:
    """A process killed between the card's commit and the live database's note of it:
    the card names this live database as its writer, so the next save carries on."""
    extract(store, clock, stage(store, clock, range(1, 3)))
    store.save()
    with sqlite3.connect(config.live_path) as conn:
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'snapshot_seq'")
    extract(store, clock, stage(store, clock, range(5, 6)))
    assert store.save().written
    assert card_rows(config, "SELECT count(*) FROM news") == [(3,)]


def test_another_copys_card_is_refused_and_forced_aside(
    config: StorageConfig, clock: Clock, tmp_path: Path
) -> None:
    store = opened(config, clock)
    extract(store, clock, stage(store, clock, range(1, 3)))
    store.save()
    store.close()
    # a second copy of the live database, restored from the same card, saves first
    for path in config.live_path.parent.iterdir():
        path.unlink()
    other = opened(config, clock)
    extract(other, clock, stage(other, clock, range(7, 8)))
    other.save()
    other.close()
    with sqlite3.connect(config.live_path) as conn:  # this live database: an older copy
        conn.execute("UPDATE meta SET value = 'someone' WHERE key = 'live_id'")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'snapshot_seq'")
        conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'content_version'")
    store = opened(config, clock)
    try:
        with pytest.raises(files.SnapshotRefused, match="another copy"):
            store.save()
        assert store.save(force=True).written
        aside = [p.name for p in config.card_path.parent.iterdir() if ".replaced-" in p.name]
        assert len(aside) == 1
    finally:
        store.close()


# ---------------------------------------------------------------- upgrades


def _v6_database(path: Path, articles: int) -> None:
    """A database as feedsync version 6 left it (a live one, or its snapshot)."""
    from feedsync.storage.sqlfiles import schema_steps, split_statements

    conn = sqlite3.connect(path, isolation_level=None)
    for version, script in schema_steps()[:6]:
        for statement in split_statements(script.read_text()):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.execute(
        "INSERT INTO feeds (id, url, added_at) "
        "VALUES (1, 'https://e.com/f', '2026-01-01T00:00:00Z')"
    )
    for n in range(1, articles + 1):
        when = f"2026-0{1 + n % 3}-05T00:00:00Z"
        conn.execute(
            "INSERT INTO news_summary (id, url, title, published, first_seen_at, state) "
            "VALUES (?, ?, ?, ?, ?, 'done')",
            (n, f"https://e.com/{n}", f"Story {n}", when, when),
        )
        conn.execute("INSERT INTO feed_entries VALUES (1, ?, ?)", (n, when))
        conn.execute(
            "INSERT INTO news (id, summary_id, url, title, published, body, fetched_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (n, n, f"https://e.com/{n}", f"Story {n}", when, f"Harbour text {n}.", when),
        )
    conn.close()


def test_a_version_6_ram_disk_and_snapshot_become_a_card_with_nothing_lost(
    config: StorageConfig, clock: Clock
) -> None:
    config.card_path.parent.mkdir(parents=True)
    config.live_path.parent.mkdir(parents=True, exist_ok=True)
    _v6_database(config.live_path, 9)  # the live database holds 9 articles...
    conn = sqlite3.connect(config.live_path)
    conn.execute(f"VACUUM INTO '{config.card_path}'")  # ...its last snapshot 9 too
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "INSERT INTO news_summary (id, url, title, first_seen_at, state) "
        "VALUES (10, 'https://e.com/10', 'Story 10', '2026-03-01T00:00:00Z', 'new')"
    )  # and one entry that no snapshot has
    conn.commit()
    conn.close()
    notices: list[str] = []
    store = SQLiteStorage.open(config, notices.append)
    try:
        assert any("upgrading" in n for n in notices), notices
        assert store.counts()["articles"] == 9 and store.counts()["entries"] == 10
        months = card_rows(config, "SELECT name FROM sqlite_master WHERE name GLOB 'news_2026_0?'")
        assert {m[0] for m in months} >= {"news_2026_01", "news_2026_02", "news_2026_03"}
        assert {h.id for h in store.search("harbour", 20, ("", ""))} == set(range(1, 10))
        queue = store.claim_articles(
            "A", 0, "2027-01-01T00:00:00Z", to_iso(clock.now), "2027-01-01T00:00:00Z", 10
        )
        assert [j.id for j in queue] == [10]
    finally:
        store.close()
    seen = what_feedsync_sees(config.live_path, config.card_path)
    assert seen.execute("SELECT count(*) FROM news").fetchone() == (9,)


def test_a_database_on_a_disk_is_upgraded_in_place(tmp_path: Path, clock: Clock) -> None:
    """No snapshot: the configured file holds everything, its working file beside it."""
    path = tmp_path / "feedsync.db"
    _v6_database(path, 4)
    store = opened(StorageConfig(db=path, card=None), clock)
    try:
        assert store.counts()["articles"] == 4
    finally:
        store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM news").fetchone() == (4,)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    assert (tmp_path / "feedsync-live.db").exists()


def test_the_card_queries_are_all_named() -> None:
    names = queries()
    for name in ("card_save_entries", "live_evict_entries", "live_restore_entries", "card_search"):
        assert name in names


# ================================================================ through the real CLI
#
# The live database sits in a tmpfs folder (/dev/shm), the card database in a disk
# folder that plays the SD card. A reboot or power cut is simulated by deleting the tmpfs
# folder; a cut during a save by SIGKILL while the card is being written.


def card_files(env: FeedsyncEnv) -> list[str]:
    assert env.snapshot_path is not None
    return sorted(p.name for p in env.snapshot_path.parent.iterdir())


def saved_news(env: FeedsyncEnv) -> set[tuple[str, str]]:
    """The articles the card database holds (read as a user's sqlite3 would)."""
    assert env.snapshot_path is not None
    with sqlite3.connect(f"file:{env.snapshot_path}?mode=ro", uri=True) as conn:
        return set(conn.execute("SELECT url, title FROM news"))


def seen_news(env: FeedsyncEnv) -> list[tuple[str, str]]:
    """Every article, as feedsync's commands see it (RAM and card), duplicates kept."""
    return [(str(u), str(t)) for u, t in env.query("SELECT url, title FROM news")]


def publish(site: Site, feed: str, count: int, start: int = 0) -> list[Item]:
    items = [Item(f"Story {n}", site.page(f"story-{n}")) for n in range(start, start + count)]
    site.feed(feed, items)
    return items


def first_run(env: FeedsyncEnv, site: Site, stories: int) -> None:
    """One feed carrying ``stories`` articles, and a first `feedsync run` over it."""
    publish(site, "f.xml", stories)
    env.configure([site.url("/feeds/f.xml")])
    env.run("run")


def test_a_run_saves_to_the_card_and_leaves_no_journal_there(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    publish(site, "f.xml", 3)
    fs_card.configure([site.url("/feeds/f.xml")])
    done = fs_card.run("run")
    assert done.stdout.rstrip().endswith("; snapshot written")
    assert fs_card.snapshot_path is not None
    assert len(saved_news(fs_card)) == 3 == len(seen_news(fs_card))
    with sqlite3.connect(fs_card.snapshot_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    # only the database and its lock: no -wal, -shm, -journal or temporary file
    assert card_files(fs_card) == ["feedsync.db", "feedsync.db.lock"]
    # the articles left the RAM disk (all but the newest, which new ids follow)
    with sqlite3.connect(fs_card.live_path) as conn:
        assert conn.execute("SELECT count(*) FROM news").fetchone() == (1,)


def test_nothing_new_writes_nothing_and_news_is_added_in_place(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    first_run(fs_card, site, 2)
    assert fs_card.snapshot_path is not None
    first = fs_card.snapshot_path.stat()
    again = fs_card.run_json()
    assert again["snapshot"] == "unchanged since the last save"
    assert fs_card.snapshot_path.stat().st_mtime_ns == first.st_mtime_ns

    publish(site, "f.xml", 3)  # one more story
    assert fs_card.run_json()["snapshot"] == "written"
    assert fs_card.snapshot_path.stat().st_ino == first.st_ino  # the same file, grown
    assert card_files(fs_card) == ["feedsync.db", "feedsync.db.lock"]
    assert len(saved_news(fs_card)) == 3


def test_after_a_reboot_the_card_comes_back_and_nothing_is_fetched_twice(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    first_run(fs_card, site, 4)
    before = set(seen_news(fs_card))
    hits = site.article_hits()

    power_loss(fs_card)
    done = fs_card.run("run")

    assert re.search(
        r"feedsync: restored .*live/feedsync\.db from .*card/feedsync\.db "
        r"\(saved 20\d\d-\d\d-\d\d \d\d:\d\dZ\)",
        done.stderr,
    ), done.stderr
    assert set(seen_news(fs_card)) == before
    assert site.article_hits() == hits


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_card_is_set_aside_and_the_feeds_bring_back_what_they_carry(
    fs_card: FeedsyncEnv, site: Site, damage: str
) -> None:
    first_run(fs_card, site, 2)
    publish(site, "f.xml", 4)
    fs_card.run("run")
    card = fs_card.snapshot_path
    assert card is not None
    data = card.read_bytes()
    if damage == "truncated":
        card.write_bytes(data[: len(data) // 3])
    else:
        card.write_bytes(b"garbage" * 1000)
    power_loss(fs_card)

    done = fs_card.run("run")

    assert f"the card database {card} is damaged (" in done.stderr, done.stderr
    assert f"set aside as {card}.corrupt-" in done.stderr
    assert "starting with an empty one" in done.stderr
    assert [p for p in card_files(fs_card) if ".corrupt-" in p]  # kept for recovery
    # nothing else to start from: the feed still carries all 4, the run brought them back
    assert len(set(seen_news(fs_card))) == 4
    assert site.hits("/articles/story-0") == 2 and site.hits("/articles/story-3") == 2


def test_save_and_restore_commands(fs_card: FeedsyncEnv, site: Site) -> None:
    first_run(fs_card, site, 2)
    assert "nothing written" in fs_card.run("save").stdout
    assert "snapshot written: " in fs_card.run("save", "--force").stdout

    # the live database gains a change that the card lacks: restore refuses
    fs_card.run("add", site.feed("other.xml", []))
    refused = fs_card.run("restore", expect=4)  # refused: not a failure of the storage
    assert refused.stderr.startswith("feedsync: refused: "), refused.stderr
    assert re.search(r"\d+ changes? not on the card", refused.stderr), refused.stderr
    assert refused.stderr.count("\n") == 1

    forced = fs_card.run("restore", "--force")
    assert "kept as" in forced.stderr and "before-restore" in forced.stderr
    assert fs_card.db_path.with_name("feedsync.db.before-restore").exists()
    assert site.url("/feeds/other.xml") not in fs_card.run("feeds").stdout
    assert len(set(seen_news(fs_card))) == 2


def test_restore_refuses_while_another_process_has_the_database_open(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    first_run(fs_card, site, 1)
    holder = SQLiteStorage.open(StorageConfig(db=fs_card.db_path, card=fs_card.snapshot_path))
    try:
        done = fs_card.run("restore", "--force", expect=3)
        assert "held by another feedsync process" in done.stderr
    finally:
        holder.close()
    fs_card.run("restore", "--force")


def test_the_card_of_another_database_is_never_written_to(fs_card: FeedsyncEnv, site: Site) -> None:
    first_run(fs_card, site, 1)
    assert fs_card.snapshot_path is not None
    theirs = fs_card.snapshot_path.read_bytes()
    # another, unrelated database is started on the same card path
    other = FeedsyncEnv(
        root=fs_card.root / "other",
        db_path=fs_card.root / "other-live.db",
        snapshot_path=fs_card.snapshot_path,
    )
    (other.root / "home").mkdir(parents=True)
    other.configure([site.url("/feeds/f.xml")])
    shutil.copyfile(fs_card.db_path, other.db_path)  # a copy with the same lineage...
    with sqlite3.connect(other.db_path) as conn:  # ...turned into another database
        conn.execute("UPDATE meta SET value = 'someone-else' WHERE key = 'lineage'")
    publish(site, "f.xml", 2)
    done = other.run("run", expect=4)
    assert "refused: " in done.stderr and "holds another database" in done.stderr
    assert fs_card.snapshot_path.read_bytes() == theirs


def test_status_shows_where_the_data_is_and_how_full(fs_card: FeedsyncEnv, site: Site) -> None:
    first_run(fs_card, site, 2)
    text = fs_card.run("status").stdout
    assert "live       /dev/shm/" in text or "live       /tmp/" in text
    assert "card       /tmp/" in text and "saved      20" in text and " free)" in text
    assert "nothing since: the card is current" in text
    assert "NEARLY FULL" not in text
    data = json.loads(fs_card.run("status", "--json").stdout)["storage"]
    assert (data["live"], data["snapshot"]) == (str(fs_card.db_path), str(fs_card.snapshot_path))
    shm = os.statvfs(fs_card.db_path.parent)
    assert data["ram_budget"] == shm.f_blocks * shm.f_frsize // 2  # half the RAM disk
    assert data["card_disk_free"] > 0 and data["nearly_full"] == []
    fs_card.run("add", site.feed("new.xml", []))  # a change the card lacks yet
    data = json.loads(fs_card.run("status", "--json").stdout)
    assert data["storage"]["unsaved_changes"] >= 1
    assert data["storage"]["snapshot_bytes"] > 0 and data["storage"]["live_bytes"] > 0
    assert data["articles"]["total"] == 2


def test_status_on_a_new_database_says_never_saved_in_one_voice(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """A brand-new database was never saved: not "saved none yet, 1 changes since"."""
    fs_card.configure([])
    text = fs_card.run("status").stdout
    assert "saved      never, nothing to save yet" in text, text
    assert "the card is current" not in text and "since" not in text.split("saved")[1]
    fs_card.configure([site.feed("f.xml", [])])  # a listed feed is a change to save
    text = fs_card.run("status").stdout
    assert "saved      never, 1 change not on the card yet" in text, text
    assert "1 changes" not in text
    fs_card.run("run")
    text = fs_card.run("status").stdout
    assert re.search(r"saved      20\S+ \S+Z, nothing since: the card is current", text), text
    fs_card.run("add", site.feed("g.xml", []))  # the feed and its first poll
    assert "2 changes since, not on the card yet" in fs_card.run("status").stdout


def test_status_tells_a_card_begun_anew_under_a_living_ram_disk_and_the_next_run_fills_it(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """The card is damaged while the live database lives on: the damaged card is set
    aside and an empty one begun. status said "saved 21:03Z, nothing since: the card is
    current" about an empty card, and no save ever came (nothing "changed"). Now it says
    the card was never saved and why, and the next run writes everything to it."""
    first_run(fs_card, site, 2)
    card = fs_card.snapshot_path
    assert card is not None
    card.write_bytes(b"garbage" * 1000)

    done = fs_card.run("status", env={"COLUMNS": "80"})  # piped: whole, unless COLUMNS
    assert "is damaged (" in done.stderr and "set aside as" in done.stderr
    assert "saved      never, " in done.stdout and " not on the card yet" in done.stdout
    assert "the card is current" not in done.stdout
    assert "CARD BEHIND begun anew after 1 save to the one before: the next save fills it" in (
        done.stdout
    )
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    data = json.loads(fs_card.run("status", "--json").stdout)["storage"]
    assert data["snapshot_at"] is None and data["unsaved_changes"] > 0
    assert data["card_behind"] == "begun anew after 1 save to the one before"

    fs_card.run("run")  # the feed has nothing new (304): a save all the same
    assert saved_news(fs_card) == {(u, t) for u, t in seen_news(fs_card)} != set()
    with sqlite3.connect(f"file:{card}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT url FROM feeds").fetchall() == [(site.url("/feeds/f.xml"),)]
    text = fs_card.run("status").stdout
    assert "nothing since: the card is current" in text and "CARD BEHIND" not in text
    assert json.loads(fs_card.run("status", "--json").stdout)["storage"]["card_behind"] is None


def test_status_says_when_the_ram_budget_is_nearly_used(fs_card: FeedsyncEnv, site: Site) -> None:
    first_run(fs_card, site, 2)
    fs_card.configure(storage={"ram_budget": "100KB"})  # less than the live file itself
    data = json.loads(fs_card.run("status", "--json").stdout)["storage"]
    assert data["ram_budget"] == 100_000
    assert any(line.startswith("RAM disk: ") for line in data["nearly_full"]), data
    assert data["not_taking"] and "RAM budget" in data["not_taking"]
    text = fs_card.run("status").stdout
    assert "NEARLY FULL RAM disk: the live database takes" in text
    # a run takes no new entries, says why in one line, and still ends well
    publish(site, "f.xml", 5)
    done = fs_card.run("run")
    assert done.stderr.count("not taking new entries: ") == 1, done.stderr
    assert "new entries put off" in done.stdout
    assert len(set(seen_news(fs_card))) == 2


# ---------------------------------------------------------------- SD card writes


def traced_run(env: FeedsyncEnv, trace: Path) -> subprocess.CompletedProcess[str]:
    """`feedsync run` under strace, every write-like syscall logged with its file path."""
    command = [
        "strace",
        "-f",
        "-qq",
        "-y",
        "-o",
        str(trace),
        "-e",
        "trace=write,pwrite64,writev,pwritev,pwritev2,sendfile,copy_file_range",
        *env.command("run"),
    ]
    environment = {**cli_env(env.root / "home"), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def bytes_written_under(trace: Path, folder: Path) -> tuple[int, int]:
    """(write syscalls, bytes) that went to files under ``folder``."""
    calls = total = 0
    pattern = re.compile(r"^\d+\s+\w+\((\d+)<([^>]*)>.*\)\s+=\s+(\d+)")
    for line in trace.read_text(errors="replace").splitlines():
        match = pattern.match(line)
        if match and match.group(2).startswith(str(folder)):
            calls += 1
            total += int(match.group(3))
    return calls, total


@pytest.mark.skipif(
    shutil.which("strace") is None, reason="strace is not installed (tests/run.sh installs it)"
)
def test_polls_write_to_the_card_only_when_saving_news(
    fs_card: FeedsyncEnv, site: Site, tmp_path: Path
) -> None:
    for n in range(4):
        publish(site, f"f{n}.xml", 40, start=100 * n)
    fs_card.configure([site.url(f"/feeds/f{n}.xml") for n in range(4)])
    assert fs_card.snapshot_path is not None
    card = fs_card.snapshot_path.parent
    live = fs_card.db_path.parent

    writes = []
    sizes = []
    for poll in range(6):
        if poll == 3:  # news appears once in the middle of the day
            publish(site, "f0.xml", 41)
        trace = tmp_path / f"trace-{poll}.log"
        traced_run(fs_card, trace)
        writes.append((bytes_written_under(trace, card), bytes_written_under(trace, live)))
        sizes.append(fs_card.snapshot_path.stat().st_size)

    card_writes = [w[0] for w in writes]
    # poll 3 found one new story among 160: the save wrote what it added to the card,
    # its journal, and a few pages it changed (the feeds polled, the counters), not the
    # whole file as a snapshot used to
    _, written = card_writes[3]
    assert 0 < written <= 3 * (sizes[3] - sizes[2]) + 48 * 4096, (writes, sizes)
    assert written < sizes[3] // 4, (writes, sizes)
    # the other polls after the first (all 304s) wrote nothing at all to the card
    assert [card_writes[p] for p in (1, 2, 4, 5)] == [(0, 0)] * 4, writes
    # while the live database on tmpfs took every write of every poll
    assert all(w[1][0] > 0 for w in writes), writes


# ---------------------------------------------------------------- power cuts


def _kill_when(
    process: subprocess.Popen[str], ready: Callable[[], bool], timeout: float = 60
) -> bool:
    """SIGKILL the process group as soon as ``ready()``; False if it finished first."""
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        if ready():
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return True
        time.sleep(0.0005)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise AssertionError("feedsync run did not finish within the deadline")
    return False


def _card_state(card: Path) -> set[tuple[str, int, int]]:
    state = set()
    for path in card.iterdir():
        with contextlib.suppress(FileNotFoundError):
            info = path.stat()
            state.add((path.name, info.st_size, info.st_mtime_ns))
    return state


def _cut_condition(
    mode: str,
    rng: random.Random,
    card: Path,
    feed_requests: Callable[[], int],
    article_requests: Callable[[], int],
) -> Callable[[], bool]:
    """When to cut the power, seen from outside: by the server's request counters, by the
    card changing (a save under way: its journal, its pages), or by the clock."""
    feeds0, articles0 = feed_requests(), article_requests()
    if mode == "polls":
        after = rng.randint(1, 6)
        return lambda: feed_requests() - feeds0 >= after
    if mode == "extraction":
        after = rng.randint(1, 3)
        return lambda: article_requests() - articles0 >= after
    if mode == "save":
        # the first change of any kind on the card, then 0-20 ms more: the cut lands
        # somewhere inside the save (a spill mid-pass, or the one at its end)
        before = _card_state(card)
        jitter = rng.uniform(0.0, 0.02)
        changed_at: list[float] = []

        def during_write() -> bool:
            if not changed_at and _card_state(card) != before:
                changed_at.append(time.monotonic())
            return bool(changed_at) and time.monotonic() >= changed_at[0] + jitter

        return during_write
    at = time.monotonic() + rng.uniform(0.05, 0.9)
    return lambda: time.monotonic() >= at


def _card_integrity(card: Path, into: Path) -> str:
    """integrity_check of the card database as the next opener finds it: a copy of the
    folder (database and any journal a cut save left), opened as sqlite3 would, which
    rolls that journal back first."""
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(card, into)
    with sqlite3.connect(into / card.joinpath("feedsync.db").name) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


@pytest.mark.slow
def test_power_cut_at_any_instant_loses_nothing_the_feeds_still_carry(
    fs_card: FeedsyncEnv, site: Site, tmp_path: Path
) -> None:
    """At least 50 times: start a pass, cut the power at a chosen instant (during the polls,
    during extraction, while it saves to the card, or at a random time), lose the RAM
    disk. Each time the card database must pass integrity_check, and one more run must
    give exactly the news an uninterrupted run gives, each article once. The RAM budget
    is small enough that saves also happen mid-pass (a spill), where cuts land too."""
    seed = int(os.environ.get("FEEDSYNC_TEST_SEED", str(time.time_ns() % 10**6)))
    rng = random.Random(seed)
    categories = [f"cat{n}.xml" for n in range(6)]
    published: dict[str, list[Item]] = {name: [] for name in categories}
    expected: set[tuple[str, str]] = set()

    def publish_story(n: int) -> None:
        item = Item(f"Power cut story {n}", site.page(f"pc-{n}"))
        for name in rng.sample(categories, 2):  # each story in two category feeds
            published[name].append(item)
        expected.add((item.link, item.title))

    def serve_feeds() -> None:
        for name in categories:
            site.feed(name, published[name], delay=0.02)

    for n in range(12):
        publish_story(n)
    serve_feeds()
    fs_card.configure(
        [site.url(f"/feeds/{name}") for name in categories], storage={"ram_budget": "1MB"}
    )
    assert fs_card.snapshot_path is not None
    card = fs_card.snapshot_path.parent
    card.mkdir(parents=True, exist_ok=True)

    def feed_requests() -> int:
        return sum(site.hits(f"/feeds/{name}") for name in categories)

    def article_requests() -> int:
        return sum(site.article_hits().values())

    kills: dict[str, int] = {"polls": 0, "extraction": 0, "save": 0, "random": 0}
    story = 12
    for trial in range(52):
        for _ in range(3):
            publish_story(story)
            story += 1
        serve_feeds()
        mode = ["polls", "extraction", "save", "random"][trial % 4]
        ready = _cut_condition(mode, rng, card, feed_requests, article_requests)
        process = subprocess.Popen(
            fs_card.command("run"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            env=cli_env(fs_card.root / "home"),
            start_new_session=True,
        )
        killed = _kill_when(process, ready)
        kills[mode] += killed
        power_loss(fs_card)

        context = f"seed {seed}, trial {trial}, mode {mode}, killed {killed}"
        # once there is a card database, a cut at any instant leaves a sound one
        assert fs_card.snapshot_path.exists() or trial == 0, context
        if fs_card.snapshot_path.exists():
            assert _card_integrity(card, tmp_path / "check") == "ok", context
        recovery = fs_card.run("run")
        assert "damaged" not in recovery.stderr, context
        rows = seen_news(fs_card)
        assert len(rows) == len(set(rows)), context  # no duplicates, across RAM and card
        assert set(rows) == expected, context
        assert not [p for p in card.iterdir() if "-journal" in p.name], context

    # the cuts really fell where they were aimed (a pass that finished first is a trial of
    # a clean exit instead: the random instants sometimes come too late)
    assert kills["polls"] >= 12 and kills["extraction"] >= 12, kills
    assert kills["save"] >= 8 and sum(kills.values()) >= 40, kills

    print(f"power cuts: {kills} in 52 trials (seed {seed})")
    # and an uninterrupted run from scratch over the same feeds gives the same news
    fresh = FeedsyncEnv(root=fs_card.root / "fresh")
    (fresh.root / "home").mkdir(parents=True)
    fresh.configure([site.url(f"/feeds/{name}") for name in categories])
    fresh.run("run")
    assert set(seen_news(fresh)) == set(seen_news(fs_card)) == expected


def test_a_directory_at_the_snapshot_path_is_reported_not_renamed(fs_card: FeedsyncEnv) -> None:
    assert fs_card.snapshot_path is not None
    fs_card.snapshot_path.mkdir(parents=True)
    fs_card.configure([])
    done = fs_card.run("status", expect=3)
    assert "is not a file: check [storage] card" in done.stderr
    assert fs_card.snapshot_path.is_dir()  # left alone


# ---------------------------------------------------------------- a damaged live database
#
# Whatever the damage to the live database file, every command sets it aside (one copy,
# <live>.damaged), says so in one line, and builds it again from the card, which it only
# reads. The damage is done in place, as a crash or a full RAM disk leaves a file.


def _header_overwritten(live: Path) -> None:
    with live.open("r+b") as file:
        file.write(b"\xa5" * 100)


def _emptied(live: Path) -> None:
    live.write_bytes(b"")


def _cut_midway(live: Path) -> None:
    size = live.stat().st_size
    assert size >= 8 * 4096, size  # several pages: half of them go
    os.truncate(live, size // 2)


def _another_programs(live: Path) -> None:
    files.remove_database(live)
    conn = sqlite3.connect(live)
    try:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
        conn.execute("INSERT INTO notes (text) VALUES ('shopping list')")
        conn.commit()
    finally:
        conn.close()


def _in_sqlite(sql: str) -> Callable[[Path], None]:
    def damage(live: Path) -> None:
        conn = sqlite3.connect(live)
        try:
            conn.execute(sql)
            conn.commit()
        finally:
            conn.close()  # the last connection: the WAL goes into the file

    return damage


def _garble_page_of(table: str) -> Callable[[Path], None]:
    """The root page of ``table`` overwritten: deep in the file, where only reading that
    table, or a check of every page, finds it."""

    def damage(path: Path) -> None:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            root = conn.execute(
                "SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)
            ).fetchone()[0]
            size = conn.execute("PRAGMA page_size").fetchone()[0]
        finally:
            conn.close()
        with path.open("r+b") as file:
            file.seek((root - 1) * size)
            file.write(random.Random(root).randbytes(size))

    return damage


def _wal_of_another_database(live: Path) -> None:
    """What a copy put in place without its WAL's removal leaves: another database's
    WAL beside it, which SQLite plays over it."""
    other = live.with_name("other.db")
    conn = sqlite3.connect(other, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("CREATE TABLE t (a, b)")
        conn.executemany("INSERT INTO t VALUES (?, randomblob(500))", [(n,) for n in range(50)])
        shutil.copyfile(other.with_name("other.db-wal"), live.with_name(live.name + "-wal"))
    finally:
        conn.close()
        files.remove_database(other)


DAMAGES: dict[str, Callable[[Path], None]] = {
    "its first 100 bytes overwritten": _header_overwritten,
    "truncated to 0 bytes": _emptied,
    "truncated midway": _cut_midway,
    "another program's database": _another_programs,
}

# one command each suffices for these: the commands share the judgement
MORE_DAMAGES: dict[str, Callable[[Path], None]] = {
    "a table missing": _in_sqlite("DROP TABLE hosts"),
    "its lineage row missing": _in_sqlite("DELETE FROM meta WHERE key = 'lineage'"),
    "its save counter garbled": _in_sqlite(
        "UPDATE meta SET value = 'x' WHERE key = 'snapshot_seq'"
    ),
    "the WAL of another database beside it": _wal_of_another_database,
}


def damage_live(env: FeedsyncEnv, damage: Callable[[Path], None]) -> bytes:
    """The live database damaged in place; returns its bytes as damaged."""
    live = env.live_path
    wal = live.with_name(live.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # every command closed cleanly
    damage(live)
    return live.read_bytes()


def set_aside_line(env: FeedsyncEnv, stderr: str) -> str:
    """The one line that says a damaged live database was set aside (asserted alone)."""
    live = env.live_path
    lines = [line for line in stderr.splitlines() if " is damaged (" in line]
    assert len(lines) == 1, stderr
    assert f"the live database {live} is damaged (" in lines[0], lines[0]
    assert f"set aside as {live}.damaged" in lines[0], lines[0]
    assert f"built again from {env.card_path} (saved 20" in lines[0], lines[0]
    return lines[0]


def set_aside_files(env: FeedsyncEnv) -> list[str]:
    return sorted(p.name for p in env.live_path.parent.iterdir() if ".damaged" in p.name)


def card_content(env: FeedsyncEnv) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the card's tables (a user's sqlite3, read-only)."""
    with sqlite3.connect(f"file:{env.card_path}?mode=ro", uri=True) as conn:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE '%VIRTUAL%'"
                " AND name NOT LIKE '%fts%'"
            )
        ]
        return {t: sorted(conn.execute(f"SELECT * FROM {t}"), key=repr) for t in tables}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_live_database_is_set_aside_said_once_and_built_from_the_card(
    fs_card: FeedsyncEnv, site: Site, damage: str
) -> None:
    first_run(fs_card, site, 3)
    news = set(seen_news(fs_card))
    assert len(news) == 3
    feeds = {site.url("/feeds/f.xml")}
    card_bytes = fs_card.card_path.read_bytes()
    card_rows = card_content(fs_card)
    hits = site.article_hits()
    other = site.feed("other.xml", [])
    for command in (
        ["run"],
        ["feeds"],
        ["status"],
        ["add", other],
        ["restore"],
        ["restore", "--force"],
    ):
        damaged = damage_live(fs_card, DAMAGES[damage])

        done = fs_card.run(*command)  # exit 0

        line = set_aside_line(fs_card, done.stderr)
        assert ("replacing the one set aside before" in line) == (command != ["run"]), line
        assert set_aside_files(fs_card) == ["feedsync.db.damaged"], command  # one copy
        assert fs_card.live_path.with_name("feedsync.db.damaged").read_bytes() == damaged
        # everything the card held is there again, and nothing was fetched twice
        assert set(seen_news(fs_card)) == news, command
        listed = fs_card.run("feeds").stdout
        assert all(url in listed for url in feeds), (command, listed)
        assert site.article_hits() == hits, command
        # the card was only read
        assert fs_card.card_path.read_bytes() == card_bytes, command
        if command[0] == "add":
            assert other in listed  # the command did its work on the rebuilt database
    assert card_content(fs_card) == card_rows


@pytest.mark.parametrize("damage", list(MORE_DAMAGES))
def test_more_kinds_of_damage_are_set_aside_the_same_way(
    fs_card: FeedsyncEnv, site: Site, damage: str
) -> None:
    first_run(fs_card, site, 2)
    news = set(seen_news(fs_card))
    card_bytes = fs_card.card_path.read_bytes()
    damaged = damage_live(fs_card, MORE_DAMAGES[damage])

    done = fs_card.run("feeds")

    assert site.url("/feeds/f.xml") in done.stdout
    set_aside_line(fs_card, done.stderr)
    assert fs_card.live_path.with_name("feedsync.db.damaged").read_bytes() == damaged
    if MORE_DAMAGES[damage] is _wal_of_another_database:  # kept with its file
        assert set_aside_files(fs_card) == ["feedsync.db.damaged", "feedsync.db.damaged-wal"]
    else:
        assert set_aside_files(fs_card) == ["feedsync.db.damaged"]
    assert set(seen_news(fs_card)) == news
    assert fs_card.card_path.read_bytes() == card_bytes


def test_a_page_garbled_deep_in_the_live_database_is_set_aside_once_it_is_met(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """Every page is checked when it costs nothing to a cron run: by `feedsync restore`,
    and at the start after a command met a malformed page (that command fails in one
    line, saying so). The starts between check the small tables only."""
    first_run(fs_card, site, 2)
    news = set(seen_news(fs_card))
    card_bytes = fs_card.card_path.read_bytes()
    mark = fs_card.live_path.with_name("feedsync.db.suspect")
    damaged = damage_live(fs_card, _garble_page_of("news_summary"))

    met = fs_card.run("run", expect=3)

    assert met.stderr.count("\n") == 1, met.stderr
    assert "database disk image is malformed" in met.stderr
    assert f"the next feedsync command checks every page of {fs_card.live_path}" in met.stderr
    assert mark.exists() and set_aside_files(fs_card) == []
    done = fs_card.run("feeds")
    assert "(quick_check: " in set_aside_line(fs_card, done.stderr)
    assert fs_card.live_path.with_name("feedsync.db.damaged").read_bytes() == damaged
    assert not mark.exists()
    assert set(seen_news(fs_card)) == news

    # `feedsync restore` checks every page itself: no command has to meet it first
    damaged = damage_live(fs_card, _garble_page_of("feed_entries"))
    done = fs_card.run("restore")
    assert "(quick_check: " in set_aside_line(fs_card, done.stderr)
    assert fs_card.live_path.with_name("feedsync.db.damaged").read_bytes() == damaged
    assert set(seen_news(fs_card)) == news
    assert fs_card.card_path.read_bytes() == card_bytes


def test_a_page_garbled_on_the_card_never_sets_the_live_database_aside(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """The card's pages are read through the live database's connection too: the whole
    check at the next start finds the live database whole and leaves it."""
    first_run(fs_card, site, 2)
    month = card_rows(
        StorageConfig(db=fs_card.db_path, card=fs_card.snapshot_path),
        "SELECT name FROM sqlite_master WHERE name GLOB 'news_[0-9]*' AND type = 'table'",
    )[0][0]
    _garble_page_of(str(month))(fs_card.card_path)
    card_bytes = fs_card.card_path.read_bytes()
    live = fs_card.live_path.stat().st_ino

    for _ in range(2):  # what every command meets, as before: the card is not repaired
        met = fs_card.run("feeds", expect=3)
        assert "database disk image is malformed" in met.stderr
    # the second start checked the live database whole, said where the page is, kept it
    assert f"every page of {fs_card.live_path} checked" in met.stderr
    assert f"so that page is the card database's ({fs_card.card_path})" in met.stderr
    assert " is damaged (" not in met.stderr and set_aside_files(fs_card) == []
    assert fs_card.live_path.stat().st_ino == live
    assert fs_card.card_path.read_bytes() == card_bytes


def test_a_garbage_wal_and_shm_beside_a_whole_file_are_left_to_sqlite(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """SQLite ignores a WAL whose header is not its own and rebuilds a -shm that makes
    no sense: the database is whole, nothing is set aside."""
    first_run(fs_card, site, 2)
    news = set(seen_news(fs_card))
    live = fs_card.live_path
    rng = random.Random(7)
    live.with_name(live.name + "-wal").write_bytes(rng.randbytes(40_000))
    live.with_name(live.name + "-shm").write_bytes(rng.randbytes(32_768))

    done = fs_card.run("feeds")

    assert " is damaged (" not in done.stderr, done.stderr
    assert set_aside_files(fs_card) == []
    assert set(seen_news(fs_card)) == news


def test_the_daemon_sets_a_damaged_live_database_aside_and_starts(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    first_run(fs_card, site, 2)
    news = set(seen_news(fs_card))
    damaged = damage_live(fs_card, _header_overwritten)

    daemon = start_daemon()
    wait_until(lambda: "feedsync daemon started" in daemon.output(), "the daemon's start")
    assert daemon.stop() == 0, daemon.output()

    set_aside_line(fs_card, daemon.output())
    assert fs_card.live_path.with_name("feedsync.db.damaged").read_bytes() == damaged
    assert set(seen_news(fs_card)) == news


def test_a_daemon_whose_live_database_is_damaged_while_it_runs_builds_it_again(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    """The RAM disk damaged under a running daemon (a page of `feeds` garbled, the WAL
    moved into the file first so that the daemon's next reading meets the page): the
    daemon opens the database again as a start would, which sets the live file aside and
    builds it from the card, and it goes on polling: new stories land, nothing is lost,
    no restart."""
    publish(site, "f.xml", 2)
    fs_card.configure(
        [site.url("/feeds/f.xml")],
        daemon={"tick": "1s"},
        poll={"interval": "1s", "min_interval": "1s", "max_interval": "2s"},
        storage={"save_interval": "1s"},
    )
    daemon = start_daemon()

    def titles() -> set[str]:
        try:
            return {t for _, t in seen_news(fs_card)}
        except sqlite3.OperationalError:  # not created yet, or being built again
            return set()

    wait_until(lambda: len(titles()) == 2, "the first stories")

    def saved() -> int:
        with sqlite3.connect(f"file:{fs_card.card_path}?mode=ro", uri=True) as card:
            months = [r[0] for r in card.execute("SELECT name FROM sqlite_master")]
            months = [name for name in months if re.fullmatch(r"news_\d{4}_\d\d", name)]
            return sum(card.execute(f"SELECT count(*) FROM {m}").fetchone()[0] for m in months)

    wait_until(lambda: saved() == 2, "the first stories saved to the card")
    live = fs_card.live_path
    conn = sqlite3.connect(live, timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        _garble_page_of("feeds")(live)
        # a write of another connection: the daemon's cached pages are stale, read again
        conn.execute("CREATE TABLE scratch (x)")
    finally:
        conn.close()
    publish(site, "f.xml", 3)
    wait_until(lambda: "Story 2" in titles(), "a new story")
    assert daemon.stop() == 0, daemon.output()
    set_aside_line(fs_card, daemon.output())
    assert {t for _, t in seen_news(fs_card)} == {"Story 0", "Story 1", "Story 2"}


def test_processes_starting_together_on_a_damaged_live_database_set_it_aside_once(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """The daemon and a cron run starting at the same moment: the card's lock lets one
    set it aside and build it again; the others find it whole."""
    first_run(fs_card, site, 2)
    news = set(seen_news(fs_card))
    damaged = damage_live(fs_card, _header_overwritten)

    started = [fs_card.start(*command) for command in (["run"], ["feeds"], ["status"], ["news"])]
    outcomes = [(p.wait(timeout=180), *p.communicate()) for p in started]

    assert [code for code, _, _ in outcomes] == [0, 0, 0, 0], outcomes
    said = [line for _, _, err in outcomes for line in err.splitlines() if " is damaged (" in line]
    assert len(said) == 1, said
    assert fs_card.live_path.with_name("feedsync.db.damaged").read_bytes() == damaged
    assert set(seen_news(fs_card)) == news


def test_a_damaged_live_database_another_process_has_open_is_not_set_aside(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """A process with the live database open works on that very file: another live
    database beside it would be two writers saving to one card. Refused in one line,
    until that process ends."""
    fs_card.configure([])
    fs_card.run("add", site.feed("f.xml", []))
    fs_card.run("save")
    live = fs_card.live_path
    in_use = files.acquire(files.lock_path(live), shared=True)  # what an open storage holds
    try:
        damaged = damage_live(fs_card, _header_overwritten)
        done = fs_card.run("feeds", expect=3)
        assert done.stderr.count("\n") == 1, done.stderr
        assert f"the live database {live} is damaged (" in done.stderr
        assert "another feedsync process has it open" in done.stderr
        assert live.read_bytes() == damaged and set_aside_files(fs_card) == []
    finally:
        os.close(in_use)
    done = fs_card.run("feeds")
    set_aside_line(fs_card, done.stderr)
    assert site.url("/feeds/f.xml") in done.stdout


def test_a_write_held_on_the_live_database_never_gets_it_set_aside(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """What the daemon does all day: a write transaction open while a cron run starts.
    The run judges the file while the write is held, waits for its turn, and goes on."""
    fs_card.configure([])
    fs_card.run("add", site.feed("f.xml", []))
    live = fs_card.live_path
    inode = live.stat().st_ino
    writer = sqlite3.connect(live, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO meta (key, value) VALUES ('written-meanwhile', '1')")
        status = fs_card.start("status")

        def judged() -> bool:  # it holds <live>.lock once the file was judged and kept
            try:
                os.close(files.acquire(files.lock_path(live), wait=False))
            except StorageError:
                return True
            return status.poll() is not None

        wait_until(judged, "the status command to be past the judging of the file")
        writer.execute("COMMIT")
    finally:
        writer.close()
    out, err = status.communicate(timeout=120)
    assert status.returncode == 0, err
    assert "feeds      1: 1 ok" in out
    assert " is damaged (" not in err and set_aside_files(fs_card) == []
    assert live.stat().st_ino == inode
    assert fs_card.scalar("SELECT value FROM meta WHERE key = 'written-meanwhile'") == "1"


def test_a_live_database_locked_by_another_program_is_not_set_aside(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """A lock says nothing about the file: busy is reported, never taken for damage."""
    fs_card.configure([])
    fs_card.run("add", site.feed("f.xml", []))
    live = fs_card.live_path
    before = live.read_bytes()
    holder = sqlite3.connect(live, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")  # no other connection may even read it now
        done = fs_card.run("feeds", expect=3)
        assert done.stderr.count("\n") == 1 and "database is locked" in done.stderr
        assert " is damaged (" not in done.stderr, done.stderr
        assert set_aside_files(fs_card) == []
    finally:
        holder.close()
    assert live.read_bytes() == before
    done = fs_card.run("feeds")
    assert " is damaged (" not in done.stderr and site.url("/feeds/f.xml") in done.stdout
    assert set_aside_files(fs_card) == []


def test_a_live_database_of_a_newer_feedsync_is_refused_not_set_aside(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    fs_card.configure([])
    fs_card.run("add", site.feed("f.xml", []))
    _in_sqlite("PRAGMA user_version = 99")(fs_card.live_path)
    done = fs_card.run("feeds", expect=3)
    assert "schema version 99, newer than this feedsync" in done.stderr, done.stderr
    assert set_aside_files(fs_card) == []


def test_a_damaged_live_database_without_its_card_is_refused_and_left_as_it_is(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """A card that is not mounted looks missing: nothing is built from nothing, and the
    damaged file waits for the card to come back."""
    fs_card.configure([])
    fs_card.run("add", site.feed("f.xml", []))
    fs_card.run("save")
    card = fs_card.card_path
    unmounted = card.parent.with_name("card-away")
    card.parent.rename(unmounted)
    damaged = damage_live(fs_card, _header_overwritten)

    done = fs_card.run("feeds", expect=3)

    assert done.stderr.count("\n") == 1, done.stderr
    assert f"the card database {card} is missing: is the card mounted?" in done.stderr
    assert fs_card.live_path.read_bytes() == damaged and set_aside_files(fs_card) == []
    assert {p.name for p in card.parent.iterdir()} <= {"feedsync.db.lock"}  # no new card
    shutil.rmtree(card.parent)
    unmounted.rename(card.parent)  # the card is back
    done = fs_card.run("feeds")
    set_aside_line(fs_card, done.stderr)
    assert site.url("/feeds/f.xml") in done.stdout


def test_the_tables_a_live_database_must_hold_are_those_it_is_built_with(
    store: SQLiteStorage, config: StorageConfig
) -> None:
    """sql/meta.sql's list, which judges a live database damaged, follows the schema."""
    newest = len(schema_steps())
    with sqlite3.connect(":memory:") as conn:
        needed = {r[0] for r in conn.execute(queries()["live_missing_tables"], {"version": newest})}
    built = {r[0] for r in live_rows(config, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert needed == built


# ---------------------------------------------------------------- a read-only card


def test_a_read_only_card_is_read_said_and_feedsync_runs_in_ram(
    fs_card: FeedsyncEnv, card_mount: CardMount, site: Site
) -> None:
    """An SD card the kernel remounted read-only after errors: a run still polls and
    extracts (in RAM), then exits 3 because nothing could be saved; reads work and
    `status` says it; after a reboot the live database is rebuilt from the read-only
    card; once the card is writable again the next run saves."""
    first_run(fs_card, site, 2)
    card = fs_card.card_path
    before = card.read_bytes()
    card_mount.remount("ro")

    publish(site, "f.xml", 4)
    done = fs_card.run("run", "--json", expect=3)
    assert json.loads(done.stdout)["snapshot"] == "not saved: the card is read-only"
    assert done.stderr.count("is mounted read-only") == 2, done.stderr  # at start, at the save
    assert done.stderr.splitlines()[-1].startswith("feedsync: storage error: not saved: ")
    titles = {a["title"] for a in json.loads(fs_card.run("news", "--json").stdout)}
    assert titles == {f"Story {n}" for n in range(4)}  # polled and extracted, in RAM
    saving = fs_card.run("save", expect=3)
    assert saving.stderr.count("\n") == 1 and "mounted read-only" in saving.stderr
    status = json.loads(fs_card.run("status", "--json").stdout)["storage"]
    assert "nothing can be saved to " in status["card_read_only"]
    assert status["unsaved_changes"] > 0
    assert "READ-ONLY the card's file system " in fs_card.run("status").stdout
    assert card.read_bytes() == before

    power_loss(fs_card)  # a reboot: the RAM disk is empty, the card still read-only
    feeds = fs_card.run("feeds")
    assert site.url("/feeds/f.xml") in feeds.stdout
    assert "restored " in feeds.stderr and "is mounted read-only" in feeds.stderr
    listed = json.loads(fs_card.run("news", "--json").stdout)
    assert {a["title"] for a in listed} == {"Story 0", "Story 1"}  # what the card holds
    shown = fs_card.run("show", str(listed[0]["id"])).stdout
    assert shown.startswith(listed[0]["title"] + "\n")
    assert "Story 0" in fs_card.run("search", "story").stdout
    assert len(fs_card.run("export").stdout.splitlines()) == 2
    assert card.read_bytes() == before

    card_mount.remount("rw")
    assert fs_card.run_json()["snapshot"] == "written"
    assert saved_news(fs_card) == {
        (site.url(f"/articles/story-{n}"), f"Story {n}") for n in range(4)
    }
    # the two saved stories were never fetched again; the two lost with the RAM were
    assert site.hits("/articles/story-0") == 1 and site.hits("/articles/story-3") == 2


def test_a_save_cut_on_a_card_now_read_only_is_refused_in_one_line(
    fs_card: FeedsyncEnv, card_mount: CardMount, site: Site
) -> None:
    """The errors that make the kernel remount the card read-only often cut a save: its
    journal stays, and cannot be rolled back on a read-only file system. feedsync says
    so in one line (exit 3) rather than read half a save; writable again, the save is
    rolled back and nothing of the saves before is lost."""
    first_run(fs_card, site, 3)
    card = fs_card.card_path
    journal = card.with_name(card.name + "-journal")
    conn = sqlite3.connect(card, isolation_level=None)
    conn.execute("PRAGMA cache_size = 1")  # the changes reach the file mid-transaction
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DELETE FROM feeds")
    conn.execute(  # enough to spill: the journal is synced, the file written over
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) "
        "INSERT INTO meta SELECT 'junk' || i, hex(randomblob(3000)) FROM n"
    )
    cut = card.read_bytes(), journal.read_bytes()  # what a power cut here leaves
    conn.execute("ROLLBACK")
    conn.close()
    card.write_bytes(cut[0])
    journal.write_bytes(cut[1])
    card_mount.remount("ro")
    power_loss(fs_card)

    refused = fs_card.run("feeds", expect=3)
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "holds an unfinished save (feedsync.db-journal)" in refused.stderr

    card_mount.remount("rw")
    assert len(json.loads(fs_card.run("news", "--json").stdout)) == 3
    assert site.url("/feeds/f.xml") in fs_card.run("feeds").stdout
    assert not journal.exists()


# ---------------------------------------------------------------- a failing write


def test_a_save_that_cannot_be_written_leaves_the_card_as_the_save_before(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """A save is written in place, in one transaction of the card's rollback journal:
    when its writes fail midway (here the card database may not grow: RLIMIT_FSIZE,
    as a full card refuses), the command fails in one line, exit 3, and the card is the
    previous save, whole; the next run that can write saves what waited."""
    publish(site, "f.xml", 150)
    # a small RAM budget keeps the live database and its log well under the card's size
    fs_card.configure([site.url("/feeds/f.xml")], storage={"ram_budget": "4MB"})
    fs_card.run("run")
    card = fs_card.card_path
    before = saved_news(fs_card)
    publish(site, "f.xml", 160)  # 10 more stories: the card must grow to take them
    limit = card.stat().st_size + 4096  # the live database stays under it

    def no_growth() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        fs_card.command("run"),
        capture_output=True,
        text=True,
        env=cli_env(fs_card.root / "home"),
        preexec_fn=no_growth,
        timeout=180,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.splitlines()[-1].startswith("feedsync: storage error: "), done.stderr
    with contextlib.closing(sqlite3.connect(f"file:{card}?mode=ro", uri=True)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert saved_news(fs_card) == before and len(before) == 150
    assert card_files(fs_card) == ["feedsync.db", "feedsync.db.lock"]  # no journal, no temporary

    assert fs_card.run_json()["snapshot"] == "written"
    assert len(saved_news(fs_card)) == 160
    assert set(site.article_hits().values()) == {1}


# ---------------------------------------------------------------- file modes


def test_the_databases_feedsync_creates_are_readable_by_their_owner_only(
    fs_card: FeedsyncEnv, site: Site
) -> None:
    """Under the umask 022 of a shell or cron, feedsync creates the card database (its
    journal takes its mode) and the live database 0600: no other local user reads them."""
    umask = os.umask(0o022)
    try:
        first_run(fs_card, site, 2)
        power_loss(fs_card)
        fs_card.run("feeds")  # the live database rebuilt from the card
    finally:
        os.umask(umask)
    for path in (fs_card.card_path, fs_card.live_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
