"""End to end: `feedsync run` as a subprocess, a real HTTP server, a real database (an
SQLite file, and a database on a throwaway PostgreSQL server).

Each test is a situation a user meets with real feeds, and asserts what the user would
notice: which articles are in `news`, how often the site was asked for each page, what
the run printed and how it exited.
"""

from __future__ import annotations

import asyncio
import io
import threading
from datetime import UTC, datetime, timedelta

import pytest
import sitegen
from conftest import BACKENDS, FeedsyncEnv, Site, wait_until
from sitegen import Item

# Every test on both engines: the pipeline does not know which one it talks to.
pytestmark = pytest.mark.parametrize("backend", BACKENDS, indirect=True)

NOW = datetime.now(UTC).replace(microsecond=0)


def hours(n: float) -> datetime:
    return NOW - timedelta(hours=n)


def news_titles(fs: FeedsyncEnv) -> list[str]:
    return sorted(row[0] for row in fs.query("SELECT title FROM news"))


def test_category_feeds_carrying_one_article_store_it_once(fs: FeedsyncEnv, site: Site) -> None:
    shared = site.page("budget-vote", "Council passes the budget")
    politics = site.feed(
        "politics.xml",
        [
            Item("Council passes the budget", shared, hours(2)),
            Item("Mayor resigns", site.page("mayor"), hours(3)),
        ],
        fmt="rss2",
    )
    local = site.feed(
        "local.atom",
        [
            # same url and title, published minutes later in the other category feed
            Item("Council passes the budget", shared, hours(2) + timedelta(minutes=7)),
            Item("New bakery opens", site.page("bakery"), hours(4)),
        ],
        fmt="atom",
    )
    world = site.feed(
        "world.rdf", [Item("Tide gauge installed", site.page("tide"), hours(1))], fmt="rdf"
    )
    fs.configure([politics, local, world])

    fs.run("run")

    assert news_titles(fs) == [
        "Council passes the budget",
        "Mayor resigns",
        "New bakery opens",
        "Tide gauge installed",
    ]
    assert site.hits("/articles/budget-vote") == 1
    assert all(n == 1 for n in site.article_hits().values()), site.article_hits()
    links = fs.query(
        "SELECT f.url FROM feed_entries fe JOIN feeds f ON f.id = fe.feed_id "
        "JOIN news_summary s ON s.id = fe.summary_id WHERE s.title = ?",
        "Council passes the budget",
    )
    assert sorted(url for (url,) in links) == sorted([politics, local])
    body = fs.scalar("SELECT body FROM news WHERE title = 'Mayor resigns'")
    assert len(body.split()) > 100 and "All rights reserved" not in body


def test_entry_too_old_for_one_feed_still_lands_from_another(fs: FeedsyncEnv, site: Site) -> None:
    busy = site.feed("busy.xml", [Item("Fresh news", site.page("fresh"), hours(1))])
    quiet = site.feed("quiet.xml", [Item("Old news", site.page("old"), hours(24 * 5))])
    fs.configure([busy, quiet], poll={"lookback": "24h"})
    fs.run("run")

    # an entry published 3 days ago appears in both feeds: older than busy's
    # latest_published minus the lookback, newer than quiet's
    late = Item("Late report", site.page("late"), hours(24 * 3))
    site.feed("busy.xml", [Item("Fresh news", site.url("/articles/fresh"), hours(1)), late])
    site.feed("quiet.xml", [Item("Old news", site.url("/articles/old"), hours(24 * 5)), late])
    fs.run("run")

    assert "Late report" in news_titles(fs)
    carriers = fs.query(
        "SELECT f.url FROM feed_entries fe JOIN feeds f ON f.id = fe.feed_id "
        "JOIN news_summary s ON s.id = fe.summary_id WHERE s.title = 'Late report'"
    )
    # busy's cut-off skipped it (the optimisation works), quiet staged it
    assert [url for (url,) in carriers] == [quiet]
    assert site.hits("/articles/late") == 1


def test_entries_without_dates_land_once(fs: FeedsyncEnv, site: Site) -> None:
    undated = [Item("Undated one", site.page("u1")), Item("Undated two", site.page("u2"))]
    feed = site.feed("undated.rdf", undated, fmt="rdf")
    fs.configure([feed])
    fs.run("run")
    # the feed changes (so no 304): the undated entries are offered again, plus a new one
    site.feed("undated.rdf", [*undated, Item("Undated three", site.page("u3"))], fmt="rdf")
    fs.run("run")

    assert news_titles(fs) == ["Undated one", "Undated three", "Undated two"]
    assert fs.query("SELECT count(*), count(published) FROM news_summary") == [(3, 0)]
    assert site.article_hits() == {"/articles/u1": 1, "/articles/u2": 1, "/articles/u3": 1}


