"""Article identity beyond (url, title): revisions and duplicates.

The rules (feedsync/identity.py) are tested directly, the fingerprint's threshold is
checked against every pair of real news pages in the corpus, and the four situations
users meet are run end to end: a title edited, an article moved to https, one story
under two URLs in two sources, and a "/live" page that is many stories.
"""

from __future__ import annotations

import gzip
import itertools
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import hypothesis.strategies as st
import pytest
import sitegen
from conftest import FeedsyncEnv, Site, corpus_or_skip
from hypothesis import given, settings
from sitegen import Item

from feedsync import identity
from feedsync.extract import extract_html

HOURS = datetime.now(UTC).replace(microsecond=0)


def ago(hours: float) -> datetime:
    return HOURS - timedelta(hours=hours)


# ---------------------------------------------------------------- the rules


def _simhash_one_bit_at_a_time(text: str) -> int | None:
    """The fingerprint as feedsync computed it until it counted bits in lanes: the
    reference the fast one must equal, since fingerprints stored in databases are
    compared with new ones."""
    import hashlib

    units = identity.tokens(text)
    if len(units) < identity.MIN_WORDS:
        return None
    weights = [0] * 64
    for start in range(len(units) - identity.SHINGLE + 1):
        shingle = " ".join(units[start : start + identity.SHINGLE]).encode()
        value = int.from_bytes(hashlib.blake2b(shingle, digest_size=8).digest(), "big")
        for bit in range(64):
            weights[bit] += 1 if value >> bit & 1 else -1
    unsigned = sum(1 << bit for bit in range(64) if weights[bit] > 0)
    return unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned


def test_fingerprints_are_the_ones_stored_by_earlier_versions() -> None:
    """Values computed by the one-bit-at-a-time code, written down: a database's stored
    fingerprints keep matching the new articles' ones."""
    golden = {
        " ".join(sitegen.prose("golden-one")): -8198124441753401674,
        " ".join(sitegen.prose("golden-two", paragraphs=12)): -6739549484022679488,
        "東京の天気、明日は晴れ。" * 30: 4612882362206920712,
        "東京都は明日から新しい交通規則を導入すると発表しました" * 5: 4679533913025544383,
    }
    assert {text: identity.fingerprint(text) for text in golden} == golden


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["the", "council", "budget", "東京", "été", "a", "x" * 13]),
            st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=14),
        ),
        min_size=0,
        max_size=400,
    )
)
def test_the_fast_fingerprint_equals_the_one_bit_at_a_time_one(words: list[str]) -> None:
    text = " ".join(words)
    assert identity.fingerprint(text) == _simhash_one_bit_at_a_time(text)


def test_fingerprints_of_near_copies_are_close_and_of_others_far() -> None:
    # real prose (the bundled demo article, written for feedsync), not the tests'
    # sixty-word vocabulary, whose repeated shingles make every edit count double
    page = (
        Path(__file__).resolve().parents[1]
        / "feedsync"
        / "demo_data"
        / "articles"
        / "harbour-wall-repairs.html"
    ).read_bytes()
    text = extract_html(page, "https://e.com/wall", 60).text
    words = text.split()
    edited = list(words)
    for index in (10, 40, 70):  # three words changed
        edited[index] = "changed"
    same = identity.fingerprint(text)
    near = identity.fingerprint(" ".join(edited))
    other = identity.fingerprint(" ".join(sitegen.prose("unrelated")) * 2)
    assert same is not None and near is not None and other is not None
    assert identity.distance(same, same) == 0
    assert identity.distance(same, near) <= identity.MAX_DISTANCE
    assert identity.distance(same, other) > identity.MAX_DISTANCE
    assert identity.fingerprint("too short to tell " * 5) is None
    japanese = "今日の東京は朝から晴れて気温は二十度まで上がりました" * 4
    assert identity.fingerprint(japanese) is not None  # characters, not words


def test_revision_and_duplicate_rules_in_order() -> None:
    assert identity.revision(by_guid=1, by_url=2, by_canonical=3) == identity.Link(1, "same GUID")
    assert identity.revision(by_guid=None, by_url=2, by_canonical=3).reason == (
        "same URL, new title"
    )
    assert identity.revision(by_guid=None, by_url=None, by_canonical=None) is None
    assert identity.duplicate(by_canonical=7, print_=None, recent=[]) == identity.Link(
        7, "same canonical URL"
    )
    found = identity.duplicate(
        by_canonical=None, print_=0b1011, recent=[(1, 0b1011 ^ 0b111), (2, 0b1011 ^ 0b1), (3, -1)]
    )
    assert found == identity.Link(2, "same text (fingerprint distance 1 of 64)")
    assert identity.duplicate(by_canonical=None, print_=0, recent=[(1, 0x1FF)]) is None


