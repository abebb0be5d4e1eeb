"""Feed documents to normalised entries: formats, dates, links, encodings, broken input."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sitegen
from conftest import corpus_or_skip, live_and_card, what_feedsync_sees
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sitegen import Item

from feedsync import decide, parse
from feedsync.parse import MAX_TITLE_CHARS, NotAFeed, RawEntry, RawFeed, parse_feed, read
from feedsync.records import ParsedFeed, PollIntent
from feedsync.storage.sqlite import SQLiteStorage

FEED = "https://news.example.com/feeds/world.xml"
FETCHED = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
XML = "application/xml"


@pytest.mark.parametrize("fmt", ["rss2", "atom", "rdf"])
def test_each_format_gives_the_same_entries(fmt: str) -> None:
    render, content_type = sitegen.FORMATS[fmt]
    items = [
        Item(
            "  Storm   closes\n the harbour ",
            "https://news.example.com/a?utm_source=rss",
            datetime(2026, 11, 22, 9, 30, tzinfo=UTC),
            guid="tag:x,2026:a",
        ),
        Item(
            "Second story", "https://news.example.com/b", datetime(2026, 11, 21, 18, 0, tzinfo=UTC)
        ),
    ]
    parsed = parse_feed(render("World", FEED, items).encode(), FEED, FETCHED, content_type)
    assert parsed.title == "World"
    assert [(e.url, e.title, e.published) for e in parsed.entries] == [
        ("https://news.example.com/a", "Storm closes the harbour", "2026-11-22T09:30:00Z"),
        ("https://news.example.com/b", "Second story", "2026-11-21T18:00:00Z"),
    ]
    assert parsed.skipped == 0 and parsed.problem is None


def rss(items: str, extra_ns: str = "") -> bytes:
    return (
        f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"{extra_ns}><channel>'
        f"<title>T</title><link>https://news.example.com/</link>{items}</channel></rss>"
    ).encode()


def test_dates_are_converted_to_utc_and_updated_is_a_fallback() -> None:
    body = rss(
        "<item><title>Tokyo</title><link>/tokyo</link>"
        "<pubDate>Sun, 22 Nov 2026 18:00:00 +0900</pubDate></item>"
    )
    assert parse_feed(body, FEED, FETCHED, XML).entries[0].published == "2026-11-22T09:00:00Z"
    atom = (
        b'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>'
        b'<entry><title>Only updated</title><link href="https://news.example.com/u"/>'
        b"<id>u</id><updated>2026-11-21T10:00:00+01:00</updated></entry></feed>"
    )
    assert parse_feed(atom, FEED, FETCHED, XML).entries[0].published == "2026-11-21T09:00:00Z"


def test_no_date_future_dates_and_garbage_dates() -> None:
    body = rss(
        "<item><title>Undated</title><link>/u</link></item>"
        "<item><title>Next week</title><link>/f</link>"
        "<pubDate>Sun, 29 Nov 2026 12:00:00 GMT</pubDate></item>"
        "<item><title>Epoch</title><link>/e</link><pubDate>Thu, 01 Jan 1970 00:00:00 GMT"
        "</pubDate></item>"
        "<item><title>Garbage</title><link>/g</link><pubDate>sometime soon</pubDate></item>"
    )
    dates = {e.title: e.published for e in parse_feed(body, FEED, FETCHED, XML).entries}
    assert dates == {
        "Undated": None,
        "Next week": "2026-11-29T12:00:00Z",  # as given: our clock may be the wrong one
        "Epoch": None,
        "Garbage": None,
    }


def test_relative_links_resolve_against_the_feed_and_xml_base() -> None:
    body = rss("<item><title>Rel</title><link>../2026/rel.html</link></item>")
    assert parse_feed(body, FEED, FETCHED, XML).entries[0].url == (
        "https://news.example.com/2026/rel.html"
    )
    atom = (
        b'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" '
        b'xml:base="https://other.example/blog/"><title>T</title><entry><title>B</title>'
        b'<link href="post/1"/><id>1</id><updated>2026-11-21T10:00:00Z</updated></entry>'
        b"</feed>"
    )
    assert parse_feed(atom, FEED, FETCHED, XML).entries[0].url == (
        "https://other.example/blog/post/1"
    )


def test_entries_without_a_usable_link_are_skipped_and_counted() -> None:
    """An item without a title but with a link (RSS 2.0 allows it: a Mastodon post) is
    kept, titled ''; without a usable link, or with an absurd title, it is skipped."""
    body = rss(
        "<item><title>Fine</title><link>https://news.example.com/fine</link></item>"
        "<item><title>No link</title></item>"
        "<item><link>https://news.example.com/no-title</link></item>"
        "<item><title>  </title><link>https://news.example.com/blank</link></item>"
        "<item><title>Mail</title><link>mailto:desk@example.com</link></item>"
        "<item><title>Self</title><link></link></item>"
        f"<item><title>{'x' * 1500}</title><link>https://news.example.com/long</link></item>"
    )
    for fast in (True, False):  # fastfeedparser's reader and feedparser's alike
        parsed = parse._normalise(read(body, FEED, XML, fast=fast), FEED, FETCHED)
        assert [(e.url, e.title) for e in parsed.entries] == [
            ("https://news.example.com/fine", "Fine"),
            ("https://news.example.com/no-title", ""),
            ("https://news.example.com/blank", ""),
        ]
        assert sorted(parsed.skip_reasons) == [
            "no link",
            "no link",
            "not an http(s) link",
            "title too long",
        ]


def test_a_huge_channel_title_or_author_is_cut_to_the_title_cap() -> None:
    body = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
        f"<title>{'Channel ' * 130_000}</title><link>https://news.example.com/</link>"
        "<item><title>Fine</title><link>https://news.example.com/fine</link>"
        f"<author>{'Author ' * 150_000}</author></item></channel></rss>"
    ).encode()
    assert len(body) > 2_000_000
    parsed = parse_feed(body, FEED, FETCHED, XML)
    (entry,) = parsed.entries
    assert parsed.title and len(parsed.title) == MAX_TITLE_CHARS
    assert parsed.title.startswith("Channel Channel")
    assert entry.author and len(entry.author) == MAX_TITLE_CHARS


@pytest.mark.parametrize(
    "reference", ["&#xD800;", "&#55296;", "&#xdfff;", "&#x110000;", "&#99999999999999999999;"]
)
def test_a_reference_to_no_character_is_dropped_and_the_feed_read(reference: str) -> None:
    """A surrogate or a number beyond Unicode, as a character reference: feedparser
    crashed on it and the whole feed was refused as unreadable."""
    body = rss(
        f"<item><title>Bad {reference} title</title><link>https://news.example.com/bad</link>"
        f"<description>one {reference} two</description></item>"
        "<item><title>Fine &#x263A; &#233;</title><link>https://news.example.com/fine</link>"
        "</item>"
    )
    parsed = parse_feed(body, FEED, FETCHED, XML)
    assert [e.title for e in parsed.entries] == ["Bad title", "Fine ☺ é"]
    assert parsed.entries[0].summary == "one  two"


def test_a_lone_surrogate_is_dropped_from_every_field_whatever_the_reader() -> None:
    """The normal form holds for any reader's values: a lone surrogate (no character:
    UTF-8 cannot encode it, so neither SQLite nor a terminal takes it) is dropped from
    every field, the link before it is canonicalised (it made the link "not an http(s)
    link") and the guid too; a pair is the one character it spells. The entry stays."""
    raw = RawFeed(
        title="Wire \ud800",
        problem="odd \udc00 thing",
        entries=[
            RawEntry(
                link="https://news.example.com/a\ud800?x=\udfff1",
                title="Lone \udbff one",
                summary="Text \ud83d\ude00 \ud800",
                author="Ana \udc00",
                guid="tag:x,2026:\ud800a",
            ),
            RawEntry(link="https://news.example.com/b", title="Fine é"),
        ],
    )
    parsed = parse._normalise(raw, FEED, FETCHED)
    assert (parsed.title, parsed.problem, parsed.skipped) == ("Wire", "odd  thing", 0)
    lone, fine = parsed.entries
    assert (lone.url, lone.title, lone.summary, lone.author, lone.guid) == (
        "https://news.example.com/a?x=1",
        "Lone one",
        "Text 😀 ",
        "Ana",
        "tag:x,2026:a",
    )
    assert (fine.url, fine.title) == ("https://news.example.com/b", "Fine é")


@pytest.mark.parametrize("escaped", [True, False], ids=["escape", "raw-bytes"])
def test_a_json_feed_with_a_lone_surrogate_keeps_the_entry(escaped: bool) -> None:
    """json.loads gives lone surrogates for ``\\ud800`` escapes and, decoding bytes
    with "surrogatepass", for raw ones: both once failed the whole feed when stored."""
    item = {"id": "1", "url": "https://news.example.com/a", "title": "Lone \ud800 one"}
    document = {"version": "https://jsonfeed.org/version/1.1", "items": [item]}
    body = json.dumps(document, ensure_ascii=escaped).encode("utf-8", "surrogatepass")
    assert (b"\\ud800" if escaped else b"\xed\xa0\x80") in body
    (entry,) = parse_feed(body, FEED, FETCHED, "application/feed+json").entries
    assert entry.title == "Lone one"


def _controls(text: str | None) -> list[str]:
    """The control characters (C0 but tab and newline, DEL, C1) in ``text``."""
    return [c for c in text or "" if (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0]


@pytest.mark.parametrize(
    "esc",
    ["\x1b", "&#27;", "&#x1B;", "\x9b"],
    ids=["raw-esc", "decimal-reference", "hex-reference", "raw-c1-csi"],
)
def test_control_characters_are_dropped_from_every_text_field(esc: str) -> None:
    """An OSC (retitles the terminal window) and a colour CSI, written raw or as
    character references, in every field feedsync stores."""
    evil = f"{esc}]0;pwned\x07 {esc}[31m"
    body = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
        f"<title>Channel {evil}</title><link>https://news.example.com/</link>"
        f"<item><title>Title {evil}</title><link>https://news.example.com/a</link>"
        f"<author>Author {evil}</author><guid>guid-{evil}</guid>"
        f"<description>Summary {evil}</description></item></channel></rss>"
    ).encode()
    parsed = parse_feed(body, FEED, FETCHED, XML)
    (entry,) = parsed.entries
    fields = [parsed.title, entry.title, entry.author, entry.summary, entry.guid]
    assert [_controls(f) for f in fields] == [[]] * 5, fields
    # the text around them stays (feedparser shows a C1 character as its cp1252 glyph)
    assert parsed.title and "]0;pwned" in parsed.title and parsed.title.startswith("Channel ")
    for field, name in (
        (entry.title, "Title"),
        (entry.author, "Author"),
        (entry.summary, "Summary"),
    ):
        assert field and field.startswith(name) and "]0;pwned" in field, field


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "empty document"),
        (b"<html><head><title>Hi</title></head><body><p>a page</p></body></html>", "not a feed"),
        (b'<?xml version="1.0"?><rss version="2.0"><channel><title>Cut', "malformed feed"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not a feed"),
    ],
)
def test_documents_that_are_not_feeds(body: bytes, reason: str) -> None:
    with pytest.raises(NotAFeed, match=reason):
        parse_feed(body, FEED, FETCHED, XML)


