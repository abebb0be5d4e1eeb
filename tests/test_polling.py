"""The feeds' polls (feedsync/polling.py), end to end: `feedsync run` as a subprocess, a
real HTTP server, a real database (an SQLite file, and a database on a throwaway
PostgreSQL server).

What a user notices of the polls: which entries land (late, undated, spelled several
ways, future-dated), and that one broken feed does not stop the others.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sitegen
from conftest import BACKENDS, NOW, FeedsyncEnv, Site, hours, news_titles
from sitegen import Item

# Every test on both engines: the pipeline does not know which one it talks to.
pytestmark = pytest.mark.parametrize("backend", BACKENDS, indirect=True)


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
