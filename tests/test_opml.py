"""OPML reading and writing: folders, duplicates, escaping."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FeedsyncEnv

from feedsync import opml
from feedsync.records import FeedHealth


def health(url: str, title: str | None, category: str | None) -> FeedHealth:
    return FeedHealth(
        id=1,
        url=url,
        title=title,
        enabled=True,
        disabled_reason=None,
        origin="cli",
        latest_published="",
        last_poll_at=None,
        last_success_at=None,
        error_count=0,
        last_error=None,
        entries=0,
        category=category,
    )


def test_write_then_read_keeps_folders_titles_and_escaping() -> None:
    feeds = [
        health("https://a.example/rss?x=1&y=2", "A & B <news>", "News/World"),
        health("https://b.example/atom", None, None),
        health("https://c.example/feed", "Tech", "News/Tech"),
    ]
    back = opml.read(opml.write(feeds).encode())
    assert {(f.url, f.title, f.category) for f in back.feeds} == {
        ("https://a.example/rss?x=1&y=2", "A & B <news>", "News/World"),
        ("https://b.example/atom", "https://b.example/atom", None),
        ("https://c.example/feed", "Tech", "News/Tech"),
    }
    assert back.repeats == 0 and back.skipped == ()


def test_not_opml() -> None:
    with pytest.raises(opml.OpmlError, match="not an OPML subscription list"):
        opml.read(b"<html><body>hi</body></html>")


def test_folders_with_a_slash_in_their_name_stay_one_folder() -> None:
    assert opml.folders("News/World") == ["News", "World"]
    assert opml.folders("UI / UX") == ["UI / UX"]
    assert opml.folders("Tech/UI / UX") == ["Tech", "UI / UX"]
    assert opml.folders("AC\\/DC/Live") == ["AC/DC", "Live"]
    for names in (["UI / UX"], ["AC/DC", "Live"], ["a\\b", "/r/python"], ["News", "World"]):
        assert opml.folders(opml.category(names)) == names


# OPML as it comes from the wild, each line a case (line numbers matter: they are said)
WILD = b"""<?xml version="1.0" encoding="utf-8"?>
<opml version="1.0"><head><title>from another reader</title></head><body>
<!-- <outline text="Old" xmlUrl="https://commented.example/rss"/> -->
<outline text="UI / UX" title="UI / UX">
  <outline type="rss" text="Design" xmlUrl="https://design.example/feed"/>
  <outline type="rss" text="Quoted" description="the "best" blog"xmlUrl="https://quoted.example/rss"/>
  <outline type="rss" text="After" description="He said "hi" to us" xmlUrl="https://after.example/rss"/>