def test_an_empty_but_valid_feed_is_not_an_error() -> None:
    parsed = parse_feed(rss(""), FEED, FETCHED, XML)
    assert parsed.entries == () and parsed.problem is None


# Hand-made feeds with no items today: an HTML entity XML does not define in the channel.
EMPTY_CHANNELS = {
    "rss": (
        b'<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel>'
        b"<title>Noticias de Bogot&aacute;</title><link>https://news.example.com/</link>"
        b"<description>Noticias</description></channel></rss>\n"
    ),
    "rss1": (
        b'<?xml version="1.0"?>\n<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"'
        b' xmlns="http://purl.org/rss/1.0/"><channel rdf:about="https://news.example.com/">'
        b"<title>Noticias de Bogot&aacute;</title><link>https://news.example.com/</link>"
        b"<items><rdf:Seq></rdf:Seq></items></channel></rdf:RDF>\n<!-- cached -->\n"
    ),
    "atom": (
        b'<?xml version="1.0"?>\n<atom:feed xmlns:atom="http://www.w3.org/2005/Atom">'
        b"<atom:title>Noticias de Bogot&aacute;</atom:title><atom:id>urn:x</atom:id></atom:feed>"
    ),
}


@pytest.mark.parametrize("kind", sorted(EMPTY_CHANNELS))
def test_an_empty_feed_with_a_recoverable_error_is_empty_with_a_warning(kind: str) -> None:
    """Not "malformed feed, no entry readable": there was no entry to read, and a feed
    refused here goes to "failing" and is polled once a day."""
    parsed = parse_feed(EMPTY_CHANNELS[kind], FEED, FETCHED, XML)
    assert parsed.entries == () and parsed.skipped == 0
    assert parsed.title == "Noticias de Bogotá"
    assert parsed.warning is not None
    # the consequence first: nothing was lost; then what was wrong with the XML
    assert parsed.warning.startswith("no entries in the feed; malformed: ")
    assert "undefined entity" in parsed.warning


