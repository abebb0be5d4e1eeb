"""Entries without a title (issue 43, item 1), through the real CLI.

A Mastodon account's feed is all such entries: RSS 2.0 items with a link and a
description and no <title> (tests/sitegen.py: ``mastodon_rss`` writes them as Mastodon
4.x does). Each is staged under the title '' (a key the same on every poll: an edited
post is still the one entry) and shown everywhere by the first line of its text
(feedsync/titles.py), else its page's title, else its URL.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

from conftest import FeedsyncEnv, Site
from sitegen import Toot, mastodon_rss

from feedsync import titles

RSS = "application/rss+xml; charset=utf-8"
NOW = datetime.now(UTC).replace(microsecond=0)

# A reply: Mastodon writes whom it answers as a paragraph of its own.
REPLY = (
    '<p><span class="h-card" translate="no"><a href="https://social.example/@board"'
    ' class="u-url mention">@<span>board</span></a></span> </p>'
    "<p>Harbour ferry timetable changes on Monday</p>"
    "<p>The council confirmed the winter timetable after the survey.</p>"
)
LONG = (
    "<p>I tried the new library opening hours for the first time yesterday and the volunteers"
    " said that the repairs after the storm are finished at last, so the school groups can"
    " come back.</p>"
)
TAGGED = (
    "<p>Island budget vote tonight &#x1f680;</p><p>"
    '<a href="https://social.example/tags/council" class="mention hashtag" rel="tag">'
    "#<span>council</span></a></p>"
)


def _toots(site: Site) -> list[Toot]:
    return [
        Toot(site.page("toot-reply"), NOW - timedelta(minutes=5), REPLY),
        Toot(site.page("toot-long"), NOW - timedelta(minutes=10), LONG),
        Toot(site.page("toot-tagged"), NOW - timedelta(minutes=15), TAGGED, tags=("council",)),
        # a picture alone: no text to be shown by, its page's title once fetched
        Toot(
            site.page("toot-photo", title="Sunset over the harbour"),
            NOW - timedelta(minutes=20),
            "",
            media=(("https://files.social.example/sunset.jpg", "The harbour at sunset"),),
        ),
        # its page is gone: the entry is listed as failed, by its text
        Toot(site.page("toot-gone", status=500), NOW - timedelta(minutes=25), "<p>Lost post</p>"),
    ]


def _serve(site: Site, toots: list[Toot]) -> str:
    profile = site.url("/@alice")
    body = mastodon_rss("Alice", "alice@social.example", profile, toots)
    return site.server.set("/@alice.rss", body, RSS)


def test_a_mastodon_feed_is_staged_and_shown_by_its_text_everywhere(
    fs: FeedsyncEnv, site: Site
) -> None:
    """Every post of a Mastodon feed (no <title> anywhere) is staged, extracted and shown
    by its first line of text (a reply's @mentions left out; a long line cut at a word),
    a picture alone by its page's title; never as an empty line, never skipped."""
    toots = _toots(site)
    feed = _serve(site, toots)
    fs.configure([feed], extract={"retry_backoff": "1h"})
    done = fs.run("run", expect=None)
    assert "skipped" not in done.stdout + done.stderr and "no title" not in done.stdout
    assert "4 articles extracted" in done.stdout, done.stdout

    # the key is (url, ''): the same on every poll, whatever the post's text
    staged = fs.query("SELECT url, title FROM news_summary ORDER BY id")
    assert [url for url, _ in staged] == [t.url for t in toots]
    assert {title for _, title in staged} == {""}

    long_title = titles.from_summary(LONG)
    assert long_title is not None and long_title.endswith("…")
    assert len(long_title) <= titles.UNTITLED_TITLE_CHARS + 1
    expected = {
        toots[0].url: "Harbour ferry timetable changes on Monday",
        toots[1].url: long_title,
        toots[2].url: "Island budget vote tonight \U0001f680",
        toots[3].url: "Sunset over the harbour",
    }
    stored = dict(fs.query("SELECT url, title FROM news"))
    assert stored.keys() == expected.keys()
    assert stored[toots[3].url].startswith(expected.pop(toots[3].url)), stored
    assert all(stored[url] == title for url, title in expected.items()), stored

    # news: one line per article, each with its title (as much as fits the line)
    listed = fs.run("news").stdout.splitlines()
    heads = [line for line in listed if line.startswith("[")]
    assert len(heads) == 4, listed
    for title in [*expected.values(), "Sunset over the harbour"]:
        assert any(f"  {title[:30]}" in line for line in heads), (title, listed)
    assert all(line.split("  ", 1)[1].strip() for line in heads), listed
    assert not any("@board" in line for line in listed)

    # news --state failed: the entry whose page failed, by its text
    failed = fs.run("news", "--state", "failed").stdout
    assert failed.splitlines()[0].endswith("  Lost post"), failed
    (entry,) = json.loads(fs.run("news", "--state", "failed", "--json").stdout)
    assert entry["title"] == "Lost post"

    # show, by URL and by id: the title first, then the text
    shown = fs.run("show", toots[0].url).stdout
    assert shown.splitlines()[0] == "Harbour ferry timetable changes on Monday", shown
    assert fs.run("show", toots[4].url).stdout.splitlines()[0] == "Lost post"

    # search: the hit is named by its title
    found = fs.run("search", "timetable").stdout
    assert "] Harbour ferry timetable changes on Monday" in found, found

    # export: every article has a title
    rows = list(csv.DictReader(io.StringIO(fs.run("export", "--format", "csv").stdout)))
    assert len(rows) == 4 and all(row["title"].strip() for row in rows)
    exported = [json.loads(line) for line in fs.run("export").stdout.splitlines()]
    assert {row["url"]: row["title"] for row in exported} == stored


def test_an_edited_post_is_not_a_new_article(fs: FeedsyncEnv, site: Site) -> None:
    """Mastodon lets a post be edited: the feed then carries the same link with another
    description. The entry's key is (url, ''), so the edit stages nothing new, and the
    page is not fetched a second time."""
    page = site.page("toot-edited")
    first = Toot(page, NOW - timedelta(minutes=5), "<p>Ferry strike on Monday</p>")
    feed = _serve(site, [first])
    fs.configure([feed])
    fs.run("run")
    edited = Toot(page, first.published, "<p>Ferry strike on Monday called off</p>")
    _serve(site, [edited])
    again = fs.run("run")
    assert "1 article extracted" not in again.stdout, again.stdout
    assert fs.query("SELECT count(*) FROM news_summary") == [(1,)]
    assert fs.query("SELECT title FROM news") == [("Ferry strike on Monday",)]
    assert site.hits("/articles/toot-edited") == 1


def test_a_titled_entry_that_loses_its_title_keeps_it(fs: FeedsyncEnv, site: Site) -> None:
    """The same URL once with a title, then without (a feed's template changed): a
    revision of the same article, which keeps the title it had, never takes ''; and a
    title given later replaces the one made from the text."""
    page, later = site.page("titled"), site.page("untitled-first")
    when = NOW - timedelta(minutes=5)
    feed = site.server.set(
        "/blog.xml",
        "<?xml version='1.0'?><rss version='2.0'><channel><title>Blog</title>"
        f"<item><title>Harbour reopens</title><link>{page}</link>"
        f"<pubDate>{when:%a, %d %b %Y %H:%M:%S} +0000</pubDate>"
        "<description>Text</description></item>"
        f"<item><link>{later}</link><pubDate>{when:%a, %d %b %Y %H:%M:%S} +0000</pubDate>"
        "<description>&lt;p&gt;A note on the ferry&lt;/p&gt;</description></item>"
        "</channel></rss>",
        RSS,
    )
    fs.configure([feed])
    fs.run("run")
    site.server.set(
        "/blog.xml",
        "<?xml version='1.0'?><rss version='2.0'><channel><title>Blog</title>"
        f"<item><link>{page}</link><pubDate>{when:%a, %d %b %Y %H:%M:%S} +0000</pubDate>"
        "<description>Text</description></item>"
        f"<item><title>Ferry note</title><link>{later}</link>"
        f"<pubDate>{when:%a, %d %b %Y %H:%M:%S} +0000</pubDate>"
        "<description>&lt;p&gt;A note on the ferry&lt;/p&gt;</description></item>"
        "</channel></rss>",
        RSS,
    )
    fs.run("run")
    assert sorted(fs.query("SELECT title FROM news")) == [("Ferry note",), ("Harbour reopens",)]
    assert site.hits("/articles/titled") == 1 and site.hits("/articles/untitled-first") == 1
    shown = fs.run("show", page).stdout
    assert shown.splitlines()[0] == "Harbour reopens"
    assert "same URL, new title" in shown
