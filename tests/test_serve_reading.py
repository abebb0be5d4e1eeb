"""The storage reads ``feedsync serve`` pages through (Reading.news_window,
news_per_day, news_feeds_of), on both engines: pages in the listing's order that visit
every article once, the feed and folder filters, articles the card holds after a save,
and a page that costs the same in a database ten times as big."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from servedb import FEEDS, START, FeedSpec, extract_all, feed_ids, fill, grow, poll

from feedsync.records import Entry, NewsItem
from feedsync.storage import sql_reading
from feedsync.storage.base import SQLStorage
from feedsync.storage.sqlite import SQLiteStorage
from feedsync.storage_errors import UnknownArticle
from feedsync.timestamps import to_iso

ARTICLES = 60


@pytest.fixture
def store(opener: Callable[[], SQLStorage]) -> Iterator[SQLStorage]:
    storage = opener()
    yield storage
    storage.close()


@pytest.fixture(params=["links", "walk", "chosen"])
def plan(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A feed's page read by either plan of news_window (sql_reading.PLAN), by the feed's
    own links or by the walk through the newest articles, or by the one news_window
    chooses (feed_plan_marks). All must show the same pages."""
    monkeypatch.setattr(sql_reading, "PLAN", None if request.param == "chosen" else request.param)
    return str(request.param)


def listing_order(items: list[NewsItem]) -> list[int]:
    """The ids as news_list orders them: by their own date else the fetch time, newest
    first, then the id."""
    ordered = sorted(items, key=lambda i: (i.published or i.fetched_at, i.id), reverse=True)
    return [i.id for i in ordered]


def every_page(store: SQLStorage, size: int, **which: object) -> list[list[NewsItem]]:
    pages: list[list[NewsItem]] = []
    before: int | None = None
    while page := store.news_window(before=before, limit=size, **which):  # type: ignore[arg-type]
        pages.append(page)
        before = page[-1].id
        assert len(pages) < 1000, "paging does not end"
    return pages


