"""The article queue (feedsync/articles.py), end to end: `feedsync run` as a subprocess, a
real HTTP server, a real database (an SQLite file, and a database on a throwaway
PostgreSQL server).

What a user notices of the queue: a page that fails is retried on a later run after its
backoff, given up as gone after the last attempt, at once when it is not HTML.
"""

from __future__ import annotations

import pytest
import sitegen
from conftest import BACKENDS, NOW, FeedsyncEnv, Site, hours, news_titles
from sitegen import Item

# Every test on both engines: the pipeline does not know which one it talks to.
pytestmark = pytest.mark.parametrize("backend", BACKENDS, indirect=True)


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


RUSSIAN_MONTHS = (
    "января", "февраля", "марта", "апреля", "мая", "июня",
    "июля", "августа", "сентября", "октября", "ноября", "декабря",
)  # fmt: skip


def test_the_pages_date_stands_in_only_for_an_entry_its_feed_left_undated(
    fs: FeedsyncEnv, site: Site
) -> None:
    """Two pages dated only in Russian words, three days ago: the entry without a date
    in its feed is stored with the page's date (the worker searched it the extensive
    way), the one with a date keeps the feed's (the worker did not look hard: see
    feedsync.extract._date_search)."""
    day = hours(72)
    words = f"{day.day} {RUSSIAN_MONTHS[day.month - 1]} {day.year}, 14:30"
    items = []
    for slug in ("undated", "dated"):
        paragraphs = "".join(f"<p>{p}</p>" for p in sitegen.prose(slug, 4, 4))
        page = (
            f'<html lang="ru"><head><title>{slug}</title></head><body><article>'
            f'<h1>{slug}</h1><div class="meta">{words}</div>{paragraphs}</article></body></html>'
        )
        url = site.server.set(f"/articles/{slug}", page.encode(), "text/html; charset=utf-8")
        items.append(Item(slug, url, None if slug == "undated" else hours(1)))
    fs.configure([site.feed("f.xml", items)])
    fs.run("run")
    assert fs.query("SELECT title, substr(published, 1, 10) FROM news ORDER BY title") == [
        ("dated", hours(1).strftime("%Y-%m-%d")),
        ("undated", day.strftime("%Y-%m-%d")),
    ]
