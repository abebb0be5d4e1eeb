"""Reading.content_key, which ``feedsync serve`` tags its pages and feeds with: on both
engines it moves with every change a reader would see (an article, a feed's links, a
feed's names, a feed enabled or gone; on SQLite a save and retention on the card), stays
put for poll bookkeeping and the daemon's heartbeat, and is the same after the storage
is closed and opened again (an ETag outlives a server that exited idle)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from servedb import FEEDS, START, extract_all, fill, poll

from feedsync.records import Entry, ListedFeed
from feedsync.storage.base import SQLStorage
from feedsync.storage.sqlite import SQLiteStorage
from feedsync.timestamps import to_iso


class Keys:
    """The storage's key, and what each step did to it."""

    def __init__(self, store: SQLStorage):
        self.store = store
        self.last = store.content_key()

    def moved(self, step: Callable[[], object]) -> bool:
        step()
        key = self.store.content_key()
        changed, self.last = key != self.last, key
        return changed


def test_the_key_moves_with_what_a_reader_sees_and_only_with_that(
    opener: Callable[[], SQLStorage],
) -> None:
    world, local = FEEDS[0].url, FEEDS[1].url
    store = opener()
    try:
        ids = fill(store, 20)
        keys = Keys(store)
        assert store.content_key() == keys.last  # read twice, nothing between
        later = START + timedelta(hours=2)
        # poll bookkeeping, the heartbeat: the same key
        assert not keys.moved(lambda: poll(store, ids[world], [], later))
        assert not keys.moved(lambda: store.daemon_heartbeat(1, "pi", to_iso(START), to_iso(later)))
        # a new article (its entry, its link, then its text)
        story = Entry("https://site.example/new", "New story", to_iso(later))
        assert keys.moved(lambda: poll(store, ids[world], [story], later))
        assert keys.moved(lambda: extract_all(store, later))
        # a link of an article to a second feed
        assert keys.moved(lambda: poll(store, ids[local], [story], later))
        # the feed's own title; the owner's title; the folder; enabled
        assert keys.moved(lambda: poll(store, ids[world], [], later, title="World News"))
        listed = {world: ListedFeed()}
        store.sync_config_feeds(listed, to_iso(later))  # the feed becomes the config's
        keys.last = store.content_key()
        assert keys.moved(
            lambda: store.sync_config_feeds({world: ListedFeed(title="Mine")}, to_iso(later))
        )
        assert keys.moved(
            lambda: store.sync_config_feeds(
                {world: ListedFeed(title="Mine", category="Elsewhere")}, to_iso(later)
            )
        )
        assert not keys.moved(
            lambda: store.sync_config_feeds(
                {world: ListedFeed(title="Mine", category="Elsewhere")}, to_iso(later)
            )
        )
        assert keys.moved(lambda: store.disable_feed(local, "test"))
        assert keys.moved(lambda: store.remove_feed(FEEDS[2].url))
        if not isinstance(store, SQLiteStorage):  # SQLite's retention is on the card: below
            assert keys.moved(lambda: store.prune(to_iso(later), None))  # articles deleted
        kept = store.content_key()
    finally:
        store.close()
    # the same content, read by a new storage: the same key
    store = opener()
    try:
        assert store.content_key() == kept
    finally:
        store.close()


def test_the_card_side_moves_the_key_on_sqlite(tmp_path: Path) -> None:
    """A save (rows moved to the card, the RAM disk's copies let go) and retention on the
    card (a month's table dropped: the live database's counter is left as it was) move
    the key; a save with nothing to write does not; a reopened storage reads the same."""
    path = tmp_path / "feedsync.db"
    with SQLiteStorage.open(path) as store:
        store.clock = lambda: START + timedelta(days=1)  # saves file by this clock's month
        ids = fill(store, 20)
        keys = Keys(store)
        assert keys.moved(lambda: store.save(force=True))
        assert not keys.moved(store.save)  # nothing changed since
        december = START.replace(month=12, day=3)
        story = Entry("https://site.example/december", "December", to_iso(december))
        poll(store, ids[FEEDS[0].url], [story], december)
        extract_all(store, december)
        store.clock = lambda: december
        assert keys.moved(lambda: store.save(force=True))
        before = len(store.news_list("", None, 99))
        # November's table goes, December's (the newest) stays
        assert keys.moved(lambda: store.prune(to_iso(december), None))
        assert len(store.news_list("", None, 99)) < before
        kept = store.content_key()
    with SQLiteStorage.open(path) as store:
        assert store.content_key() == kept