def test_second_run_with_nothing_new_parses_nothing_and_fetches_nothing(
    fs: FeedsyncEnv, site: Site
) -> None:
    feeds = [
        site.feed(f"f{n}.xml", [Item(f"Story {n}", site.page(f"s{n}"), hours(n))], fmt=fmt)
        for n, fmt in enumerate(["rss2", "atom", "rdf"])
    ]
    fs.configure(feeds)
    first = fs.run_json()
    assert (first["parsed"], first["staged"], first["extracted"]) == (3, 3, 3)
    hits_after_first = site.article_hits()

    second = fs.run_json()

    assert second["not_modified"] == 3
    assert second["parsed"] == 0
    assert (second["staged"], second["extracted"]) == (0, 0)
    assert sum(site.server.not_modified.values()) == 3  # the server said 304 three times
    assert site.article_hits() == hits_after_first


def test_spellings_of_one_url_land_as_one_row(fs: FeedsyncEnv, site: Site) -> None:
    site.server.set("/articles/caf%C3%A9", sitegen.article_page("Café news", "cafe"))
    base = site.url("/articles/")
    spellings = [
        base + "café?utm_source=rss&utm_medium=feed",
        base + "caf%c3%a9#comments",
        base + "caf%C3%A9?fbclid=abc123",
        base.replace("http://", "HTTP://") + "caf%C3%A9",
    ]
    feeds = [
        site.feed(f"f{n}.xml", [Item("Café news", link, hours(1))])
        for n, link in enumerate(spellings)
    ]
    fs.configure(feeds)

    fs.run("run")

    assert fs.query("SELECT url FROM news_summary") == [(base + "caf%C3%A9",)]
    assert fs.scalar("SELECT count(*) FROM feed_entries") == 4
    assert site.hits("/articles/caf%C3%A9") == 1


def test_failing_article_is_retried_on_a_later_run(fs: FeedsyncEnv, site: Site) -> None:
    feed = site.feed("f.xml", [Item("Flaky page", site.page("flaky", status=500), hours(1))])
    fs.configure([feed])

    first = fs.run("run")
    assert "HTTP 500" in first.stderr and "/articles/flaky" in first.stderr
    assert fs.query("SELECT state, attempts FROM news_summary") == [("failed", 1)]
    assert news_titles(fs) == []

    site.page("flaky")  # the site recovers
    fs.run("run")
    assert fs.query("SELECT state, attempts FROM news_summary") == [("done", 2)]
    assert news_titles(fs) == ["Flaky page"]
    assert site.hits("/articles/flaky") == 2


def test_article_that_keeps_failing_is_given_up_as_gone(fs: FeedsyncEnv, site: Site) -> None:
    feed = site.feed("f.xml", [Item("Broken page", site.page("broken", status=500), hours(1))])
    fs.configure([feed], extract={"max_attempts": 3})

    states = []
    for _ in range(4):
        fs.run("run")
        states.append(fs.query("SELECT state, attempts FROM news_summary")[0])

    assert states == [("failed", 1), ("failed", 2), ("gone", 3), ("gone", 3)]
    assert site.hits("/articles/broken") == 3  # never asked again once gone
    assert "HTTP 500" in fs.scalar("SELECT last_error FROM news_summary")


def test_retry_waits_for_its_backoff(fs: FeedsyncEnv, site: Site) -> None:
    feed = site.feed("f.xml", [Item("Flaky page", site.page("flaky", status=500), hours(1))])
    fs.configure([feed], extract={"retry_backoff": "1h"})
    fs.run("run")
    site.page("flaky")
    fs.run("run")  # within the hour: not asked again
    assert site.hits("/articles/flaky") == 1
    due = fs.scalar("SELECT next_attempt_at FROM news_summary")
    assert due > NOW.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_broken_feeds_do_not_stop_the_others(fs: FeedsyncEnv, site: Site) -> None:
    good = site.feed("good.xml", [Item("Good story", site.page("good"), hours(1))])
    html = site.server.set(
        "/feeds/page.html", "<html><body><p>hello</p></body></html>", "text/html"
    )
    truncated = site.server.set(
        "/feeds/cut.xml", '<?xml version="1.0"?><rss version="2.0"><ch', "application/rss+xml"
    )
    error = site.server.set("/feeds/error.xml", "oops", "text/plain", status=500)
    missing = site.url("/feeds/missing.xml")
    # malformed (an unescaped &) but readable: its entries still land
    bozo = site.server.set(
        "/feeds/bozo.xml",
        '<?xml version="1.0"?><rss version="2.0"><channel><title>Bozo & co</title>'
        f"<item><title>Readable anyway</title><link>{site.page('bozo')}</link>"
        f"<pubDate>{hours(1).strftime('%a, %d %b %Y %H:%M:%S +0000')}</pubDate></item>"
        "</channel></rss>",
        "application/rss+xml",
    )
    fs.configure([html, truncated, error, missing, good, bozo])

    done = fs.run("run")

    assert news_titles(fs) == ["Good story", "Readable anyway"]
    for url in (html, truncated, error, missing):
        assert url in done.stderr
    failing = dict(fs.query("SELECT url, last_error FROM feeds WHERE error_count = 1"))
    assert set(failing) == {html, truncated, error, missing}
    assert "HTTP 500" in failing[error] and "HTTP 404" in failing[missing]
    assert "not a feed" in failing[html]


