"""Conditional GET in ``feedsync serve`` as a polling reader meets it, on both engines:
a page or a feed document asked again with its ETag (or, for a feed document, its
Last-Modified) is a 304 decided from the storage's content_key before any article is
read (on SQLite the statements the storage ran say so); after a new article, a feed
renamed or moved to another folder, or articles removed by retention, the same tag gets
a 200 with what changed. Through the server's own route table (feedsync/serve/routes.py),
handlers called with real requests on real databases. And a search beyond 300 hits.

The freshness window ([serve] fresh): within it, the tag an URL's answer carried is a
304 without any statement at all, though an article was stored since; after it (the
window's clock injected), the key decides again. The other tests here set fresh = "0s"
(``Client``): they follow each change as soon as it is stored."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import feedparser
import httpx
import lxml.html
import pytest
from conftest import BACKENDS, FeedsyncEnv
from servedb import FEEDS, START, extract_all, fill, poll
from serving import Serving

from feedsync import config as config_module
from feedsync.records import Entry, ListedFeed
from feedsync.serve import routes, web
from feedsync.storage.base import SQLStorage
from feedsync.storage.sqlite import SQLiteStorage
from feedsync.timestamps import to_iso

BASE = "http://127.0.0.1:8765"
ARTICLES = 40


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLStorage]:
    opened: SQLStorage
    if request.param == "sqlite":
        opened = SQLiteStorage.open(tmp_path / "feedsync.db")
    else:
        from feedsync.storage.postgresql import PostgreSQLStorage

        opened = PostgreSQLStorage.open(request.getfixturevalue("pg_url"))
    yield opened
    opened.close()


class Client:
    """A reader of one server's answers: the real route table, as ``feedsync serve``
    builds it from a config (the default's but ``[serve] fresh``), on one storage.

    ``fresh``: "0s" by default here, no freshness window, so that every request with a
    tag asks the key (these tests follow each change as it is stored); the window's own
    tests set it, with ``clock`` (seconds) the window's clock."""

    def __init__(
        self, store: SQLStorage, fresh: str = "0s", clock: Callable[[], float] | None = None
    ) -> None:
        self.store = store
        config = config_module.from_dict({"serve": {"fresh": fresh}})
        self.route = routes.router(config, clock=clock or time.monotonic)

    def get(self, target: str, **headers: str) -> web.Response:
        split = urlsplit(target)
        found = self.route(split.path)
        assert found is not None, target
        request = web.Request(
            "GET",
            split.path,
            dict(parse_qsl(split.query)),
            {k.replace("_", "-"): v for k, v in headers.items()},
            BASE,
            None,
        )
        return found.handler(self.store, request)

    def traced(self, target: str, **headers: str) -> tuple[web.Response, list[str] | None]:
        """The answer, and the SQL statements the storage ran for it (SQLite's trace;
        None on PostgreSQL, which has no such hook here)."""
        if not isinstance(self.store, SQLiteStorage):
            return self.get(target, **headers), None
        ran: list[str] = []
        self.store._conn.set_trace_callback(ran.append)
        try:
            return self.get(target, **headers), ran
        finally:
            self.store._conn.set_trace_callback(None)


def tag(response: web.Response) -> str:
    assert response.status == 200, response
    return dict(response.headers)["ETag"]


def targets(store: SQLStorage, ids: dict[str, int]) -> list[str]:
    world = ids[FEEDS[0].url]
    newest = store.news_window(limit=1)[0].id
    second_page = store.news_window(limit=31)[-2].id
    return [
        "/",
        f"/?feed={world}",
        "/?category=News",
        f"/?before={second_page}",
        f"/article/{newest}",
        "/search?q=story",
        "/search?q=story&page=2",
        "/feeds/all.atom",
        f"/feeds/{world}.json",
        "/feeds/category/News.atom",
        "/feeds.opml",
    ]


def test_an_unchanged_page_or_feed_is_a_304_without_reading_an_article(
    store: SQLStorage,
) -> None:
    ids = fill(store, ARTICLES)
    client = Client(store)
    for target in targets(store, ids):
        first = client.get(target)
        etag = tag(first)
        assert first.body
        again, ran = client.traced(target, if_none_match=etag)
        assert (again.status, again.body) == (304, b""), target
        assert dict(again.headers)["ETag"] == etag
        if ran is not None:  # the key alone: one statement, on meta
            assert len(ran) == 1 and "meta" in ran[0], (target, ran)
            _, full = client.traced(target)  # the observable can fail
            assert full and any("news" in s or "feeds" in s for s in full), target
        other = client.get(target, if_none_match='"something-else"')
        assert other.status == 200 and other.body == first.body, target


class Clock:
    """The freshness window's clock, moved by the test: seconds."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def store_new_article(store: SQLStorage, world: int, title: str) -> None:
    """An article stored as the daemon's pass stores one: the database's key moves."""
    later = START + timedelta(days=2)
    poll(store, world, [Entry(f"https://site.example/{title}", title, None)], later)
    extract_all(store, later)


def test_within_the_window_a_repeat_tag_is_a_304_without_any_read(store: SQLStorage) -> None:
    """[serve] fresh = 1m: a request with the tag an URL's answer carried less than a
    minute ago is a 304 though an article was stored since (the daemon's pass): the
    storage is not asked at all, not even for its key; Cache-Control says how long is
    left of the minute. After the minute the key decides: the 200 with the new article
    (and a key-checked 304 for an unchanged database starts a new minute)."""
    ids = fill(store, ARTICLES)
    world = ids[FEEDS[0].url]
    clock = Clock()
    client = Client(store, fresh="1m", clock=clock)
    watched = targets(store, ids)
    first = {target: client.get(target) for target in watched}
    for target, answer in first.items():
        assert dict(answer.headers)["Cache-Control"] == "private, max-age=60", target
    dated = {t: dict(first[t].headers)["Last-Modified"] for t in watched if ".atom" in t}

    store_new_article(store, world, "Stored during the minute")
    clock.now += 20
    for target in watched:
        again, ran = client.traced(target, if_none_match=tag(first[target]))
        assert (again.status, again.body) == (304, b""), target
        assert dict(again.headers)["ETag"] == tag(first[target])
        assert dict(again.headers)["Cache-Control"] == "private, max-age=40", target
        assert ran in ([], None), (target, ran)  # no statement at all
    for target, date in dated.items():  # If-Modified-Since alone, a feed reader's way
        since, ran = client.traced(target, if_modified_since=date)
        assert since.status == 304 and ran in ([], None), (target, ran)
    # the window answers only a tag it gave: another is asked of the storage, and a
    # request without one reads as ever (the new article is there)
    other = client.get("/feeds/all.atom", if_none_match='"an-older-tag"')
    assert titles_of(other)[0] == "Stored during the minute"
    assert titles_of(client.get("/?category=News"))[0] == "Stored during the minute"

    clock.now += 40  # the minute is over: the key decides
    for target in ("/", f"/?feed={world}", "/feeds/all.atom", f"/feeds/{world}.json"):
        after, ran = client.traced(target, if_none_match=tag(first[target]))
        assert titles_of(after)[0] == "Stored during the minute", target
        assert dict(after.headers)["Cache-Control"] == "private, max-age=60"
        if ran is not None:
            assert any("meta" in s for s in ran) and len(ran) > 1, (target, ran)
    assert "Stored during the minute" in titles_of(
        client.get("/search?q=minute", if_none_match=tag(first["/search?q=story"]))
    )

    # nothing stored since: the key's 304 after a window starts the next one
    now_tag = tag(client.get("/feeds/all.atom"))
    clock.now += 61
    keyed, ran = client.traced("/feeds/all.atom", if_none_match=now_tag)
    assert keyed.status == 304 and dict(keyed.headers)["Cache-Control"] == "private, max-age=60"
    if ran is not None:
        assert len(ran) == 1 and "meta" in ran[0], ran
    clock.now += 30
    store_new_article(store, world, "Stored in the next minute")
    windowed, ran = client.traced("/feeds/all.atom", if_none_match=now_tag)
    assert windowed.status == 304 and ran in ([], None), ran


def test_with_fresh_0s_every_tag_asks_the_key(store: SQLStorage) -> None:
    """[serve] fresh = "0s": no window, today's conditional GET: the key read for every
    request with a tag, the new article's 200 right after it is stored, and
    Cache-Control no-cache (a client asks every time)."""
    ids = fill(store, ARTICLES)
    world = ids[FEEDS[0].url]
    client = Client(store, fresh="0s", clock=Clock())
    first = client.get("/feeds/all.atom")
    assert dict(first.headers)["Cache-Control"] == "private, no-cache"
    again, ran = client.traced("/feeds/all.atom", if_none_match=tag(first))
    assert again.status == 304 and dict(again.headers)["Cache-Control"] == "private, no-cache"
    if ran is not None:
        assert len(ran) == 1 and "meta" in ran[0], ran
    store_new_article(store, world, "Stored right now")
    assert titles_of(client.get("/feeds/all.atom", if_none_match=tag(first)))[0] == (
        "Stored right now"
    )


def test_the_real_server_says_its_window_and_ends_it(fs: FeedsyncEnv) -> None:
    """Through the real command ([serve] fresh = "2s", its real clock): a feed document
    says its window in Cache-Control; polled with its tag after an article was stored,
    it is a 304 (saying what is left of the window) until the window is over, then the
    200 with the article (a deadline far beyond the window, no timing asserted)."""
    fs.configure(serve={"fresh": "2s"})
    store = SQLiteStorage.open(fs.db_path)
    try:
        world = fill(store, 10)[FEEDS[0].url]
        running = Serving(fs, "serve", "--listen", "127.0.0.1:0", stub=False).started()
        try:
            with httpx.Client(base_url=running.base, timeout=30, trust_env=False) as client:
                first = client.get("/feeds/all.atom")
                assert first.status_code == 200
                assert first.headers["cache-control"] == "private, max-age=2"
                store_new_article(store, world, "Stored while served")
                deadline = time.monotonic() + 60
                while True:
                    answer = client.get(
                        "/feeds/all.atom", headers={"If-None-Match": first.headers["etag"]}
                    )
                    if answer.status_code != 304:
                        break
                    assert answer.headers["etag"] == first.headers["etag"]
                    assert answer.headers["cache-control"] in (
                        "private, max-age=0",
                        "private, max-age=1",
                        "private, max-age=2",
                    )
                    assert time.monotonic() < deadline, "the window never ended"
                    time.sleep(0.2)
                assert answer.status_code == 200
                assert answer.headers["cache-control"] == "private, max-age=2"
                titles = [e.title for e in feedparser.parse(answer.content).entries]
                assert titles[0] == "Stored while served"
        finally:
            code, errors = running.stop()
            assert code == 0, errors
    finally:
        store.close()


def test_the_window_remembers_a_few_hundred_urls_the_oldest_dropped() -> None:
    """web.Recent: per URL (path, query, base, token), 512 at most by default."""
    clock = Clock()
    recent = web.Recent(timedelta(minutes=1), size=2, clock=clock)

    def url(path: str, token: str | None = None, **query: str) -> web.Request:
        return web.Request("GET", path, query, {}, BASE, token)

    recent.put(url("/a"), '"a"', None, clock.now)
    recent.put(url("/a", page="2"), '"a2"', None, clock.now)
    assert recent.get(url("/a", token="t")) is None  # another URL: its links differ
    recent.put(url("/b"), '"b"', None, clock.now)
    assert recent.get(url("/a")) is None  # the oldest, dropped
    found = recent.get(url("/a", page="2"))
    assert found is not None and found[0].etag == '"a2"'
    clock.now += 60
    assert recent.get(url("/b")) is None  # a minute after: over


def test_a_feed_document_since_its_last_modified_is_a_304_without_a_read(
    store: SQLStorage,
) -> None:
    ids = fill(store, ARTICLES)
    client = Client(store)
    for target in ("/feeds/all.atom", f"/feeds/{ids[FEEDS[1].url]}.json"):
        first = client.get(target)
        date = dict(first.headers)["Last-Modified"]
        answer, ran = client.traced(target, if_modified_since=date)
        assert (answer.status, answer.body) == (304, b""), target
        assert dict(answer.headers)["Last-Modified"] == date
        if ran is not None:
            assert len(ran) == 1 and "meta" in ran[0], (target, ran)
        assert client.get(target, if_modified_since="Sun, 01 Nov 2020 00:00:00 GMT").status == 200


def titles_of(response: web.Response) -> list[str]:
    """The articles' titles a reader sees on a page or in a feed document."""
    assert response.status == 200, response
    if response.content_type.startswith("text/html"):
        tree = lxml.html.document_fromstring(response.body)
        return [" ".join(e.text_content().split()) for e in tree.xpath("//li/a[@class='title']")]
    if response.content_type.startswith("application/feed+json"):
        return [item["title"] for item in json.loads(response.body)["items"]]
    return [entry.title for entry in feedparser.parse(response.body).entries]


def test_what_changed_comes_back_for_the_tag_of_before(store: SQLStorage) -> None:
    ids = fill(store, ARTICLES)
    world, local = ids[FEEDS[0].url], ids[FEEDS[1].url]
    client = Client(store)
    watched = targets(store, ids)
    tags = {target: tag(client.get(target)) for target in watched}

    def changed(target: str) -> web.Response:
        answer = client.get(target, if_none_match=tags[target])
        assert answer.status == 200, (target, answer.status)
        tags[target] = tag(answer)
        return answer

    def unchanged(target: str, etag: str) -> None:
        assert client.get(target, if_none_match=etag).status == 304, target

    # a new article, in the feed World
    later = START + timedelta(days=2)
    poll(store, world, [Entry("https://site.example/new", "Brand new story", None)], later)
    extract_all(store, later)
    for target in ("/", f"/?feed={world}", "/?category=News", "/feeds/all.atom"):
        assert titles_of(changed(target))[0] == "Brand new story", target
    assert titles_of(changed(f"/feeds/{world}.json"))[0] == "Brand new story"
    assert "Brand new story" in titles_of(changed("/search?q=story"))

    # the feed renamed by its owner (the config file's title for it)
    now = to_iso(later)
    store.sync_config_feeds({FEEDS[0].url: ListedFeed(title="Renamed", category="News/World")}, now)
    page = changed(f"/?feed={world}")
    assert b"News from Renamed" in page.body
    assert json.loads(changed(f"/feeds/{world}.json").body)["title"] == "feedsync: Renamed"
    assert b'text="Renamed"' in changed("/feeds.opml").body
    assert "Renamed" in [t["label"] for e in feeds_of(changed("/feeds/all.atom")) for t in e]

    # ... and moved to another folder: no longer in News
    store.sync_config_feeds({FEEDS[0].url: ListedFeed(title="Renamed", category="Sports")}, now)
    in_news = {i.id for i in store.news_window(category="News", limit=1000)}
    assert in_news == {i.id for i in store.news_window(feed_id=local, limit=1000)}
    listed = changed("/?category=News")
    assert "Brand new story" not in titles_of(listed)
    assert "Brand new story" not in titles_of(changed("/feeds/category/News.atom"))
    assert b"Sports" in changed("/feeds.opml").body

    # articles removed by retention: they go from the feed documents that held them,
    # and the oldest one's page is gone (on SQLite retention drops a month of the card)
    cut = START + timedelta(days=1)  # fill's articles, not the new one
    if isinstance(store, SQLiteStorage):
        store.clock = lambda: cut  # saves file by this clock's month: November
        store.save(force=True)
        cut = START.replace(month=12, day=3)
        story = Entry("https://site.example/december", "December story", to_iso(cut))
        poll(store, world, [story], cut)
        extract_all(store, cut)
        store.clock = lambda: cut
        store.save(force=True)  # December's, the newest month: it stays
    oldest = f"/article/{min(i.id for i in store.news_window(limit=1000, bodies=False))}"
    for target in ("/feeds/all.atom", oldest):
        tags[target] = tag(client.get(target))
    held = titles_of(client.get("/feeds/all.atom"))
    removed, _ = store.prune(to_iso(cut), None)
    assert removed > 0
    left = titles_of(changed("/feeds/all.atom"))
    assert left == [i.title for i in store.news_window(limit=100)]
    assert "Story 39" in held and "Story 39" not in left and len(left) < len(held)
    assert client.get(oldest, if_none_match=tags[oldest]).status == 404

    # the key is the database's, not a page's: every page got a new tag, and each is
    # a 304 again for its new one
    for target in ("/?category=News", "/feeds.opml", f"/feeds/{local}.json"):
        unchanged(target, tag(client.get(target)))


def feeds_of(response: web.Response) -> list[list[dict[str, str]]]:
    """The feeds each entry of an Atom document names as its categories."""
    return [list(entry.get("tags", [])) for entry in feedparser.parse(response.body).entries]


def test_a_search_beyond_300_hits_says_so_and_pages_to_the_last(store: SQLStorage) -> None:
    """The count goes to 300 without a snippet (Reading.search_count); page 11 of a
    search of 310 hits counts them all and shows the last 10."""
    fill(store, 310)
    client = Client(store)

    def page(target: str) -> tuple[str, int, bool]:
        answer = client.get(target)
        assert answer.status == 200, target
        tree = lxml.html.document_fromstring(answer.body)
        (count,) = tree.xpath("//p[@class='count']")
        more = bool(tree.xpath("//a[contains(@class, 'next')]"))
        return " ".join(count.text_content().split()), len(titles_of(answer)), more

    assert page("/search?q=story") == ("More than 300 articles found.", 30, True)
    assert page("/search?q=story&page=10") == ("More than 300 articles found.", 30, True)
    assert page("/search?q=story&page=11") == ("310 articles found.", 10, False)
    assert page('/search?q="story 30"') == ("11 articles found.", 11, False)  # 30, 300-309
