"""End to end: `feedsync run` as a subprocess, a real HTTP server, a real database (an
SQLite file, and a database on a throwaway PostgreSQL server).

Each test is a situation a user meets with real feeds, and asserts what the user would
notice: which articles are in `news`, how often the site was asked for each page, what
the run printed and how it exited. Here: the whole pass (feedsync/pipeline.py); what
only one of its flows decides is in tests/test_polling.py and tests/test_articles.py.
"""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
import subprocess
import threading
from datetime import timedelta

import pytest
from conftest import BACKENDS, FeedsyncEnv, Site, cli_env, hours, news_titles, wait_until
from sitegen import Item

# Every test on both engines: the pipeline does not know which one it talks to.
pytestmark = pytest.mark.parametrize("backend", BACKENDS, indirect=True)


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


def test_a_due_run_with_nothing_due_asks_nothing_and_starts_no_pass(
    fs: FeedsyncEnv, site: Site
) -> None:
    """Cron's `run --due` every 5 minutes mostly finds no feed due and no article to
    retry: it asks the server nothing and starts no pass (its event loop and HTTP
    clients were most of such a run's CPU: httpx is not imported, nor asyncio or
    hashlib on SQLite). An article whose retry time has come is fetched all the same, the feed
    left alone."""
    flaky = site.page("flaky", status=500)
    feed = site.feed(
        "news.xml",
        [Item("Fine story", site.page("fine"), hours(1)), Item("Flaky", flaky, hours(2))],
    )
    fs.configure([feed], extract={"retry_backoff": "1h"})
    first = fs.run_json("--due")  # never polled: due
    assert (first["staged"], first["extracted"], first["extract_failed"]) == (2, 1, 1)
    feed_hits, flaky_hits = site.hits("/feeds/news.xml"), site.hits("/articles/flaky")

    done = subprocess.run(
        fs.command("run", "--due", "--json"),
        capture_output=True,
        text=True,
        env={**cli_env(fs.root / "home"), "PYTHONPROFILEIMPORTTIME": "1"},
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    idle = json.loads(done.stdout)
    assert (idle["feeds"], idle["not_modified"], idle["extracted"]) == (0, 0, 0), idle
    assert (site.hits("/feeds/news.xml"), site.hits("/articles/flaky")) == (feed_hits, flaky_hits)
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert "httpx" not in imported
    assert fs.url is not None or "asyncio" not in imported  # (psycopg imports asyncio)
    # nor OpenSSL's hashes (~7 ms of such a run): a fingerprint is the only use, and the
    # lease owners' random part is os.urandom (secrets imports hashlib through hmac)
    assert fs.url is not None or not imported & {"hashlib", "secrets", "hmac"}

    site.page("flaky")  # the page mended, and its retry time come
    retry_now = "UPDATE news_summary SET next_attempt_at = '2000-01-01T00:00:00Z'"
    if fs.url is not None:
        import psycopg

        with psycopg.connect(fs.url, autocommit=True) as pg:
            pg.execute(retry_now)
    else:
        with sqlite3.connect(fs.live_path) as conn:
            conn.execute(retry_now)
    retried = fs.run_json("--due")
    assert (retried["feeds"], retried["extracted"]) == (0, 1), retried
    assert site.hits("/feeds/news.xml") == feed_hits
    assert site.hits("/articles/flaky") == flaky_hits + 1
    assert news_titles(fs) == ["Fine story", "Flaky"]


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


def test_a_stopped_pass_leaves_no_request_behind(fs: FeedsyncEnv, site: Site) -> None:
    """A stop (the daemon's SIGTERM) with one slow page in flight and more waiting for
    the host's only slot: when the pass returns, none of its article tasks is left to
    run on (it would send on a closed connection pool, or take a host's turn for a pass
    that is over). In this process, to see the tasks themselves."""
    from feedsync import config as config_module
    from feedsync.pass_plan import PassPlan, PassRuntime
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
    run = Pass(
        PassPlan(),
        PassRuntime(config, storage, PlainProgress(out=io.StringIO(), err=err), stop=stop),
    )

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
        run.context.close_lane()
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
    from feedsync.pass_plan import PassPlan, PassRuntime
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

    async def extract(
        self: Extractor, body: bytes, url: str, *rest: object, **options: object
    ) -> object:
        if url.endswith("/cursed-page"):
            raise KeyError("boom")
        return await real_extract(self, body, url, *rest, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(fetch, "get", get)
    monkeypatch.setattr(Extractor, "extract", extract)
    fs.configure([cursed, fine])
    config = config_module.load(str(fs.config_path))
    storage = open_storage(config.storage)
    err = io.StringIO()
    try:
        storage.sync_config_feeds(config_module.feed_urls(config), "2026-01-01T00:00:00Z")
        stats = Pass(
            PassPlan(save=True),
            PassRuntime(config, storage, PlainProgress(out=io.StringIO(), err=err)),
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