@pytest.mark.parametrize(
    "body",
    [
        # cut inside the first item's start tag, after a channel title with &aacute;
        EMPTY_CHANNELS["rss"].replace(
            b"</channel></rss>\n", b"<item><title>One</title></item></channel></rss>"
        )[: EMPTY_CHANNELS["rss"].index(b"</channel>") + len(b"<item")],
        EMPTY_CHANNELS["rss1"].replace(
            b"</channel>", b'</channel><item rdf:about="https://news.example.com/1">'
        )[: EMPTY_CHANNELS["rss1"].index(b"</channel>") + 40],
        # cut before its first entry: no item yet, but its root never ends
        EMPTY_CHANNELS["atom"][: EMPTY_CHANNELS["atom"].index(b"</atom:feed>")],
        # whole, but an item start tag no parser read: in doubt, refused (never "empty")
        EMPTY_CHANNELS["rss"].replace(b"</channel>", b"<!-- <item><title>One --></channel>"),
    ],
    ids=["rss-cut-in-item-tag", "rss1-cut-in-item-tag", "atom-cut-before-entry", "item-unread"],
)
def test_a_feed_broken_before_its_first_entry_is_still_refused(body: bytes) -> None:
    with pytest.raises(NotAFeed, match="malformed feed, no entry readable"):
        parse_feed(body, FEED, FETCHED, XML)


