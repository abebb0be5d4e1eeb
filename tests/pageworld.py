"""A database for the web page's tests (tests/test_serve_pages.py, and the real
browser's, tests/test_serve_browser.py): articles over a month in two feeds, hostile
titles, bodies and links, a failed and a given-up article, a failing feed and a disabled
one, written through the storage's own calls as a pass would."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from conftest import FeedsyncEnv

from feedsync import config as config_module
from feedsync import timestamps
from feedsync.config import Config
from feedsync.records import FAILED, Article, Entry, FailureOutcome, PollIntent
from feedsync.storage import Storage, open_storage

NOW = timestamps.now().replace(microsecond=0)


def iso(hours_ago: float) -> str:
    return timestamps.to_iso(NOW - timedelta(hours=hours_ago))


# What a feed or a page may carry to a web page: markup, script, event handlers, links
# that run code, quotes that leave an attribute, a mark that looks like a search's.
HOSTILE_TITLES = [
    "<script>alert('title')</script>",
    '"><img src=x onerror="alert(1)">',
    "Ferry <b>bold</b> & 'quoted' \"double\"",
    "</title></head><body onload=alert(2)>",
    "\x01marked\x02 \ue000private\ue001 \u202eright-to-left",
    "<svg onload=alert(3)><a xlink:href='javascript:alert(4)'>x</a></svg>",
]
HOSTILE_BODY = (
    "First paragraph with <script>alert('body')</script> in it.\n"
    'Second: <a href="javascript:alert(5)">click</a> & <iframe src=//evil.example>\n'
    "\n"
    "Third, after an empty line: \x1b[31mred\x1b[0m and harbour words."
)
HOSTILE_URLS = ["javascript:alert(6)", "data:text/html,<script>alert(7)</script>"]

STORIES = 65  # more than two pages


def body_of(n: int) -> str:
    topic = ("harbour ferry timetable", "council budget meeting", "storm over the bay")[n % 3]
    return (
        f"Story {n} opens with the {topic} as its first words.\n"
        f"The second paragraph of story {n} says more about the {topic}.\n"
        f"A last paragraph closes story {n}."
    )


@dataclass
class World:
    env: FeedsyncEnv
    config: Config
    news_feed: int
    other_feed: int
    failing_feed: int
    disabled_feed: int
    article_ids: list[int]  # every article stored, any order
    hostile_ids: dict[str, int]  # title -> article id
    hostile_url_ids: list[int]


def _stage(
    storage: Storage, feed_id: int, entries: list[Entry], title: str, owner: str = "T"
) -> list[int]:
    record = storage.record_poll(
        PollIntent(
            feed_id=feed_id,
            polled_at=iso(0),
            next_poll_at=timestamps.to_iso(NOW + timedelta(hours=1)),
            entries=tuple(entries),
            feed_title=title,
            owner=owner,
            lease_until=timestamps.to_iso(NOW + timedelta(minutes=15)),
        )
    )
    return list(record.created_ids)


def _extract_all(storage: Storage, texts: dict[str, Article]) -> dict[int, str]:
    """Every row leased to the test saved as its article; returns article id -> URL."""
    jobs = storage.claim_articles(
        "T", 0, iso(0), iso(0), timestamps.to_iso(NOW + timedelta(minutes=15)), 10_000
    )
    for job in jobs:
        # fetched soon after it was published, as a pass polling every few minutes does
        storage.save_article(job.id, texts[job.url], job.published, job.published or iso(0))
    by_url: dict[int, str] = {}
    for job in jobs:
        item = storage.news_get(job.url)
        assert item is not None
        by_url[item.id] = job.url
    return by_url


def build(env: FeedsyncEnv) -> World:
    """Two feeds of articles (65 stories over 32 days, hostile titles, bodies and
    links), a failed and a given-up article, a failing feed and a disabled one, in
    ``env``'s database (configured already), filled through the storage as a pass
    would."""
    config = config_module.load(str(env.config_path))
    with open_storage(config.storage) as storage:
        ids = {}
        for url in (
            "https://news.example/feed",
            "https://other.example/rss",
            "https://broken.example/feed",
            "https://gone.example/feed",
        ):
            storage.add_feed(url, iso(200))
            found = storage.feed_id(url)
            assert found is not None
            ids[url] = found
        news, other, broken, gone = ids.values()
        texts: dict[str, Article] = {}
        entries: dict[int, list[Entry]] = {news: [], other: []}
        for n in range(STORIES):
            url = f"https://news.example/story-{n}"
            # two a day, back over 32 days: the chart's 28 days hold most, not all
            entries[news if n % 4 else other].append(Entry(url, f"Story {n}", iso(n * 12 + 1)))
            texts[url] = Article(text=body_of(n), author=f"Reporter {n % 5}", language="en")
        hostile_urls = []
        for i, title in enumerate(HOSTILE_TITLES):
            url = f"https://news.example/hostile-{i}"
            entries[news].append(Entry(url, title, iso(0.5 + i / 10)))
            texts[url] = Article(text=HOSTILE_BODY, author='<b onclick="x()">Eve</b>')
        for i, url in enumerate(HOSTILE_URLS):
            entries[other].append(Entry(url, f"Link that runs code {i}", iso(0.2)))
            texts[url] = Article(text="A page whose link is not http.")
            hostile_urls.append(url)
        _stage(storage, news, entries[news], "Harbour News <i>daily</i>")
        _stage(storage, other, entries[other], "Other Times")
        stored = _extract_all(storage, texts)
        # articles that failed: one to be tried again, one given up
        failing = _stage(
            storage,
            news,
            [
                Entry("https://news.example/fails", "A page that fails <now>", iso(3)),
                Entry("https://news.example/given-up", "A page given up", iso(4)),
            ],
            "Harbour News <i>daily</i>",
        )
        storage.claim_articles(
            "T", 0, iso(0), iso(0), timestamps.to_iso(NOW + timedelta(minutes=15)), 10
        )
        retry_at = timestamps.to_iso(NOW + timedelta(hours=2))
        storage.record_extract_failure(
            failing[0], "T", FailureOutcome("failed", 2, retry_at, "HTTP 503 <from> the server")
        )
        storage.record_extract_failure(
            failing[1], "T", FailureOutcome("gone", 5, None, "cannot resolve given-up.example")
        )
        # a feed failing in a row, and one disabled
        for _ in range(config.poll.failing_after):
            storage.record_poll(
                PollIntent(broken, iso(1), iso(-1), FAILED, error="HTTP 500 <b>Internal</b> Error")
            )
        storage.disable_feed("https://gone.example/feed", "HTTP 410 Gone: the feed was removed")
        by_title = {storage.news_get(u).title: i for i, u in stored.items()}  # type: ignore[union-attr]
        return World(
            env=env,
            config=config,
            news_feed=news,
            other_feed=other,
            failing_feed=broken,
            disabled_feed=gone,
            article_ids=list(stored),
            hostile_ids={t: by_title[t] for t in HOSTILE_TITLES},
            hostile_url_ids=[i for i, u in stored.items() if u in HOSTILE_URLS],
        )