def test_pages_visit_every_article_once_in_the_listing_order(store: SQLStorage) -> None:
    fill(store, ARTICLES)
    everything = list(store.export_news(""))
    pages = every_page(store, 7)
    seen = [item.id for page in pages for item in page]
    assert seen == listing_order(everything)
    assert len(set(seen)) == ARTICLES
    assert [len(p) for p in pages] == [7] * (ARTICLES // 7) + [ARTICLES % 7]
    first = store.news_window(limit=3)
    assert first == [store.news_get(i.id) for i in first]  # bodies are there by default
    assert all(item.body.startswith("Text of ") for item in first)
    assert all(item.body == "" for item in store.news_window(limit=3, bodies=False))
    assert store.news_list("", None, ARTICLES) == [i._replace(body="") for p in pages for i in p]


def test_a_feed_or_a_folder_pages_through_its_own_articles(store: SQLStorage, plan: str) -> None:
    ids = fill(store, ARTICLES)
    world, local, tech, letters = (ids[spec.url] for spec in FEEDS)
    for fid in (world, local, tech, letters):
        shown = [i.id for page in every_page(store, 4, feed_id=fid) for i in page]
        assert shown == [i.id for i in store.news_list("", fid, 1000)]
        assert shown and len(shown) == len(set(shown)) == store.news_count("", fid)
    news = {i.id for p in every_page(store, 5, category="News") for i in p}
    world_and_local = {i.id for f in (world, local) for i in store.news_list("", f, 1000)}
    assert news == world_and_local  # "News" covers "News/World", not "Newsletters"
    only_world = {i.id for p in every_page(store, 5, category="News/World") for i in p}
    assert only_world == {i.id for i in store.news_list("", world, 1000)}
    assert store.news_window(category="New", limit=10) == []
    assert store.news_window(feed_id=9999, limit=10) == []
    # a story two feeds carried is on both feeds' pages, once each
    both = store.news_feeds_of([i.id for i in store.news_window(limit=ARTICLES)])
    shared = [news_id for news_id, feeds in both.items() if len(feeds) == 2]
    assert shared and all(len(set(f[0] for f in both[n])) == 2 for n in shared)


def test_an_article_linked_as_a_revision_is_its_feeds_too(store: SQLStorage, plan: str) -> None:
    """A feed that carried only a revision of an article (linked, never fetched) lists
    the article: news_of_feed's rule, which news list --feed shows."""
    ids = fill(store, 8)
    tech = ids[FEEDS[2].url]
    before = {i.id for i in store.news_window(feed_id=tech, limit=100)}
    later = START.replace(day=20)
    revised = Entry("https://site.example/story/0", "Story 0 (updated)", to_iso(later))
    poll(store, tech, [revised], later)
    extract_all(store, later)
    shown = store.news_window(feed_id=tech, limit=100)
    assert {i.id for i in shown} >= before
    assert [i.id for i in shown] == [i.id for i in store.news_list("", tech, 100)]


def quiet_small_busy(store: SQLStorage) -> dict[str, int]:
    """FEEDS' articles (the busy ones) with a QUIET feed (3 articles, two months before
    the rest) and a SMALL one (3 among the newest), some of its stories carried by a busy
    feed too; on SQLite saved to the card halfway, so that every feed's articles are on
    both sides of the live/card boundary. Returns the feeds' ids by name."""
    ids = fill(store, ARTICLES)
    store.save(force=True)  # None on PostgreSQL: one database
    added = feed_ids(store, (QUIET, SMALL))
    long_ago = START - timedelta(days=60)
    quiet = [
        Entry(f"https://quiet.example/{n}", f"Quiet {n}", to_iso(long_ago + timedelta(hours=n)))
        for n in range(3)
    ]
    poll(store, added[QUIET.url], quiet, long_ago)
    later = START + timedelta(days=1)
    small = [Entry(f"https://small.example/{n}", f"Small {n}", None) for n in range(3)]
    poll(store, added[SMALL.url], small, later)
    poll(store, ids[FEEDS[0].url], small[:2], later)  # two of them in a busy feed too
    more = START + timedelta(days=2)
    for n, spec in enumerate(FEEDS * 3):  # newer than everything: the quiet feed's are deep
        late = Entry(f"https://site.example/late/{n}", f"Late {n}", to_iso(more))
        poll(store, ids[spec.url], [late], more + timedelta(minutes=n))
    extract_all(store, more)
    return {"quiet": added[QUIET.url], "small": added[SMALL.url], "busy": ids[FEEDS[0].url]}


def test_every_plan_gives_a_feed_the_pages_of_the_walk(
    store: SQLStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quiet feed, a small one and a busy one, paged 2 and 5 at a time across the
    live/card boundary: by the feed's own links, by the walk, and by the plan chosen, the
    same pages, each article once, in news_list's order."""
    feeds = quiet_small_busy(store)
    for name, fid in feeds.items():
        listed = [i.id for i in store.news_list("", fid, 1000)]
        assert len(listed) == {"quiet": 3, "small": 3}.get(name, len(listed)) > 0
        for size in (2, 5):
            pages = {}
            for forced in ("walk", "links", None):
                monkeypatch.setattr(sql_reading, "PLAN", forced)
                pages[forced] = [[i.id for i in p] for p in every_page(store, size, feed_id=fid)]
            assert pages["walk"] == pages["links"] == pages[None], (name, size)
            assert [i for p in pages[None] for i in p] == listed, (name, size)
    if isinstance(store, SQLiteStorage):
        monkeypatch.setattr(sql_reading, "PLAN", None)
        live = sqlite3_count(store.path.with_name("feedsync-live.db"))
        assert live < store.counts()["articles"]  # pages came from both files


def test_a_feeds_entries_are_its_links_counted_once(store: SQLStorage) -> None:
    """feeds' entry counts: every link once, whether the live database, the card or both
    hold it (after a save the live database keeps the last days' links, which the card
    holds too), and a feed removed counts nowhere, nor shows in the chart."""
    feeds = quiet_small_busy(store)

    def entries() -> dict[int, int]:
        return {f.id: f.entries for f in store.feed_health()}

    def linked() -> dict[int, int]:
        counted: dict[int, int] = {}
        for item in store.export_news(""):
            for fid, _, _ in store.news_feeds(item.id):
                counted[fid] = counted.get(fid, 0) + 1
        return counted

    before = entries()
    assert before[feeds["quiet"]] == before[feeds["small"]] == 3
    assert {fid: n for fid, n in before.items() if n} == linked()
    store.save(force=True)
    assert entries() == before
    gone = next(f.id for f in store.feed_health() if f.url == FEEDS[1].url)
    assert store.remove_feed(FEEDS[1].url)  # its links go from the live side; the card's
    after = entries()  # go with the next save
    assert after == {fid: n for fid, n in before.items() if fid != gone}
    charted = {fid for fid, _, _ in store.news_per_day(to_iso(START - timedelta(days=90)))}
    assert charted == {fid for fid, n in after.items() if n}


def test_a_page_after_an_unknown_article_says_so(store: SQLStorage) -> None:
    fill(store, 5)
    with pytest.raises(UnknownArticle, match="no article 123456"):
        store.news_window(before=123456, limit=5)


def test_articles_per_feed_and_day_of_fetching(store: SQLStorage) -> None:
    ids = fill(store, ARTICLES)
    per_day = store.news_per_day(to_iso(START))
    counted: dict[int, int] = {}
    for fid, day, n in per_day:
        assert day == START.strftime("%Y-%m-%d")  # an hour of articles: one day
        counted[fid] = counted.get(fid, 0) + n
    assert counted == {fid: store.news_count("", fid) for fid in ids.values()}
    assert store.news_per_day("2099-01-01T00:00:00Z") == []


def test_articles_the_card_holds_after_a_save_keep_their_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "feedsync.db"
    with SQLiteStorage.open(path) as store:
        fill(store, ARTICLES)
        before = [[i.id for i in p] for p in every_page(store, 9)]
        store.save(force=True)
        later = START.replace(day=2)
        poll(store, 1, [Entry("https://site.example/late", "Late", to_iso(later))], later)
        extract_all(store, later)
        after = [i.id for p in every_page(store, 9) for i in p]
        # a feed's pages, from both files, by both plans
        by_plan = {}
        for forced in ("links", "walk"):
            monkeypatch.setattr(sql_reading, "PLAN", forced)
            by_plan[forced] = [i.id for p in every_page(store, 4, feed_id=1) for i in p]
        assert by_plan["links"] == by_plan["walk"] == [i.id for i in store.news_list("", 1, 99)]
    assert after[1:] == [i for p in before for i in p]  # the newest is the new one
    live = sqlite3_count(path.with_name("feedsync-live.db"))
    assert live < ARTICLES  # most were read from the card


def sqlite3_count(live: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(live)
    try:
        return int(conn.execute("SELECT count(*) FROM news").fetchone()[0])
    finally:
        conn.close()


def steps_of(store: SQLiteStorage, read: Callable[[], object]) -> int:
    """The SQLite virtual machine's steps (in hundreds) a read costs: its work, whatever
    else loads the machine."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    store._conn.set_progress_handler(tick, 100)
    try:
        read()
    finally:
        store._conn.set_progress_handler(None, 100)
    return count[0]


QUIET = FeedSpec("https://quiet.example/feed", "Quiet", "Quiet")
SMALL = FeedSpec("https://small.example/feed", "Small", "Small")


def page_costs(folder: Path, grown: int) -> dict[str, int]:
    """The steps of each kind of page in 400 articles grown ``grown`` times, and two
    feeds added after growing, the same in both sizes: a QUIET one (5 articles, the last
    two months before the newest) and a SMALL one (4 articles among the newest 400)."""
    path = folder / "feedsync.db"
    with SQLiteStorage.open(path) as store:
        ids = fill(store, 400)
    grow(path.with_name("feedsync-live.db"), grown)
    with SQLiteStorage.open(path) as store:
        added = feed_ids(store, (QUIET, SMALL))
        long_ago = START - timedelta(days=60)
        poll(
            store,
            added[QUIET.url],
            [
                Entry(
                    f"https://quiet.example/{n}", f"Quiet {n}", to_iso(long_ago - timedelta(days=n))
                )
                for n in range(5)
            ],
            long_ago,
        )
        poll(
            store,
            added[SMALL.url],
            [
                Entry(
                    f"https://small.example/{n}",
                    f"Small {n}",
                    to_iso(START + timedelta(minutes=100 * n)),
                )
                for n in range(4)
            ],
            START,
        )
        extract_all(store, START)
        store.save(force=True)
        assert store.counts()["articles"] == 400 * grown + 9
        world = ids[FEEDS[0].url]
        last = store.news_window(limit=50)[-1].id
        costs = {
            "all": steps_of(store, lambda: store.news_window(limit=50)),
            "feed": steps_of(store, lambda: store.news_window(feed_id=world, limit=50)),
            "folder": steps_of(store, lambda: store.news_window(category="News", limit=50)),
            "next": steps_of(store, lambda: store.news_window(before=last, limit=50)),
        }
        for name, spec, count in (("quiet", QUIET, 5), ("small", SMALL, 4)):
            fid = added[spec.url]
            assert len(store.news_window(feed_id=fid, limit=50)) == count
            costs[name] = steps_of(store, lambda f=fid: store.news_window(feed_id=f, limit=50))
            sql_reading.PLAN = "walk"
            try:
                costs[f"{name} walked"] = steps_of(
                    store, lambda f=fid: store.news_window(feed_id=f, limit=50)
                )
            finally:
                sql_reading.PLAN = None
        return costs


def test_a_page_costs_the_same_in_a_database_ten_times_as_big(tmp_path: Path) -> None:
    """The same newest 400 articles, alone or with 3,600 older ones on the card: each
    kind of page (all, a feed, a folder, the next page) reads as many rows. Counted in
    the engine's steps, never in time; a page that read the whole table would cost 10x.
    A quiet or a small feed's page reads the feed's own links, found in the narrow links
    table read whole (no index by feed: it would cost every save to the card), so its
    cost grows with the links, not with the articles: a fraction of walking the newest
    articles for its own, which reads every article newer than its last (bench scenario
    11)."""
    (tmp_path / "small").mkdir()
    (tmp_path / "big").mkdir()
    small = page_costs(tmp_path / "small", 1)
    big = page_costs(tmp_path / "big", 10)
    for what in ("all", "feed", "folder", "next"):
        assert big[what] <= 1.5 * small[what] + 5, (what, small, big)
    for what in ("quiet", "small"):
        assert big[what] * 4 < big[f"{what} walked"], (what, big)
        assert big[f"{what} walked"] > 5 * small[f"{what} walked"], (what, small, big)


def test_a_search_count_is_the_number_of_hits_search_gives(store: SQLStorage) -> None:
    """search_count (a search page's "N found", made without snippets) counts the hits
    search gives for the same cap, on both engines; on SQLite across the card's index,
    a month's newest rows it has not indexed yet and the live database's."""
    fill(store, ARTICLES)
    if isinstance(store, SQLiteStorage):
        store.save(force=True)
        store._card_db().index_all(to_iso(START))
    later = START.replace(day=3)
    for n in range(5):  # not in the index yet: found by the scan
        poll(store, 1, [Entry(f"https://site.example/late/{n}", f"Late story {n}", None)], later)
    extract_all(store, later)
    expected = {
        "story": ARTICLES + 5,
        "late": 5,
        "story -late": ARTICLES,
        "story 1": 11 + 1,  # Story 1, 10-19; Late story 1
        '"7 story"': 0,  # the index finds its words; the phrase is not there
        "story OR nothing": ARTICLES + 5,
        "nothing": 0,
    }
    for query, total in expected.items():
        assert store.search_count(query, 1000) == total, query
        for cap in (1, 4, 11, 12, ARTICLES, ARTICLES + 6):
            # (search looks at cap * 4 candidates: "story -late" on PostgreSQL, newest
            # first, may find fewer than cap among them; the count says the same)
            hits = store.search(query, cap, ("[", "]"))
            assert store.search_count(query, cap) == len(hits), (query, cap)
    for cap in (1, 4, ARTICLES + 5, ARTICLES + 6):
        assert store.search_count("story", cap) == min(cap, ARTICLES + 5)


def test_one_feeds_name_and_a_folders_feeds_without_the_whole_list(store: SQLStorage) -> None:
    """feed_name and has_category (a feed's page, a category's full-text feed) say what
    feed_health's list of every feed says."""
    ids = fill(store, 8)
    world = ids[FEEDS[0].url]
    assert store.feed_name(world) == "World"  # its owner's title
    store.add_feed("https://untitled.example/feed", to_iso(START))
    untitled = max(f.id for f in store.feed_health())
    assert store.feed_name(untitled) == "https://untitled.example/feed"  # no title yet
    poll(store, untitled, [], START, title="Its own title")
    assert store.feed_name(untitled) == "Its own title"
    assert store.feed_name(untitled + 1000) is None
    for health in store.feed_health():
        assert store.feed_name(health.id) == (health.title or health.url)
    assert store.has_category("News") and store.has_category("News/World")
    assert store.has_category("Newsletters") and store.has_category("Tech")
    assert not store.has_category("New") and not store.has_category("News/Wor")
    assert not store.has_category("World")
