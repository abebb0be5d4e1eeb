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
