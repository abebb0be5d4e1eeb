"""fastfeedparser reads what it is routed, and feedparser (the referee) agrees.

Every document parse.read routes to fastfeedparser must give the very ParsedFeed that
feedparser alone gives: the link, title, date, GUID, summary and author of every entry, the
feed's title, ttl, problem and skipped entries. Checked on every feed of the real-world
corpus (served with several content types) and on generated feeds in each format with the
shapes that differ between the two readers; both with fastfeedparser's native core and with
its pure-Python reader (the one a Raspberry Pi installs). docs/architecture.md lists what
is routed to feedparser, and why.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import sitegen
from conftest import corpus_or_skip
from hypothesis import given, settings
from hypothesis import strategies as st
from sitegen import Item

from feedsync import parse
from feedsync.parse import NotAFeed, ParsedFeed

fastfeedparser = pytest.importorskip("fastfeedparser")

FEED = "https://news.example.com/feeds/world.xml"
FETCHED = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CONTENT_TYPES = [
    "application/xml",
    "application/rss+xml; charset=utf-8",
    "text/xml",
    "text/xml; charset=UTF-8",
    None,
]


@pytest.fixture(params=["native", "pure-python"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """fastfeedparser as this machine has it, and without its compiled part (a Pi's)."""
    if request.param == "pure-python":
        monkeypatch.setattr(fastfeedparser.main, "_core", None)
    elif fastfeedparser.main._core is None:
        pytest.skip("this fastfeedparser has no native core")
    return str(request.param)


def both(body: bytes, content_type: str | None, url: str = FEED) -> tuple[bool, object, object]:
    """(routed to fastfeedparser?, what parse_feed gives, what feedparser alone gives);
    a NotAFeed is compared by its message."""

    def outcome(fast: bool) -> ParsedFeed | str:
        try:
            return parse._normalise(parse.read(body, url, content_type, fast=fast), url, FETCHED)
        except NotAFeed as refused:
            return f"NotAFeed: {refused}"

    fast = parse.read_fast(body, url, content_type) is not None
    return fast, outcome(True), outcome(False)


def differences(got: object, want: object) -> list[str]:
    if got == want:
        return []
    if not isinstance(got, ParsedFeed) or not isinstance(want, ParsedFeed):
        return [f"{got!r:.200} != {want!r:.200}"]
    found = [
        f"feed {name}: {getattr(got, name)!r:.200} != {getattr(want, name)!r:.200}"
        for name in ("title", "skipped", "skip_reasons", "problem", "ttl")
        if getattr(got, name) != getattr(want, name)
    ]
    if len(got.entries) != len(want.entries):
        found.append(f"{len(got.entries)} entries != {len(want.entries)}")
    for index, (a, b) in enumerate(zip(got.entries, want.entries, strict=False)):
        for name in ("url", "title", "published", "summary", "author", "guid"):
            if getattr(a, name) != getattr(b, name):
                found.append(
                    f"entry {index} {name}: {getattr(a, name)!r:.200} != {getattr(b, name)!r:.200}"
                )
    return found


# ---------------------------------------------------------------- the real-world corpus


def corpus_files() -> list[str]:
    manifest = corpus_or_skip("MANIFEST.json")
    return [
        str(f["file"]) for f in json.loads(manifest.read_text())["files"] if f["kind"] == "feed"
    ]


def test_every_corpus_feed_reads_the_same_on_either_path(reader: str) -> None:
    root = corpus_or_skip()
    fast_documents = set()
    problems = []
    for name in corpus_files():
        body = (root / name).read_bytes()
        for content_type in CONTENT_TYPES:
            fast, got, want = both(body, content_type, "http://example.com/feed.xml")
            if fast:
                fast_documents.add(name)
            problems += [f"{name} ({content_type}): {d}" for d in differences(got, want)]
    assert problems == []
    # the real-world RSS 2.0 / RSS 0.9x / Atom 1.0 news feeds in UTF-8 take the fast path
    assert len(fast_documents) >= 15, sorted(fast_documents)
    assert "feeds/fastfeedparser/benchmark_data/78f77fae2e1ffc14" in fast_documents


@pytest.mark.parametrize(
    "name",
    [
        "feeds/chardet/SHIFT_JIS/10e.org.xml",  # Shift_JIS, RSS 1.0
        "feeds/chardet/EUC-JP/atom.ycf.nanet.co.jp.xml",  # EUC-JP, Atom 0.3
        "feeds/chardet/iso-8859-7-greek/naftemporiki.gr.bus.xml",  # ISO-8859-7
        "feeds/feed-rs/rss2/rss_2.0_encoding_1.xml",  # ISO-8859-1
        "feeds/feedparser/illformed/rss_incomplete_cdata.xml",  # malformed: bozo
        "feeds/feedparser/encoding/bozo_invalid-bytes-with-bom.xml",  # not what it says
        "feeds/fastfeedparser/integration/utf16_encoded.xml",  # declared UTF-16, is UTF-8
        "feeds/mozilla-comm-central/atom03_dates.xml",  # Atom 0.3
        "feeds/feed-rs/atom/atom_xml_base.xml",  # xml:base
        "feeds/feedjira/InvalidDateFormat.xml",  # a date feedparser cannot read
    ],
)
def test_what_feedparser_keeps(name: str) -> None:
    """Malformed, mis-encoded, non-UTF-8 and Atom 0.3 documents are feedparser's."""
    body = corpus_or_skip(*name.split("/")).read_bytes()
    assert parse.read_fast(body, "http://example.com/feed.xml", "application/xml") is None


# ---------------------------------------------------------------- generated feeds


def _items(kind: str, rng: random.Random) -> list[Item]:
    start = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
    items = []
    for n in range(12):
        words = " ".join(rng.choice(sitegen.WORDS) for _ in range(rng.randint(4, 9)))
        published = start - timedelta(minutes=37 * n) if n % 5 != 4 else None
        link = f"https://news.example.com/2026/{n}-{words.replace(' ', '-')}.html?utm_source=rss"
        summary = " ".join(sitegen.prose(f"{kind}-{n}", paragraphs=1, sentences=2))
        guid: str | None = f"tag:news.example.com,2026:{n}"
        title = words.capitalize()
        if kind == "html":
            summary = f'<p class="lead" style="x">{summary}</p><img src="/i/{n}.jpg" alt="">'
            summary += "<script>alert(1)</script><iframe src='https://evil.example/'></iframe>"
        elif kind == "entities":
            title = f"{title} &amp; Fish & chips <b>bold</b> AT&T"
            summary = f"{summary} &lt;b&gt; 1 < 2 &copy; &#233; &#x263A; one CR two"
        elif kind == "relative":
            link = f"../2026/{n}.html"
            guid = f"/stories/{n}"
        elif kind == "no-guid":
            guid = None
        elif kind == "numeric-guid":  # fastfeedparser reads it as a date (milliseconds)
            guid = str(1559104147038 + n)
            published = published if n % 2 else None
        elif kind == "unicode":
            title = f"東京の天気 {n} — Straße in Köln «{words}»"
            summary = f"Καλημέρα {summary} emoji 🚩"
        elif kind == "separators":  # raw U+2028: fastfeedparser makes it a newline
            summary = f"{summary}\u2028{summary}"
        elif kind == "c1":  # legal in XML; feedparser shows them as their cp1252 glyphs
            title = f"{title} \x93quoted\x94 \x85"
            summary = f"one\x85two\x93three {summary} Ã© (UTF-8 read as Latin-1)"
        elif kind == "controls":
            title = f"{title} \x1b]0;pwned\x07 \x1b[31m"
            summary = f"one\x85two\x93three\x00{summary}"
        items.append(Item(title, link, published, guid=guid, summary=summary))
    return items


KINDS = [
    "plain",
    "html",
    "entities",
    "relative",
    "no-guid",
    "numeric-guid",
    "unicode",
    "separators",
    "c1",
    "controls",
]


def generated() -> Iterator[tuple[str, bytes, str]]:
    rng = random.Random(21)
    for kind in KINDS:
        for fmt, (render, content_type) in sitegen.FORMATS.items():
            items = _items(kind, rng)
            try:
                text = render(f"World {kind} & <more>", FEED, items)
            except ValueError:
                continue
            body = text.replace(" CR ", " &#13; ").encode("utf-8")  # a CR as a reference
            # control characters XML cannot hold are written as they would be by a careless
            # publisher: the document is then malformed, and feedparser's to read
            yield f"{kind}-{fmt}", body, content_type


@pytest.mark.parametrize("content_type", ["as served", *CONTENT_TYPES])
def test_generated_feeds_read_the_same_on_either_path(
    reader: str, content_type: str | None
) -> None:
    fast_documents = []
    problems = []
    for name, body, own_type in generated():
        fast, got, want = both(body, own_type if content_type == "as served" else content_type)
        if fast:
            fast_documents.append(name)
        problems += [f"{name}: {d}" for d in differences(got, want)]
    assert problems == []
    if content_type != "as served":
        return
    # what the fast path is for: well-formed UTF-8 feeds of every format
    assert {"plain-rss2", "plain-atom", "plain-rdf", "html-rss2", "unicode-rss2"} <= set(
        fast_documents
    ), fast_documents


def bench_like_feeds() -> list[tuple[bytes, str]]:
    """Feeds as bench/world.py renders them: 50 entries each, 6 RSS 2.0 to 3 Atom to 1 RSS
    1.0, every entry with its guid."""
    rng = random.Random(7)
    base = datetime(2026, 11, 22, tzinfo=UTC)
    feeds = []
    for f in range(10):
        fmt = ("rss2",) * 6 + ("atom",) * 3 + ("rdf",)
        render, content_type = sitegen.FORMATS[fmt[f]]
        items = []
        for i in range(50):
            words = [rng.choice(sitegen.WORDS) for _ in range(rng.randint(6, 11))]
            slug = "-".join(words[:4]) + f"-{f}-{i}"
            items.append(
                Item(
                    " ".join(words).capitalize(),
                    f"http://127.0.0.1:8000/w0/articles/{slug}",
                    base - timedelta(minutes=rng.randint(0, 4000)),
                    guid=f"tag:bench.invalid,2026:w0/{slug}",
                    summary=" ".join(sitegen.prose(slug, paragraphs=1, sentences=2)),
                )
            )
        url = f"http://127.0.0.1:8000/w0/feeds/{f}.xml"
        feeds.append((render(f"Feed {f}", url, items).encode(), content_type))
    return feeds


def test_bench_feeds_all_take_the_fast_path_and_agree(reader: str) -> None:
    for body, content_type in bench_like_feeds():
        fast, got, want = both(body, content_type, "http://127.0.0.1:8000/w0/feeds/f.xml")
        assert fast
        assert differences(got, want) == []
        assert isinstance(got, ParsedFeed) and len(got.entries) == 50


def test_without_fastfeedparser_feedparser_reads_everything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body, content_type = bench_like_feeds()[0]
    with_it = parse.parse_feed(body, FEED, FETCHED, content_type)
    monkeypatch.setattr(parse.fast, "_fastfeedparser", lambda: None)
    assert parse.read_fast(body, FEED, content_type) is None
    assert parse.parse_feed(body, FEED, FETCHED, content_type) == with_it


def test_a_document_fastfeedparser_refuses_is_feedparsers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body, content_type = bench_like_feeds()[0]

    def refuse(*args: object, **kwargs: object) -> None:
        raise ValueError("no")

    monkeypatch.setattr(fastfeedparser, "parse", refuse)
    assert parse.read_fast(body, FEED, content_type) is None
    assert len(parse.parse_feed(body, FEED, FETCHED, content_type).entries) == 50


# ---------------------------------------------------------------- the rules behind the route

_RFC822_DATES = st.builds(
    lambda moment, zone, weekday, seconds: (
        (moment.strftime("%a, ") if weekday else "")
        + moment.strftime("%d %b %Y %H:%M" + (":%S" if seconds else ""))
        + " "
        + zone
    ),
    st.datetimes(datetime(1990, 1, 1), datetime(2099, 12, 31)),
    st.sampled_from(["GMT", "UT", "UTC", "Z", "+0000", "+0900", "-0500", "+0530", "-1200"]),
    st.booleans(),
    st.booleans(),
)
_W3C_DATES = st.builds(
    lambda moment, zone, fraction: (
        moment.strftime("%Y-%m-%dT%H:%M:%S")
        + (f".{moment.microsecond:06d}"[: fraction + 1] if fraction else "")
        + zone
    ),
    st.datetimes(datetime(1990, 1, 1), datetime(2099, 12, 31)),
    st.sampled_from(["Z", "+00:00", "+09:00", "-05:00", "+05:30", "-12:00"]),
    st.integers(0, 6),
)


@settings(max_examples=300, deadline=None)
@given(date=st.one_of(_RFC822_DATES, _W3C_DATES), cdata=st.booleans())
def test_the_dates_the_fast_path_takes_read_the_same(date: str, cdata: bool) -> None:
    """The date forms the fast path lets through give one instant in both parsers; a date
    in a CDATA section is feedparser's."""
    written = f"<![CDATA[{date}]]>" if cdata else date
    body = sitegen.rss2("T", FEED, [Item("A", "https://news.example.com/a")]).replace(
        "<description>", f"<pubDate>{written}</pubDate><description>"
    )
    fast, got, want = both(body.encode(), "application/rss+xml")
    assert fast != cdata, date
    assert differences(got, want) == [], date


@settings(max_examples=200, deadline=None)
@given(date=st.text(st.characters(codec="ascii", blacklist_characters="<&"), max_size=40))
def test_any_date_reads_the_same_on_either_path(date: str) -> None:
    """Whatever a date element holds: the same instant or none, on either path."""
    body = sitegen.rss2("T", FEED, [Item("A", "https://news.example.com/a")]).replace(
        "<description>", f"<pubDate>{date}</pubDate><description>"
    )
    _fast, got, want = both(body.encode(), "application/rss+xml")
    assert differences(got, want) == [], date


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.characters(blacklist_characters="<&\r", codec="utf-8"), max_size=80))
def test_text_without_markup_is_left_as_it_is(text: str) -> None:
    """Summaries without "<", "&" or a carriage return skip feedparser's sanitiser: it would
    not change them."""
    from feedparser.sanitizer import _sanitize_html
    from feedparser.urls import resolve_relative_uris

    stripped = text.strip()
    resolved = resolve_relative_uris(stripped, FEED, "utf-8", "text/html")
    assert _sanitize_html(resolved, "utf-8", "text/html") == stripped
