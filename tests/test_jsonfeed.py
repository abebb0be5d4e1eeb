"""JSON Feed (jsonfeed.org 1.0 and 1.1): read into the same entries as RSS and Atom, found
by `feedsync add` on a page that links one, polled and extracted like any feed."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import FeedsyncEnv, Site

from feedsync import fetch, titles
from feedsync.discover import feed_links
from feedsync.localserver import LocalServer
from feedsync.parse import MAX_ENTRIES, UNTITLED_TITLE_CHARS, NotAFeed, jsonfeed, parse_feed

FEED = "https://news.example.com/feed.json"
FETCHED = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
JSON_FEED = "application/feed+json"
START = datetime(2026, 1, 1, tzinfo=UTC)


def document(
    items: list[Any], version: str = "https://jsonfeed.org/version/1.1", **feed: Any
) -> bytes:
    return json.dumps({"version": version, "title": "News", **feed, "items": items}).encode()


def test_a_json_feed_1_1() -> None:
    body = document(
        [
            {
                "id": "tag:news.example.com,2026:1",
                "url": "https://news.example.com/a?utm_source=json",
                "title": "  Storm   closes\n the harbour ",
                "summary": "Short.",
                "content_html": "<p>Long.</p>",
                "date_published": "2026-11-22T18:00:00+09:00",
                "authors": [{"name": "Ana"}, {"name": "Ben"}, {"url": "https://x.example"}],
            },
            {
                "id": "2",
                "external_url": "/b",  # a link post: the page it is about, resolved
                "title": "Second",
                "content_text": "Plain text.",
                "date_modified": "2026-11-21T10:00:00Z",
            },
        ],
        authors=[{"name": "Desk"}],
    )
    parsed = parse_feed(body, FEED, FETCHED, JSON_FEED)
    assert parsed.title == "News" and parsed.skipped == 0 and parsed.problem is None
    first, second = parsed.entries
    assert (first.url, first.title, first.published) == (
        "https://news.example.com/a",
        "Storm closes the harbour",
        "2026-11-22T09:00:00Z",
    )
    assert (first.summary, first.author, first.guid) == (
        "Short.",
        "Ana, Ben",
        "tag:news.example.com,2026:1",
    )
    assert (second.url, second.published, second.summary, second.author, second.guid) == (
        "https://news.example.com/b",
        "2026-11-21T10:00:00Z",
        "Plain text.",
        "Desk",  # the feed's authors, when the item names none
        "2",
    )


def test_a_json_feed_1_0_and_its_quirks() -> None:
    """1.0: one ``author`` object; a numeric id is coerced to a string, as the spec says;
    served as application/json, or as anything: it is JSON by its first byte."""
    body = document(
        [
            {
                "id": 12345,
                "url": "https://news.example.com/c",
                "title": "Third",
                "content_html": "<p>Text &amp; more</p>",
                "author": {"name": "Cleo"},
            }
        ],
        version="https://jsonfeed.org/version/1",
    )
    for content_type in ("application/json", "text/plain", None):
        (entry,) = parse_feed(body, FEED, FETCHED, content_type).entries
        assert (entry.guid, entry.author, entry.summary) == (
            "12345",
            "Cleo",
            "<p>Text &amp; more</p>",
        )
        assert entry.published is None


def test_an_item_without_a_title_is_kept_untitled() -> None:
    """JSON Feed 1.1 allows untitled items (microblog posts): each is kept, titled '' (the
    same on every poll, however its text is edited), and shown by the beginning of its
    text (feedsync/titles.py); an item with no text at all is kept too."""
    long_text = "word " * 60
    body = document(
        [
            {"id": "1", "url": "https://news.example.com/1", "content_text": "Just a note."},
            {
                "id": "2",
                "url": "https://news.example.com/2",
                "content_html": "<p>A <b>post</b></p>",
            },
            {"id": "3", "url": "https://news.example.com/3", "title": " ", "summary": long_text},
            {"id": "4", "url": "https://news.example.com/4"},
        ]
    )
    parsed = parse_feed(body, FEED, FETCHED, JSON_FEED)
    assert [e.title for e in parsed.entries] == ["", "", "", ""]
    assert parsed.skip_reasons == ()
    shown = [titles.shown(e.title, e.summary, e.url) for e in parsed.entries]
    assert shown[:2] == ["Just a note.", "A post"]
    assert shown[2].endswith("…") and len(shown[2]) <= UNTITLED_TITLE_CHARS + 1
    assert shown[3] == "https://news.example.com/4"  # nothing to show it by but its URL


@pytest.mark.parametrize(
    ("content_html", "title"),
    [
        ('<script>var t = "Tracking";</script><p>Harbour reopens</p>', "Harbour reopens"),
        ("<style>p { color: red }</style><p>Styled</p>", "Styled"),
        ("<template><p>Later</p></template><noscript>Enable JS</noscript>Now", "Now"),
        ("<!-- draft: do not publish --><p>One</p><p>Two</p>", "One"),
        ("<![CDATA[raw]]><p>After CDATA</p>", "After CDATA"),
        (
            '<p>Caf&eacute; &amp; bar &#x263A;&nbsp;<a title="a>b" href="/x">link</a></p>',
            "Café & bar ☺ link",
        ),
        ("<p>po<b>s</b>t</p><br>next", "post"),
        ("po<b>s</b>t and <i>more</i><br>next", "post and more"),
        ('<svg viewBox="0 0 1 1"><title>icon</title></svg><iframe src="/v"/>Clip', "Clip"),
        ("<video src=v.mp4>Your browser does not support video.</video>Film night", "Film night"),
        ("<SCRIPT type=module>x()</SCRIPT >Upper case", "Upper case"),
        ("&lt;script&gt; is text here", "<script> is text here"),
        ("a < b and 3<4", "a < b and 3<4"),
        ("<p>Text <!-- never closed", "Text"),
        ("<p>Before</p><script>never closed", "Before"),
    ],
)
def test_an_untitled_item_is_shown_by_the_text_a_reader_sees(content_html: str, title: str) -> None:
    """The title an untitled item is shown by is the first line of its readable text: no
    markup, nothing of a <script>, <style>, <template> or <noscript> (a post starting
    with a <script> block was titled by its code), no comment or CDATA section,
    character references decoded."""
    item = {"id": "1", "url": "https://news.example.com/1", "content_html": content_html}
    (entry,) = parse_feed(document([item]), FEED, FETCHED, JSON_FEED).entries
    assert entry.title == "" and titles.from_summary(entry.summary) == title
    assert entry.summary == content_html  # the summary keeps the HTML, as before


def test_content_html_with_no_readable_text_is_shown_by_its_url() -> None:
    item = {"id": "1", "url": "https://news.example.com/1", "content_html": "<script>x()</script>"}
    (entry,) = parse_feed(document([item]), FEED, FETCHED, JSON_FEED).entries
    assert titles.shown(entry.title, entry.summary, entry.url) == "https://news.example.com/1"


@pytest.mark.parametrize("unit", ["<a ", '<a "', "<!--", "<script ", "<b>", "&amp", "<svg/"])
def test_a_title_from_hostile_html_costs_linear_time(unit: str) -> None:
    """Each branch of the markup pattern succeeds once started: a megabyte of broken
    markup is read once (the old ``<[^>]*>`` scanned to the end from every ``<``)."""
    fragment = unit * (1_000_000 // len(unit)) + "<p>Text</p>"
    started = time.process_time()
    assert jsonfeed.html_text(fragment) is not None
    assert time.process_time() - started < 2.0


def test_wrong_types_skip_the_item_with_a_reason() -> None:
    body = document(
        [
            "not an item",
            None,
            {"id": "1", "url": 5, "title": "Number as URL"},
            {"id": "2", "url": ["https://news.example.com/x"], "title": "List as URL"},
            {"id": "3", "url": "https://news.example.com/t", "title": {"text": "Object"}},
            {
                "id": {"x": 1},
                "url": "https://news.example.com/fine",
                "title": "Fine",
                "date_published": 1_700_000_000,
                "summary": 42,
                "authors": "Ana",
                "author": ["Ben"],
            },
            {"id": True, "url": "mailto:desk@example.com", "title": "Mail"},
        ],
        title=["not", "a", "title"],
    )
    parsed = parse_feed(body, FEED, FETCHED, JSON_FEED)
    untitled, entry = parsed.entries  # a title that is no string: no title, kept
    assert (untitled.url, untitled.title) == ("https://news.example.com/t", "")
    assert (entry.url, entry.title, entry.published, entry.summary, entry.author, entry.guid) == (
        "https://news.example.com/fine",
        "Fine",
        None,
        "",
        None,
        None,
    )
    assert parsed.title is None
    assert sorted(parsed.skip_reasons) == sorted(
        [
            "not a JSON object",
            "not a JSON object",
            "no link",
            "no link",
            "not an http(s) link",
        ]
    )
    assert "not a JSON object (2)" in (parsed.warning or "")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"version": "https://jsonfeed.org/version/1.1", "items": [', "malformed JSON"),
        (b"{" * 100_000 + b"}" * 100_000, "not a feed"),
        (b'{"version": "https://jsonfeed.org/version/1", "x": ' + b"9" * 10_000 + b"}", "JSON"),
        (b'{"data": [1, 2, 3]}', "not a JSON Feed"),
        (b'{"version": 1.1, "items": []}', "not a JSON Feed"),
        (b'{"version": "https://jsonfeed.org/version/1.1", "items": {}}', "without an items"),
        (b'{"version": "https://jsonfeed.org/version/1.1"}', "without an items"),
        (b'{"version": "https://jsonfeed.org/version/1.1", "items": []}\xff', "malformed JSON"),
        (b"\xff\xfe{\x00", "not a feed"),
    ],
)
def test_what_is_not_a_json_feed_is_refused_in_one_line(body: bytes, reason: str) -> None:
    with pytest.raises(NotAFeed, match=reason) as refused:
        parse_feed(body, FEED, FETCHED, JSON_FEED)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 300


def test_an_empty_json_feed_is_a_feed() -> None:
    parsed = parse_feed(document([]), FEED, FETCHED, JSON_FEED)
    assert parsed.entries == () and parsed.skipped == 0


def test_control_characters_and_caps_apply_as_to_xml() -> None:
    evil = "\x1b]0;pwned\x07 \x1b[31m"
    items = [
        {
            "id": f"g{evil}",
            "url": "https://news.example.com/a",
            "title": f"Title {evil}",
            "summary": f"Summary {evil}" + "s" * 100_000,
            "authors": [{"name": f"Author {evil}" + " x" * 1000}],
        },
        {"id": "long", "url": "https://news.example.com/b", "title": "t" * 1001},
    ]
    parsed = parse_feed(document(items, title=f"Feed {evil}"), FEED, FETCHED, JSON_FEED)
    (entry,) = parsed.entries
    for text in (parsed.title, entry.title, entry.summary, entry.author, entry.guid):
        assert text and "\x1b" not in text and "\x07" not in text
    assert 65_000 < len(entry.summary) <= 64 * 1024 and entry.author and len(entry.author) == 1000
    assert parsed.skip_reasons == ("title too long",)


def test_a_json_archive_is_read_to_its_newest_entries() -> None:
    items = [
        {
            "id": str(n),
            "url": f"https://news.example.com/{n}",
            "title": f"Story {n}",
            "date_published": (START + timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for n in range(MAX_ENTRIES + 100)
    ]
    parsed = parse_feed(document(items), FEED, FETCHED, JSON_FEED)
    assert len(parsed.entries) == MAX_ENTRIES and parsed.skipped == 100
    assert parsed.entries[0].title == "Story 100"  # the oldest 100 left out


# ---------------------------------------------------------------- discovery and the CLI


def test_a_page_names_its_json_feed() -> None:
    html = """<html><head>
      <link rel="alternate" type="application/json" href="/wp-json/wp/v2/pages/12">
      <link rel="alternate" type="application/feed+json" href="/feed.json" title="JSON">
      <link rel="alternate" type="application/rss+xml" href="/rss.xml">
    </head><body><a href="/posts/feed.json">JSON Feed</a></body></html>"""
    assert feed_links(html, "https://news.example.com/") == [
        "https://news.example.com/feed.json",
        "https://news.example.com/rss.xml",
        "https://news.example.com/wp-json/wp/v2/pages/12",  # JSON, maybe a feed: after
        "https://news.example.com/posts/feed.json",
    ]


def test_the_feed_request_asks_for_json_feed_too() -> None:
    assert "application/feed+json" in fetch.FEED_ACCEPT
    assert "application/json" in fetch.FEED_ACCEPT


def json_feed(site: Site, name: str, titles: list[str]) -> str:
    items = [
        {
            "id": f"tag:example,2026:{name}:{n}",
            "url": site.page(f"{name}-{n}", title),
            "title": title,
            "content_text": f"About {title}.",
            "date_published": f"2026-11-2{n}T10:00:00Z",
        }
        for n, title in enumerate(titles)
    ]
    body = json.dumps(
        {"version": "https://jsonfeed.org/version/1.1", "title": name.title(), "items": items}
    )
    return site.server.set(f"/{name}.json", body, "application/feed+json")


def test_add_a_page_that_links_a_json_feed(fs: FeedsyncEnv, site: Site) -> None:
    feed = json_feed(site, "micro", ["Harbour reopens", "Ferry timetable"])
    home = site.server.set(
        "/blog/",
        '<html><head><link rel="alternate" type="application/feed+json" '
        'href="/micro.json" title="JSON Feed"></head><body>Welcome</body></html>',
    )
    done = fs.run("add", home)
    assert done.stdout == (
        f"added {feed} (found through {home}): Micro, 2 entries staged; "
        "their articles come with the next run\n"
    )
    assert "application/feed+json" in site.server.headers["/micro.json"]["Accept"]
    fs.run("run")
    assert sorted(fs.query("SELECT title FROM news")) == [
        ("Ferry timetable",),
        ("Harbour reopens",),
    ]


def test_a_json_feed_is_polled_like_any_feed(fs: FeedsyncEnv, server: LocalServer) -> None:
    site = Site(server)
    feed = json_feed(site, "wire", ["One story"])
    fs.configure([feed])
    fs.run("run")
    assert fs.scalar("SELECT title FROM news") == "One story"
    assert fs.scalar("SELECT title FROM feeds") == "Wire"
    broken = server.set("/broken.json", '{"version": "https://jsonfeed.org/version/1.1", "items"')
    fs.configure([feed, broken])
    fs.run("run")
    listing = fs.run("feeds").stdout
    assert "malformed JSON" in listing


def test_a_lone_surrogate_costs_one_character_not_the_feed(fs: FeedsyncEnv, site: Site) -> None:
    """Through ``feedsync add`` and ``feedsync run``: a lone surrogate in a JSON Feed, as a
    ``\\ud800`` escape or as raw bytes (json.loads decodes bytes with "surrogatepass"),
    failed the whole feed on every poll ("unexpected UnicodeEncodeError ... surrogates not
    allowed"), the good item beside it never staged. Now the character is dropped from
    whichever field carries it, the link and the guid too, and every entry lands."""

    def served(name: str, *, raw_bytes: bool) -> tuple[str, bytes]:
        items = [
            {"id": f"{name}-good", "url": site.page(f"{name}-good"), "title": f"Good {name}"},
            {
                "id": f"tag:x,2026:\ud800{name}",
                "url": site.page(f"{name}-lone") + "\udc00",
                "title": f"Lone \ud800{name}\udfff",
                "summary": "Text \udbff with a lone one",
                "authors": [{"name": "Ana \udc00"}],
            },
        ]
        document = {"version": "https://jsonfeed.org/version/1.1", "title": "Wire \ud800"}
        text = json.dumps({**document, "items": items}, ensure_ascii=not raw_bytes)
        if raw_bytes:  # and a pair spelled as CESU-8 bytes: one emoji
            text = text.replace("Text ", "Text \ud83d\ude00 ")
        body = text.encode("utf-8", "surrogatepass")
        return site.server.set(f"/{name}.json", body, JSON_FEED), body

    escaped, escaped_body = served("escaped", raw_bytes=False)
    raw, raw_body = served("raw", raw_bytes=True)
    assert b"\\ud800" in escaped_body and b"\xed\xa0\x80" in raw_body  # as the test means
    added = fs.run("add", escaped)
    assert added.stdout.startswith(f"added {escaped}: Wire, 2 entries staged;"), added.stdout
    fs.configure([escaped, raw])
    done = fs.run("run")
    assert "unexpected" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert fs.query("SELECT url, title, error_count, last_error FROM feeds ORDER BY id") == [
        (escaped, "Wire", 0, None),
        (raw, "Wire", 0, None),
    ]
    rows = fs.query("SELECT url, title, summary, author, guid FROM news_summary ORDER BY title")
    assert rows == [
        (site.url("/articles/escaped-good"), "Good escaped", "", None, "escaped-good"),
        (site.url("/articles/raw-good"), "Good raw", "", None, "raw-good"),
        (
            site.url("/articles/escaped-lone"),
            "Lone escaped",
            "Text  with a lone one",
            "Ana",
            "tag:x,2026:escaped",
        ),
        (
            site.url("/articles/raw-lone"),
            "Lone raw",
            "Text 😀  with a lone one",
            "Ana",
            "tag:x,2026:raw",
        ),
    ]
    assert "4 articles extracted (0 failed" in done.stdout, done.stdout
    listed = fs.run("news").stdout
    assert "Lone escaped" in listed and "Lone raw" in listed


def test_an_untitled_post_starting_with_a_script_is_titled_by_its_text(
    fs: FeedsyncEnv, site: Site
) -> None:
    """Through ``feedsync run`` and ``feedsync news``: a microblog post without a title
    whose content_html starts with a <script> block (an embed) was listed under its code,
    'window.embed = {"id": 42};'; it is listed under the words a reader sees."""
    content_html = (
        '<script>window.embed = {"id": 42};</script><!-- embed end -->'
        "<style>.x { color: red }</style><p>Ferry &amp; bus timetables change on Monday</p>"
    )
    items = [{"id": "1", "url": site.page("timetable"), "content_html": content_html}]
    body = json.dumps({"version": "https://jsonfeed.org/version/1.1", "items": items})
    fs.configure([site.server.set("/micro.json", body, JSON_FEED)])
    fs.run("run")
    title = "Ferry & bus timetables change on Monday"
    assert fs.query("SELECT title FROM news") == [(title,)]
    listed = fs.run("news").stdout
    assert title in listed and "embed" not in listed and "color" not in listed, listed
