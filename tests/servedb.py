"""Databases of articles for the ``feedsync serve`` tests, filled through the storage's
own calls (a feed's poll recorded, its entries claimed and their articles saved, as a
pass does), and grown tenfold by copying its rows into the past with SQL (saving tens of
thousands of articles one transaction at a time would take the suite minutes)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from feedsync.records import Article, Entry, PollIntent
from feedsync.storage.base import SQLStorage
from feedsync.timestamps import to_iso

START = datetime(2026, 11, 1, tzinfo=UTC)
LEASE = "2099-01-01T00:00:00Z"


class FeedSpec(NamedTuple):
    url: str
    category: str | None
    title: str


FEEDS = (
    FeedSpec("https://world.example/feed", "News/World", "World"),
    FeedSpec("https://local.example/feed", "News", "Local"),
    FeedSpec("https://tech.example/feed", "Tech", "Tech"),
    FeedSpec("https://letters.example/feed", "Newsletters", "Letters"),
)


def feed_ids(store: SQLStorage, feeds: Sequence[FeedSpec] = FEEDS) -> dict[str, int]:
    for spec in feeds:
        store.add_feed(spec.url, to_iso(START), category=spec.category, title=spec.title)
    return {f.url: f.id for f in store.feeds_to_poll() if f.url in {s.url for s in feeds}}


def poll(
    store: SQLStorage,
    feed_id: int,
    entries: Sequence[Entry],
    now: datetime,
    title: str = "Feed",
) -> None:
    """One poll of ``feed_id`` that staged ``entries``."""
    at = to_iso(now)
    store.record_poll(
        PollIntent(
            feed_id=feed_id,
            polled_at=at,
            entries=tuple(entries),
            newest_published="",
            warning=None,
            feed_title=title,
            etag=None,
            last_modified=None,
            next_poll_at=at,
            owner="test",
            lease_until=LEASE,
        )
    )


def extract_all(store: SQLStorage, now: datetime, body: str = "Text of {title}.") -> int:
    """Save an article for every staged entry, as the extraction stage would."""
    at = to_iso(now)
    done = 0
    while jobs := store.claim_articles("test", 0, LEASE, at, LEASE, 500):
        for job in jobs:
            text = body.format(title=job.title, url=job.url)
            store.save_article(job.id, Article(text=text, author="Ann"), job.published, at)
            done += 1
    return done


def fill(
    store: SQLStorage, articles: int, feeds: Sequence[FeedSpec] = FEEDS, start: datetime = START
) -> dict[str, int]:
    """``articles`` articles, one a minute from ``start``, dealt to the feeds in turn;
    every seventh also carried by the next feed (one story in two category feeds), every
    eleventh without a date of its own. Returns the feeds' ids by URL."""
    ids = feed_ids(store, feeds)
    order = [ids[spec.url] for spec in feeds]
    for first in range(0, articles, 200):
        batch = range(first, min(first + 200, articles))
        carried: dict[int, list[Entry]] = {fid: [] for fid in order}
        for n in batch:
            when = start + timedelta(minutes=n)
            entry = Entry(
                url=f"https://site.example/story/{n}",
                title=f"Story {n}",
                published=None if n % 11 == 0 else to_iso(when),
            )
            carried[order[n % len(order)]].append(entry)
            if n % 7 == 0:
                carried[order[(n + 1) % len(order)]].append(entry)
        now = start + timedelta(minutes=batch[-1] + 1)
        for fid, entries in carried.items():
            if entries:
                poll(store, fid, entries, now)
        extract_all(store, now)
    return ids


def grow(live: Path, times: int) -> None:
    """Copy every article of the live database ``times - 1`` times further into the past
    (a month a copy, each its own URL), links included: a database ``times`` as big
    whose newest articles are the same. On a closed database; a save then takes the
    copies to the card."""
    conn = sqlite3.connect(live)
    try:
        with conn:
            top = conn.execute(
                "SELECT max(id) FROM (SELECT id FROM news UNION ALL SELECT id FROM news_summary)"
            ).fetchone()[0]
            for copy in range(1, times):
                off = copy * (top + 1)
                back = f"-{copy * 31} days"
                conn.execute(
                    "INSERT INTO news_summary (id, url, title, published, first_seen_at, state)"
                    " SELECT id + :off, url || '?copy=' || :copy, title, "
                    " strftime('%Y-%m-%dT%H:%M:%SZ', published, :back),"
                    " strftime('%Y-%m-%dT%H:%M:%SZ', first_seen_at, :back), state"
                    " FROM news_summary WHERE id <= :top",
                    {"off": off, "copy": copy, "back": back, "top": top},
                )
                conn.execute(
                    "INSERT INTO feed_entries (feed_id, summary_id, first_seen_at)"
                    " SELECT feed_id, summary_id + :off, first_seen_at FROM feed_entries"
                    " WHERE summary_id <= :top",
                    {"off": off, "top": top},
                )
                conn.execute(
                    "INSERT INTO news (id, summary_id, url, title, published, feed_title,"
                    " author, language, body, fetched_at)"
                    " SELECT id + :off, summary_id + :off, url || '?copy=' || :copy, title,"
                    " strftime('%Y-%m-%dT%H:%M:%SZ', published, :back), feed_title, author,"
                    " language, body, strftime('%Y-%m-%dT%H:%M:%SZ', fetched_at, :back)"
                    " FROM news WHERE id <= :top",
                    {"off": off, "copy": copy, "back": back, "top": top},
                )
    finally:
        conn.close()