def test_future_dated_entry_cannot_hide_the_next_ones(fs: FeedsyncEnv, site: Site) -> None:
    future = Item("Dated next month by mistake", site.page("future"), NOW + timedelta(days=30))
    feed = site.feed("f.xml", [future])
    fs.configure([feed])
    fs.run("run")
    latest = fs.scalar("SELECT latest_published FROM feeds")
    assert latest <= datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # clamped

    site.feed("f.xml", [future, Item("Published two hours ago", site.page("next"), hours(2))])
    fs.run("run")

    assert "Published two hours ago" in news_titles(fs)


def test_two_runs_started_together_fetch_every_article_once(fs: FeedsyncEnv, site: Site) -> None:
    # 12 category feeds over 30 articles, each article in three feeds; the feeds answer
    # slowly so that the two runs really overlap
    articles = [(f"Story number {n}", site.page(f"story-{n}")) for n in range(30)]
    feeds = []
    for f in range(12):
        items = [
            Item(title, url, hours(n % 20))
            for n, (title, url) in enumerate(articles)
            if n % 12 in (f, (f + 1) % 12, (f + 5) % 12)
        ]
        feeds.append(
            site.feed(f"cat{f}.xml", items, fmt=["rss2", "atom", "rdf"][f % 3], delay=0.05)
        )
    fs.configure(feeds, poll={"concurrency": 4, "per_host": 2})

    for round_ in range(3):
        if round_:  # new stories appear between rounds
            extra = [(f"Round {round_} story {n}", site.page(f"r{round_}-{n}")) for n in range(5)]
            for f in range(12):
                items = [
                    Item(t, u, hours(n % 20))
                    for n, (t, u) in enumerate(articles)
                    if n % 12 in (f, (f + 1) % 12, (f + 5) % 12)
                ]
                items += [Item(t, u, hours(0.5)) for t, u in extra]
                site.feed(f"cat{f}.xml", items, fmt=["rss2", "atom", "rdf"][f % 3], delay=0.05)
            articles += extra
        runs = [fs.start("run") for _ in range(2)]
        outputs = [run.communicate(timeout=180) for run in runs]
        for run, (out, err) in zip(runs, outputs, strict=True):
            assert run.returncode == 0, err
            assert "locked" not in out + err and "busy" not in out + err, out + err

    assert len(articles) == 40
    assert fs.scalar("SELECT count(*) FROM news") == 40
    assert fs.scalar("SELECT count(DISTINCT url) FROM news") == 40
    hits = site.article_hits()
    assert len(hits) == 40 and set(hits.values()) == {1}, hits
    # every feed was polled in every round, by one process or both (a feed that one run
    # is polling is skipped by the other: tests/test_multiprocess.py)
    assert all(3 <= site.hits(f"/feeds/cat{f}.xml") <= 6 for f in range(12))


def test_non_html_article_pages_are_given_up_at_once(fs: FeedsyncEnv, site: Site) -> None:
    pdf = site.server.set("/articles/report.pdf", b"%PDF-1.4 binary", "application/pdf")
    feed = site.feed(
        "f.xml",
        [Item("Annual report", pdf, hours(1)), Item("Normal story", site.page("normal"), hours(1))],
    )
    fs.configure([feed])
    done = fs.run("run")
    assert "not an HTML page (application/pdf)" in done.stderr
    assert fs.query("SELECT title, state, attempts FROM news_summary ORDER BY title") == [
        ("Annual report", "gone", 1),
        ("Normal story", "done", 1),
    ]
    fs.run("run")
    assert site.hits("/articles/report.pdf") == 1