def test_no_two_real_news_pages_are_merged() -> None:
    """The false-positive rate of the fingerprint at its threshold, on real pages: every
    pair of distinct pages of the corpus."""
    root = corpus_or_skip("articles")
    texts = [
        extract_html(gzip.decompress(p.read_bytes()), "https://e.com/", 60).text
        for p in sorted((root / "scrapinghub-aeb" / "html").glob("*.html.gz"))
    ]
    evaldata = json.loads((root / "trafilatura-eval" / "evaldata.json").read_text())
    texts += [
        extract_html((root / "trafilatura-eval" / "eval" / e["file"]).read_bytes(), url, 60).text
        for url, e in evaldata.items()
    ]
    prints = [p for p in map(identity.fingerprint, texts) if p is not None]
    assert prints == [p for p in map(_simhash_one_bit_at_a_time, texts) if p is not None]
    distances = [identity.distance(a, b) for a, b in itertools.combinations(prints, 2)]
    assert len(prints) == 75 and len(distances) == 2775
    merged = [d for d in distances if d <= identity.MAX_DISTANCE]
    assert merged == []  # zero merges of different articles (closest pair: 16 bits apart)
    assert min(distances) >= 2 * identity.MAX_DISTANCE


# ---------------------------------------------------------------- end to end


def one_news_row(fs: FeedsyncEnv) -> tuple[int, str]:
    rows = fs.query("SELECT id, title FROM news")
    assert len(rows) == 1, rows
    return rows[0]


def test_a_title_edited_on_the_next_poll_is_not_fetched_again(fs: FeedsyncEnv, site: Site) -> None:
    page = site.page("budget", "Council aproves the budget")
    feed = site.feed("f.xml", [Item("Council aproves the budget", page, ago(2), guid="g-1")])
    fs.configure([feed])
    fs.run("run")
    site.feed("f.xml", [Item("Council approves the budget", page, ago(2), guid="g-1")])
    done = fs.run("run", "--json")

    assert site.hits("/articles/budget") == 1
    assert json.loads(done.stdout)["revisions"] == 1
    news_id, title = one_news_row(fs)
    assert title == "Council approves the budget"
    shown = json.loads(fs.run("show", str(news_id), "--json").stdout)
    assert [(r["title"], r["reason"]) for r in shown["revisions"]] == [
        ("Council aproves the budget", None),
        ("Council approves the budget", "same GUID"),
    ]
    text = fs.run("show", str(news_id)).stdout
    assert "revisions" in text and "Council aproves the budget (first seen)" in text


def test_a_title_edit_without_guids_links_by_url(fs: FeedsyncEnv, site: Site) -> None:
    # RSS 2.0 without <guid> (RSS 1.0 items are identified by their rdf:about, the URL)
    page = site.page("tide", "Tide gauge instaled")
    feed = site.feed("f.xml", [Item("Tide gauge instaled", page)])
    fs.configure([feed])
    fs.run("run")
    site.feed("f.xml", [Item("Tide gauge installed", page)])
    fs.run("run")
    assert site.hits("/articles/tide") == 1
    news_id, title = one_news_row(fs)
    assert title == "Tide gauge installed"
    reasons = [
        r["reason"] for r in json.loads(fs.run("show", str(news_id), "--json").stdout)["revisions"]
    ]
    assert reasons == [None, "same URL, new title"]


def test_a_feed_of_one_link_under_hundreds_of_titles_fetches_its_page_once(
    fs: FeedsyncEnv, site: Site
) -> None:
    # a live-blog feed that gives every update its own title and the same link: one
    # article, every other title a revision of it (staging them was cubic in their
    # number, inside the write transaction: tests/test_storage.py measures the cost)
    page = site.page("rolling", "Storm: live updates")
    items = [Item(f"Storm: update {n}", page, ago(1)) for n in range(300)]
    fs.configure([site.feed("live.xml", items)])
    done = json.loads(fs.run("run", "--json").stdout)

    assert site.hits("/articles/rolling") == 1
    assert done["revisions"] == 299
    news_id, _ = one_news_row(fs)
    shown = json.loads(fs.run("show", str(news_id), "--json").stdout)
    assert len(shown["revisions"]) == 300
    assert {r["reason"] for r in shown["revisions"][1:]} == {"same URL, new title"}


def test_a_move_to_https_with_the_same_guid_is_not_fetched_again(
    fs: FeedsyncEnv, site: Site
) -> None:
    page = site.page("ferry", "Ferry timetable cut")
    feed = site.feed("f.xml", [Item("Ferry timetable cut", page, ago(3), guid="tag:x,2026:ferry")])
    fs.configure([feed])
    fs.run("run")
    moved = page.replace("http://", "https://")  # nothing listens there: it must not be asked
    site.feed("f.xml", [Item("Ferry timetable cut", moved, ago(3), guid="tag:x,2026:ferry")])
    done = fs.run("run")
    assert site.hits("/articles/ferry") == 1
    assert "failed" not in fs.query("SELECT group_concat(state) FROM news_summary")[0][0]
    assert fs.query("SELECT url, state, link_reason FROM news_summary ORDER BY id") == [
        (page, "done", None),
        (moved, "done", "same GUID"),
    ]
    one_news_row(fs)
    assert "cannot connect" not in done.stderr


