"""Feeds named and filed in the config, one feed polled now, a feed added while it is
down, and ``add`` asking a server for a feed once (issue 43, items 2-4): each through the
real CLI, as a subprocess, against feeds on a local HTTP server."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import FeedsyncEnv, Site
from sitegen import Item


def _with_feeds(fs: FeedsyncEnv, tables: str) -> None:
    """The test's config (storage and fast settings) with ``tables`` ([[feeds]]) after it,
    as a user writes them."""
    fs.configure([])
    fs.config_path.write_text(fs.config_path.read_text() + tables, encoding="utf-8")


def _feeds(fs: FeedsyncEnv) -> dict[str, dict[str, object]]:
    return {f["url"]: f for f in json.loads(fs.run("feeds", "--json").stdout)}


def test_config_feeds_take_a_title_and_a_category_shown_everywhere(
    fs: FeedsyncEnv, site: Site, tmp_path: Path
) -> None:
    """Item 2: [[feeds]] title and category are accepted; the user's title wins over the
    feed's own in feeds, news, export and export-opml (the feed's own stays stored, and
    shows where the user gave none); the category is in feeds (and --json) and is the
    OPML folder; an edit of the file is taken at the next command."""
    named = site.feed("council.xml", [Item("Council story", site.page("council"))])
    plain = site.feed("weather.xml", [Item("Weather story", site.page("weather"))])
    _with_feeds(
        fs,
        f"""
# the council's feed, by the name the family uses
[[feeds]]
url = "{named}"
title = "Town hall"
category = "Local/Politics"

[[feeds]]
url = "{plain}"
""",
    )
    fs.run("run")

    feeds = _feeds(fs)
    assert feeds[named]["title"] == "Town hall"
    assert feeds[named]["user_title"] == "Town hall"
    assert feeds[named]["feed_title"] == "council.xml"  # the feed's own, still stored
    assert feeds[named]["category"] == "Local/Politics"
    assert feeds[plain]["title"] == feeds[plain]["feed_title"] == "weather.xml"
    assert feeds[plain]["user_title"] is None and feeds[plain]["category"] is None
    listing = fs.run("feeds").stdout
    assert "[1] Town hall [Local/Politics] (config)" in listing
    assert "[2] weather.xml (config)" in listing

    news = {n["title"]: n for n in json.loads(fs.run("news", "--json").stdout)}
    assert news["Council story"]["feed_title"] == "Town hall"
    assert news["Weather story"]["feed_title"] == "weather.xml"
    assert "Town hall · " in fs.run("news").stdout
    exported = [json.loads(line) for line in fs.run("export").stdout.splitlines()]
    assert {e["title"]: e["feed_title"] for e in exported} == {
        "Council story": "Town hall",
        "Weather story": "weather.xml",
    }

    opml = fs.run("export-opml").stdout
    assert (
        '<outline text="Local" title="Local">\n'
        '      <outline text="Politics" title="Politics">\n'
        f'        <outline type="rss" text="Town hall" title="Town hall" xmlUrl="{named}" />'
    ) in opml, opml
    assert f'<outline type="rss" text="weather.xml" title="weather.xml" xmlUrl="{plain}" />' in opml

    # the same feeds into another reader and back: names and folders kept
    out = tmp_path / "out.opml"
    out.write_text(opml, encoding="utf-8")
    other = FeedsyncEnv(root=tmp_path / "other")
    (other.root / "home").mkdir(parents=True)
    other.configure([])
    other.run("import-opml", str(out))
    other.run("run")  # the feeds' own titles arrive: the imported names stay
    theirs = _feeds(other)
    assert theirs[named]["title"] == "Town hall" and theirs[named]["feed_title"] == "council.xml"
    assert theirs[named]["category"] == "Local/Politics"

    # the file edited: a title taken away shows the feed's own; a folder moved
    _with_feeds(
        fs,
        f"""
[[feeds]]
url = "{named}"
category = "Local"