</outline>
<outline type="rss" text="Empty" xmlUrl=""/>
<outline type="rss" text="Podcast" xmlUrl="feed://pod.example/rss"/>
<outline type="rss" text="Secure podcast" xmlUrl="feed:https://secure.example/rss"/>
<outline type="rss" text="Design again" xmlUrl="https://design.example/feed"/>
<outline type="rss" text="Gopher" xmlUrl="gopher://old.example/feed"/>
<outline type="link" text="A web page" url="https://page.example/"/>
</body></opml>
"""


def test_import_opml_from_the_wild_reports_every_outline_not_imported(
    fs: FeedsyncEnv, tmp_path: Path
) -> None:
    source = tmp_path / "wild.opml"
    source.write_bytes(WILD)
    fs.configure([])
    done = fs.run("import-opml", str(source))
    assert done.stdout.splitlines() == [
        f"imported {source}: 5 feeds added, 0 already there",
        "  4 outlines not imported, 1 of them repeats:",
        '    line 9: Empty: no feed URL (xmlUrl="")',
        "    line 12: https://design.example/feed: a repeat of the feed on line 5",
        "    line 13: gopher://old.example/feed: not an http(s) feed URL",
        "    line 14: https://page.example/: no feed URL (xmlUrl) in this outline of type link",
        "their entries come with the next run (or the daemon's next tick)",
    ]
    # the quoted ones are in, feed:// is http://, and "UI / UX" is one folder
    assert set(fs.query("SELECT url, category FROM feeds")) == {
        ("https://design.example/feed", "UI / UX"),
        ("https://quoted.example/rss", "UI / UX"),
        ("https://after.example/rss", "UI / UX"),
        ("http://pod.example/rss", None),
        ("https://secure.example/rss", None),
    }  # and nothing of the comment

    exported = tmp_path / "out.opml"
    fs.run("export-opml", "--output", str(exported))
    text = exported.read_text()
    assert text.count('text="UI / UX"') == 1 and 'text="UI "' not in text
    other = FeedsyncEnv(root=tmp_path / "other")
    (other.root / "home").mkdir(parents=True)
    other.configure([])
    back = other.run("import-opml", str(exported)).stdout
    assert "not imported" not in back
    assert set(other.query("SELECT url, category FROM feeds")) == set(
        fs.query("SELECT url, category FROM feeds")
    )


LISTS = b"""<?xml version="1.0" encoding="utf-8"?>
<opml version="2.0"><head><title>with other lists in it</title></head><body>
<outline type="rss" text="News" xmlUrl="https://news.example/rss"/>
<outline type="source" text="Friends' blogroll" xmlUrl="https://friends.example/blogroll.opml"/>
<outline type="Source" text="Podcasts" xmlUrl="feed://pods.example/list.opml"/>
<outline type="include" text="Work" xmlUrl="https://work.example/subscriptions.opml"/>
</body></opml>
"""


def test_outlines_that_link_other_subscription_lists_are_not_feeds() -> None:
    """``type="source"`` (and OPML 2.0's ``include``): an outline whose xmlUrl is another
    subscription list, not a feed; it was added as a feed, and failed on every poll."""
    found = opml.read(LISTS)
    assert [f.url for f in found.feeds] == ["https://news.example/rss"]
    assert [(s.line, s.what, s.reason) for s in found.skipped] == [
        (
            4,
            "https://friends.example/blogroll.opml",
            'a link to another subscription list (type="source"), not a feed',
        ),
        (
            5,
            "http://pods.example/list.opml",
            'a link to another subscription list (type="Source"), not a feed',
        ),
        (
            6,
            "https://work.example/subscriptions.opml",
            'a link to another subscription list (type="include"), not a feed',
        ),
    ]
    assert found.repeats == 0


def test_import_opml_says_it_left_out_a_link_to_another_list(
    fs: FeedsyncEnv, tmp_path: Path
) -> None:
    source = tmp_path / "lists.opml"
    source.write_bytes(LISTS)
    fs.configure([])
    done = fs.run("import-opml", str(source))
    assert done.stdout.splitlines() == [
        f"imported {source}: 1 feed added, 0 already there",
        "  3 outlines not imported:",
        "    line 4: https://friends.example/blogroll.opml: a link to another subscription list"
        ' (type="source"), not a feed',
        "    line 5: http://pods.example/list.opml: a link to another subscription list"
        ' (type="Source"), not a feed',
        "    line 6: https://work.example/subscriptions.opml: a link to another subscription"
        ' list (type="include"), not a feed',
        "their entries come with the next run (or the daemon's next tick)",
    ]
    assert fs.query("SELECT url FROM feeds") == [("https://news.example/rss",)]


def test_a_reason_is_printed_without_control_characters(fs: FeedsyncEnv, tmp_path: Path) -> None:
    """The reason an outline was left out may quote the file (its type): printed to a
    terminal, it is cleaned as the rest of the line is."""
    source = tmp_path / "evil.opml"
    source.write_bytes(
        b'<opml><body><outline type="\x1b]0;pwned\x07" text="x" url="https://a.example/"/>'
        b"</body></opml>"
    )
    fs.configure([])
    done = fs.run("import-opml", str(source))
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "no feed URL (xmlUrl) in this outline of type ]0;pwned\n" in done.stdout


# Feed URLs in markup too broken to make an outline of, a line each (line numbers matter)
BROKEN = b"""<?xml version="1.0" encoding="utf-8"?>
<opml version="2.0"><head><title>broken</title></head><body>
<outline text="A" xmlUrl="https://a.example/rss"/>
<outline text="B" xmlUrl="https://b.example/rss" xmlUrl="https://c.example/"/>
<outline text="unclosed xmlUrl="https://d.example/rss"/>
<outlin text="E" xmlUrl="https://e.example/rss"/>
<![CDATA[<outline text="F" xmlUrl="https://f.example/rss"/>]]>
<outline
  text="G"
  xmlUrl="https://g.example/rss?a=1&amp;b=2&copy=3"
/>
<!-- <outline text="H" xmlUrl="https://h.example/rss"/> -->
<outline text="I" description="the "best" blog"xmlUrl="https://i.example/rss"/>
</body></opml>
"""


def test_feed_urls_in_broken_markup_are_named_with_their_line_and_what_was_wrong() -> None:
    """Every xmlUrl the file writes and no outline yields is named: where it is, and what
    around it kept the parser from reading it. Those read (over several lines, with
    references, glued to a stray quote) and those in a comment are not."""
    found = opml.read(BROKEN)
    assert [f.url for f in found.feeds] == [
        "https://a.example/rss",
        "https://b.example/rss",
        "https://g.example/rss?a=1&b=2&copy=3",
        "https://i.example/rss",
    ]
    assert [(s.line, s.what, s.reason) for s in found.skipped] == [
        (4, "https://c.example/", "a second xmlUrl in one outline (only the first is read)"),
        (
            5,
            "https://d.example/rss",
            "inside the value of an attribute before it (a closing quote missing?)",
        ),
        (6, "https://e.example/rss", "in a <outlin> tag, not an <outline>"),
        (7, "https://f.example/rss", "in a CDATA section, which is text, not an outline"),
    ]


def test_broken_markup_that_hides_a_feed_is_said(fs: FeedsyncEnv, tmp_path: Path) -> None:
    """Through ``feedsync import-opml``: a feed URL no outline yields was counted ("1 more
    xmlUrl= in the file"), not named; it is named with its line and what was wrong."""
    source = tmp_path / "broken.opml"
    source.write_bytes(BROKEN)
    fs.configure([])
    done = fs.run("import-opml", str(source))
    assert done.stdout.splitlines() == [
        f"imported {source}: 4 feeds added, 0 already there",
        "  4 outlines not imported:",
        "    line 4: https://c.example/: a second xmlUrl in one outline (only the first is read)",
        "    line 5: https://d.example/rss: inside the value of an attribute before it (a"
        " closing quote missing?)",
        "    line 6: https://e.example/rss: in a <outlin> tag, not an <outline>",
        "    line 7: https://f.example/rss: in a CDATA section, which is text, not an outline",
        "their entries come with the next run (or the daemon's next tick)",
    ]