def test_malformed_but_readable_feed_yields_its_entries() -> None:
    body = rss("<item><title>Fish & chips</title><link>https://news.example.com/f</link></item>")
    parsed = parse_feed(body, FEED, FETCHED, XML)
    assert [e.title for e in parsed.entries] == ["Fish & chips"]
    assert parsed.problem


def test_encodings_declared_in_the_document() -> None:
    title = "東京の天気"
    for encoding in ("shift_jis", "euc-jp", "utf-8"):
        body = (
            f'<?xml version="1.0" encoding="{encoding}"?><rss version="2.0"><channel>'
            f"<title>t</title><item><title>{title}</title><link>/a</link></item>"
            "</channel></rss>"
        ).encode(encoding)
        assert parse_feed(body, FEED, FETCHED, XML).entries[0].title == title
    latin = (
        '<?xml version="1.0" encoding="iso-8859-1"?><rss version="2.0"><channel><title>t'
        "</title><item><title>Straße in Köln</title><link>/k</link></item></channel></rss>"
    )
    parsed = parse_feed(latin.encode("iso-8859-1"), FEED, FETCHED, XML)
    assert parsed.entries[0].title == "Straße in Köln"


# ---------------------------------------------------------------- the real-world corpus


def corpus_feeds() -> list[dict[str, object]]:
    manifest = corpus_or_skip("MANIFEST.json")
    return [f for f in json.loads(manifest.read_text())["files"] if f["kind"] == "feed"]


def test_every_corpus_feed_parses_or_is_refused_cleanly() -> None:
    root = corpus_or_skip()
    staged = 0
    for item in corpus_feeds():
        body = (root / str(item["file"])).read_bytes()
        try:
            parsed = parse_feed(body, "http://example.com/feed.xml", FETCHED, XML)
        except NotAFeed:
            continue
        staged += len(parsed.entries)
        for entry in parsed.entries:
            assert entry.url.startswith(("http://", "https://"))
            assert entry.title == " ".join(entry.title.split())
            assert entry.published is None or entry.published <= "2026-11-22T12:00:00Z"
    assert staged > 700  # the corpus holds ~800 readable entries


@pytest.mark.parametrize(
    ("path", "first_title"),
    [
        ("feeds/chardet/SHIFT_JIS/10e.org.xml", "いろいろちょっと待ってネ。"),
        ("feeds/chardet/SHIFT_JIS/moon-light.ne.jp.xml", "2005年大晦日視聴率"),
        ("feeds/chardet/EUC-JP/atom.ycf.nanet.co.jp.xml", "さだまさし"),
        (
            "feeds/chardet/EUC-JP/artifact-jp.com.xml",
            "Linuxで動作するTV録画サーバーのベアボーンセット",
        ),
        ("feeds/chardet/windows-1251-russian/aif.ru.health.xml", "Как пережить новогоднюю ночь"),
        ("feeds/chardet/KOI8-R/aif.ru.health.xml", "Как пережить новогоднюю ночь"),
        (
            "feeds/chardet/iso-8859-7-greek/naftemporiki.gr.bus.xml",
            "Τρία νέα χαρακτηριστικά στην εγχώρια αγορά αλυσίδων λιανικής",
        ),
    ],
)
def test_corpus_non_ascii_titles(path: str, first_title: str) -> None:
    body = corpus_or_skip(*path.split("/")).read_bytes()
    entries = parse_feed(body, "http://example.com/feed.xml", FETCHED, XML).entries
    assert entries[0].title.startswith(first_title)