def test_a_stopped_pass_leaves_no_request_behind(fs: FeedsyncEnv, site: Site) -> None:
    """A stop (the daemon's SIGTERM) with one slow page in flight and more waiting for
    the host's only slot: when the pass returns, none of its article tasks is left to
    run on (it would send on a closed connection pool, or take a host's turn for a pass
    that is over). In this process, to see the tasks themselves."""
    from feedsync import config as config_module
    from feedsync.pipeline import Pass
    from feedsync.progress import PlainProgress
    from feedsync.storage import open_storage

    items = [Item(f"Story {n}", site.page(f"story-{n}", delay=1.0), hours(n)) for n in range(4)]
    fs.configure([site.feed("slow.xml", items)], poll={"concurrency": 4, "per_host": 1})
    config = config_module.load(str(fs.config_path))
    storage = open_storage(config.storage)
    storage.sync_config_feeds(config_module.feed_urls(config), "2026-01-01T00:00:00Z")
    stop = threading.Event()
    err = io.StringIO()
    run = Pass(config, storage, PlainProgress(out=io.StringIO(), err=err), stop=stop)

    def stop_at_the_first_page() -> None:
        wait_until(lambda: sum(site.article_hits().values()) >= 1, "a page request")
        stop.set()

    async def the_pass() -> list[asyncio.Task[object]]:
        await run._run_until_stopped()
        return [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]

    stopper = threading.Thread(target=stop_at_the_first_page)
    stopper.start()
    try:
        left = asyncio.run(the_pass())
    finally:
        stopper.join()
        run._lane.shutdown(wait=True)
        storage.release_leases(run.owner)
        storage.close()
    assert left == [], left
    assert "closed" not in err.getvalue(), err.getvalue()
    # the next run fetches what this one did not get to
    fs.run("run")
    assert news_titles(fs) == sorted(f"Story {n}" for n in range(4))
    assert sorted(site.article_hits().values()) in ([1, 1, 1, 1], [1, 1, 1, 2])


def test_an_unforeseen_exception_stays_with_its_feed_or_its_article(
    fs: FeedsyncEnv, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Containment (issue 20): an exception no stage foresaw (here: a library bug, which
    cannot be produced on purpose, so it is injected) is recorded on the one feed or
    article it hit, and the pass goes on to the others and to its save."""
    from feedsync import config as config_module
    from feedsync import fetch
    from feedsync.extract import Extractor
    from feedsync.pipeline import Pass
    from feedsync.progress import PlainProgress
    from feedsync.storage import open_storage

    cursed = site.feed("cursed.xml", [Item("Never read", site.page("never"), hours(1))])
    fine = site.feed(
        "fine.xml",
        [
            Item("Fine story", site.page("fine"), hours(1)),
            Item("Cursed page", site.page("cursed-page"), hours(2)),
        ],
    )
    real_get, real_extract = fetch.get, Extractor.extract

    async def get(client: object, url: str, **options: object) -> fetch.Response:
        if url == cursed:
            raise RuntimeError("a library bug\nwith a second line")
        return await real_get(client, url, **options)  # type: ignore[arg-type]

    async def extract(self: Extractor, body: bytes, url: str, *rest: object) -> object:
        if url.endswith("/cursed-page"):
            raise KeyError("boom")
        return await real_extract(self, body, url, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(fetch, "get", get)
    monkeypatch.setattr(Extractor, "extract", extract)
    fs.configure([cursed, fine])
    config = config_module.load(str(fs.config_path))
    storage = open_storage(config.storage)
    err = io.StringIO()
    try:
        storage.sync_config_feeds(config_module.feed_urls(config), "2026-01-01T00:00:00Z")
        stats = Pass(
            config, storage, PlainProgress(out=io.StringIO(), err=err), snapshot=True
        ).run()
    finally:
        storage.close()
    assert stats.feed_errors == 1 and stats.extracted == 1 and stats.extract_failed == 1
    assert "unexpected RuntimeError: a library bug" in err.getvalue()
    assert fs.scalar("SELECT last_error FROM feeds WHERE url = ?", cursed) == (
        "unexpected RuntimeError: a library bug"
    )
    assert fs.query(
        "SELECT state, attempts, last_error FROM news_summary WHERE title = ?", "Cursed page"
    ) == [("failed", 1, "unexpected KeyError: 'boom'")]
    assert news_titles(fs) == ["Fine story"]
    # the next run (the bug gone) brings the rest, each page once
    monkeypatch.undo()
    fs.run("run")
    assert news_titles(fs) == ["Cursed page", "Fine story", "Never read"]
    assert sorted(site.article_hits().values()) == [1, 1, 2]