[[feeds]]
url = "{plain}"
title = "Rain or shine"
""",
    )
    feeds = _feeds(fs)
    assert feeds[named]["title"] == "council.xml" and feeds[named]["category"] == "Local"
    assert feeds[plain]["title"] == "Rain or shine" and feeds[plain]["category"] is None

    # a bad value is one line naming the key
    _with_feeds(fs, f'\n[[feeds]]\nurl = "{named}"\ntitle = ""\n')
    done = fs.run("feeds", expect=2)
    assert "feeds[0].title: expected one line of text" in done.stderr
    assert done.stderr.count("\n") == 1


def test_run_feed_polls_one_feed_now_and_add_no_fetch_adds_a_feed_that_is_down(
    fs: FeedsyncEnv, site: Site
) -> None:
    """Item 3: ``run --feed`` polls that feed at once (due or not) and extracts its new
    articles, no other feed's; a URL that is no feed here is a one-line error naming it.
    ``add --no-fetch`` adds a feed that cannot be fetched today, without a request; it
    shows as not polled yet, and the next run polls it."""
    one = site.feed("one.xml", [Item("One first", site.page("one-first"))])
    two = site.feed("two.xml", [Item("Two first", site.page("two-first"))])
    fs.configure([one, two], poll={"interval": "1h", "min_interval": "1h"})
    fs.run("run")
    site.feed("one.xml", [Item("One second", site.page("one-second"))])
    site.feed("two.xml", [Item("Two second", site.page("two-second"))])
    polled_two = site.hits("/feeds/two.xml")

    stats = fs.run_json("--feed", one)  # not due for an hour: polled anyway
    assert stats["feeds"] == 1 and stats["staged"] == 1 and stats["extracted"] == 1
    assert site.hits("/feeds/two.xml") == polled_two  # the other feed is left alone
    titles = {row[0] for row in fs.query("SELECT title FROM news")}
    assert titles == {"One first", "Two first", "One second"}
    fs.run("run", "--feed", "2")  # by its id, as 'feeds' shows it
    assert "Two second" in {row[0] for row in fs.query("SELECT title FROM news")}

    missing = site.url("/feeds/nobody.xml")
    done = fs.run("run", "--feed", missing, expect=2)
    assert done.stderr == f"feedsync: error: no such feed: {missing} (see 'feedsync feeds')\n"
    assert site.hits("/feeds/nobody.xml") == 0

    # a feed that is down today: add refuses it, and says how to add it anyway
    down = site.url("/feeds/down.xml")
    site.server.set("/feeds/down.xml", "busy", status=503)
    done = fs.run("add", down, expect=2)
    assert "--no-fetch" in done.stderr and done.stderr.count("\n") == 1
    asked = site.hits("/feeds/down.xml")
    done = fs.run("add", down, "--no-fetch", "--title", "The late one", "--category", "Later")
    assert done.stdout.startswith(f"added {down} without fetching it")
    assert site.hits("/feeds/down.xml") == asked  # not asked
    feeds = _feeds(fs)
    assert feeds[down]["health"] == "not polled yet" and feeds[down]["last_poll_at"] is None
    assert feeds[down]["title"] == "The late one" and feeds[down]["category"] == "Later"
    assert "[3] The late one [Later]" in fs.run("feeds").stdout

    # back up: the next run (a due one, as cron's) polls it and takes its articles
    site.feed("down.xml", [Item("Late story", site.page("late"))])
    fs.run("run", "--due")
    assert "Late story" in {row[0] for row in fs.query("SELECT title FROM news")}
    assert _feeds(fs)[down]["health"] == "ok"


def test_add_asks_for_the_feed_once_and_not_again_when_it_is_there(
    fs: FeedsyncEnv, site: Site
) -> None:
    """Item 4: ``add`` stages the entries from the document it fetched to find the feed
    (one GET, counted at the server), and an ``add`` of a feed already there says so and
    sends nothing; through a web page, the page once and the feed once."""
    fs.configure([])
    feed = site.feed("once.xml", [Item("Once", site.page("once")), Item("Twice", site.page("2"))])
    done = fs.run("add", feed, "--title", "Only once")
    assert done.stdout == (
        f"added {feed}: Only once, 2 entries staged; their articles come with the next run\n"
    )
    assert site.hits("/feeds/once.xml") == 1
    assert fs.run("add", feed).stdout == f"already there: [1] {feed}; not fetched again\n"
    assert fs.run("add", feed, "--title", "Renamed").stdout.splitlines()[1] == (
        "  --title not applied: a feed is named and filed as it is added"
    )
    assert site.hits("/feeds/once.xml") == 1
    fs.run("run")  # the entries staged by add are extracted; the feed polled once more
    assert {row[0] for row in fs.query("SELECT title FROM news")} == {"Once", "Twice"}
    assert site.hits("/feeds/once.xml") == 2

    # a feed of the config file is there too
    listed = site.feed("listed.xml", [])
    fs.configure([listed])
    done = fs.run("add", listed)
    assert done.stdout == (
        f"already there: [2] {listed}, listed in the config file; not fetched again\n"
    )
    assert site.hits("/feeds/listed.xml") == 0

    # through a web page that names its feed: each fetched once
    named = site.feed("named.xml", [Item("Named", site.page("named"))])
    home = site.server.set(
        "/home",
        '<html><head><link rel="alternate" type="application/rss+xml" '
        'href="/feeds/named.xml"></head><body>Welcome</body></html>',
    )
    done = fs.run("add", home)
    assert done.stdout.startswith(f"added {named} (found through {home}): named.xml, 1 entry")
    assert (site.hits("/home"), site.hits("/feeds/named.xml")) == (1, 1)
    # the page again: the page is read (it is no feed here), the feed it names is not
    done = fs.run("add", home)
    assert done.stdout == f"already there: [3] {named} (found through {home}); not fetched again\n"
    assert (site.hits("/home"), site.hits("/feeds/named.xml")) == (2, 1)