def test_corpus_feeds_without_dates_and_with_relative_links() -> None:
    body = corpus_or_skip("feeds", "chardet", "EUC-JP", "artifact-jp.com.xml").read_bytes()
    entries = parse_feed(body, "http://example.com/feed.xml", FETCHED, XML).entries
    assert len(entries) == 15 and all(e.published is None for e in entries)
    body = corpus_or_skip("feeds", "feedjira", "SamRuby.xml").read_bytes()
    entries = parse_feed(body, "http://intertwingly.net/blog/index.atom", FETCHED, XML).entries
    assert len(entries) == 20
    assert all(e.url.startswith("http://intertwingly.net/blog/") for e in entries)


# ---------------------------------------------------------------- parse and stage


def _stage(storage: SQLiteStorage, feed_id: int, parsed: ParsedFeed) -> None:
    chosen = decide.candidates(parsed.entries, "", timedelta(hours=24))
    storage.record_poll(
        PollIntent(
            feed_id=feed_id,
            polled_at="2026-11-22T12:00:00Z",
            entries=chosen,
            newest_published=decide.newest_published(chosen),
            warning=parsed.warning,
            feed_title=parsed.title,
            etag=None,
            last_modified=None,
            next_poll_at="2026-11-22T13:00:00Z",
            owner="fuzz",
            lease_until="2026-11-22T12:15:00Z",
        )
    )


def test_corpus_feeds_stage_with_their_titles(tmp_path: Path) -> None:
    root = corpus_or_skip()
    storage = SQLiteStorage.open(tmp_path / "corpus.db")
    try:
        for index, item in enumerate(corpus_feeds()):
            url = f"http://feed{index}.example.com/feed.xml"
            storage.add_feed(url, "2026-11-22T12:00:00Z")
            feed_id = next(f.id for f in storage.feeds_to_poll() if f.url == url)
            try:
                parsed = parse_feed((root / str(item["file"])).read_bytes(), url, FETCHED, XML)
            except NotAFeed:
                continue
            _stage(storage, feed_id, parsed)
            with what_feedsync_sees(*live_and_card(tmp_path / "corpus.db", None)) as conn:
                stored = set(
                    conn.execute(
                        "SELECT s.url, s.title FROM news_summary s JOIN feed_entries fe "
                        "ON fe.summary_id = s.id WHERE fe.feed_id = ?",
                        (feed_id,),
                    )
                )
            assert stored == {(e.url, e.title) for e in parsed.entries}, item["file"]
        with what_feedsync_sees(*live_and_card(tmp_path / "corpus.db", None)) as conn:
            titles = {row[0] for row in conn.execute("SELECT title FROM news_summary")}
        assert {"さだまさし", "Как пережить новогоднюю ночь", "Entry One"} <= titles
    finally:
        storage.close()


def _mutate(data: bytes, cuts: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(data)
    for position, length, insert in cuts:
        at = position % (len(out) + 1)
        out[at : at + length % 64] = insert
    return bytes(out)


@pytest.fixture(scope="module")
def fuzz_storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStorage]:
    storage = SQLiteStorage.open(tmp_path_factory.mktemp("fuzz") / "fuzz.db")
    storage.add_feed("http://fuzz.example.com/feed.xml", "2026-11-22T12:00:00Z")
    yield storage
    storage.close()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_real_feeds_never_break_parse_and_stage(
    data: st.DataObject, fuzz_storage: SQLiteStorage
) -> None:
    root = corpus_or_skip()
    files = [str(item["file"]) for item in corpus_feeds()]
    original = (root / data.draw(st.sampled_from(files))).read_bytes()
    cuts = data.draw(
        st.lists(
            st.tuples(st.integers(0, 2**20), st.integers(0, 2**10), st.binary(max_size=40)),
            max_size=6,
        )
    )
    body = _mutate(original, cuts)
    if data.draw(st.booleans()):
        body = body[: data.draw(st.integers(0, len(body)))]
    try:
        parsed = parse_feed(
            body,
            "http://fuzz.example.com/feed.xml",
            FETCHED,
            data.draw(st.sampled_from([XML, None, "text/html"])),
        )
    except NotAFeed:
        return
    for entry in parsed.entries:  # what staging will accept, the schema will too
        assert entry.url.startswith(("http://", "https://")) and len(entry.url) <= 4096
        assert len(entry.title) <= 1000  # '' for an entry without a title
        assert entry.published is None or re.fullmatch(
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry.published
        )
    _stage(fuzz_storage, fuzz_storage.feeds_to_poll()[0].id, parsed)