def test_one_story_under_two_urls_in_two_sources_is_stored_once(
    fs: FeedsyncEnv, site: Site
) -> None:
    # with rel=canonical: both pages name the same canonical URL
    canonical = site.url("/articles/harbour-wall")
    first = site.server.set(
        "/wire/harbour-wall",
        sitegen.article_page("Harbour wall repaired", "wall", canonical=canonical),
    )
    second = site.server.set(
        "/partner/harbour-wall-story",
        sitegen.article_page("Harbour wall repaired", "wall", canonical=canonical),
    )
    # without rel=canonical, and three words changed in the copy
    words = " ".join(sitegen.prose("lifeboat")).split()
    for index in (5, 50, 95):
        words[index] = "edited"
    original = site.server.set(
        "/wire/lifeboat", sitegen.article_page("Lifeboat crew honoured", "lifeboat")
    )
    copy = site.server.set(
        "/partner/lifeboat-copy",
        sitegen.article_page("Lifeboat crew is honoured", "x", paragraphs=[" ".join(words)]),
    )

    wire = site.feed(
        "wire.xml",
        [
            Item("Harbour wall repaired", first, ago(2)),
            Item("Lifeboat crew honoured", original, ago(2)),
        ],
    )
    fs.configure([wire])
    fs.run("run")
    partner = site.feed(
        "partner.xml",
        [
            Item("Harbour wall repaired", second, ago(1)),
            Item("Lifeboat crew is honoured", copy, ago(1)),
        ],
    )
    fs.configure([wire, partner])
    done = json.loads(fs.run("run", "--json").stdout)

    assert done["duplicates"] == 2
    assert sorted(t for _, t in fs.query("SELECT id, title FROM news")) == [
        "Harbour wall repaired",
        "Lifeboat crew honoured",
    ]
    for feed in (wire, partner):  # both feeds still show both stories
        shown = json.loads(fs.run("news", "--feed", feed, "--json").stdout)
        assert sorted(n["title"] for n in shown) == [
            "Harbour wall repaired",
            "Lifeboat crew honoured",
        ]
    wall = fs.scalar("SELECT id FROM news WHERE title = 'Harbour wall repaired'")
    shown = json.loads(fs.run("show", str(wall), "--json").stdout)
    assert [(d["url"], d["reason"]) for d in shown["duplicates"]] == [
        (second, "same canonical URL")
    ]
    assert {f["url"] for f in shown["feeds"]} == {wire, partner}
    boat = fs.scalar("SELECT id FROM news WHERE title = 'Lifeboat crew honoured'")
    reason = json.loads(fs.run("show", str(boat), "--json").stdout)["duplicates"][0]["reason"]
    assert reason.startswith("same text (fingerprint distance ")


def test_a_live_page_of_many_stories_keeps_them_apart_when_told(
    fs: FeedsyncEnv, site: Site
) -> None:
    live = site.page("live", "Live: election night")
    items = [Item("Live: polls close", live, ago(3), guid="live-1")]
    feed = site.feed("live.xml", items)
    fs.configure([])
    fs.config_path.write_text(
        fs.config_path.read_text() + (f'[[feeds]]\nurl = "{feed}"\nidentity = "url+title"\n')
    )
    fs.run("run")
    site.feed("live.xml", [*items, Item("Live: first results", live, ago(1), guid="live-2")])
    fs.run("run")
    assert sorted(t for _, t in fs.query("SELECT id, title FROM news")) == [
        "Live: first results",
        "Live: polls close",
    ]
    assert site.hits("/articles/live") == 2


def test_the_same_live_page_without_the_setting_is_one_story(fs: FeedsyncEnv, site: Site) -> None:
    live = site.page("live", "Live: election night")
    items = [Item("Live: polls close", live, ago(3), guid="live-1")]
    fs.configure([site.feed("live.xml", items)])
    fs.run("run")
    site.feed("live.xml", [*items, Item("Live: first results", live, ago(1), guid="live-2")])
    fs.run("run")
    assert one_news_row(fs)[1] == "Live: first results"  # the heuristic's view: a retitle


def test_identity_setting_is_checked(fs: FeedsyncEnv) -> None:
    fs.config_path.write_text('[[feeds]]\nurl = "https://e.com/f"\nidentity = "guid"\n')
    done = fs.run("feeds", expect=2)
    assert 'feeds[0].identity: expected "auto" or "url+title", got \'guid\'' in done.stderr


@pytest.mark.parametrize("window", ["1s"])
def test_revisions_are_sought_only_within_the_window(
    fs: FeedsyncEnv, site: Site, window: str
) -> None:
    page = site.page("old", "Old title")
    feed = site.feed("f.xml", [Item("Old title", page, ago(1), guid="g")])
    fs.configure([feed], identity={"window": window})
    fs.run("run")
    with sqlite3.connect(fs.live_path) as conn:  # the first sighting, long ago
        conn.execute("UPDATE news_summary SET first_seen_at = '2020-01-01T00:00:00Z'")
        conn.execute("UPDATE news SET fetched_at = '2020-01-01T00:00:00Z'")
    site.feed("f.xml", [Item("New title", page, ago(1), guid="g")])
    fs.run("run")
    assert site.hits("/articles/old") == 2  # outside the window: a new article