def test_an_archive_of_a_feed_is_read_to_its_newest_entries() -> None:
    """A feed of 2,500 entries, oldest first (some are): the newest MAX_ENTRIES are read,
    the rest counted as skipped and said on the feed, so a 100,000-entry archive costs a
    bounded parse and stage (it once took a minute of CPU, past a Pi's watchdog)."""
    from feedsync.parse import MAX_ENTRIES

    start = datetime(2026, 1, 1, tzinfo=UTC)
    items = [
        Item(f"Story {n}", f"https://example.com/{n}", start + timedelta(minutes=n))
        for n in range(MAX_ENTRIES + 500)
    ]
    items.insert(10, Item("Undated", "https://example.com/undated"))
    body = sitegen.rss2("archive", "https://example.com/", items).encode()
    parsed = parse_feed(
        body, "https://example.com/feed.xml", start + timedelta(days=30), "application/rss+xml"
    )
    titles = [e.title for e in parsed.entries]
    assert len(titles) == MAX_ENTRIES
    assert titles[0] == "Story 500" and titles[-1] == f"Story {MAX_ENTRIES + 499}"
    assert parsed.skipped == 501 and "Undated" not in titles
    assert parsed.warning == f"501 entries skipped: beyond the newest {MAX_ENTRIES}"


@pytest.mark.parametrize("tail", ["", "<description><![CDATA[never closed"])
def test_an_archive_only_feedparser_reads_is_cut_to_its_newest_entries_first(tail: str) -> None:
    """The same archive, malformed (a bare '&' in each title), so that feedparser's
    lenient reader reads it: the newest MAX_ENTRIES are read and the rest counted, as on
    the fast path, and an <item> written inside a CDATA section or a comment is text, not
    an entry to keep or cut. A document whose entries cannot be told apart plainly (a
    CDATA section never closed, at the end) is read whole: the same entries."""
    from feedsync.parse import MAX_ENTRIES, fast_route

    start = datetime(2026, 1, 1, tzinfo=UTC)
    items = []
    for n in range(MAX_ENTRIES + 500):
        day = start + timedelta(minutes=n)
        extra = ""
        if n == MAX_ENTRIES + 400:
            extra = (
                "<description><![CDATA[<item><title>Fake</title>"
                "<link>https://example.com/fake</link></item>]]></description>"
                "<!-- <item><title>Fake too</title></item> -->"
            )
        items.append(
            f"<item><title>Story {n} & more</title><link>https://example.com/{n}</link>"
            f"<pubDate>{day:%a, %d %b %Y %H:%M:%S} GMT</pubDate>{extra}</item>"
        )
    items.insert(10, "<item><title>Undated</title><link>https://example.com/undated</link></item>")
    body = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>archive</title>'
        + "".join(items)
        + tail
        + "</channel></rss>"
    ).encode()
    assert fast_route(body, "application/rss+xml") is None  # feedparser's to read
    # cut before feedparser reads it, unless the entries cannot be told apart plainly
    raw = parse.read_feedparser(body, "https://example.com/feed.xml", "application/rss+xml")
    assert (len(raw.entries), raw.beyond) == (
        (MAX_ENTRIES + 501, 0) if tail else (MAX_ENTRIES, 501)
    )
    parsed = parse_feed(
        body, "https://example.com/feed.xml", start + timedelta(days=30), "application/rss+xml"
    )
    titles = [e.title for e in parsed.entries]
    assert len(titles) == MAX_ENTRIES
    assert titles[0] == "Story 500 & more" and titles[-1] == f"Story {MAX_ENTRIES + 499} & more"
    assert parsed.skipped == 501 and "Undated" not in titles
    assert not any(t.startswith("Fake") for t in titles)
    assert parsed.title == "archive"
    assert f"501 entries skipped: beyond the newest {MAX_ENTRIES}" in (parsed.warning or "")
