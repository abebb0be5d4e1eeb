"""`feedsync search`: the query syntax, with one answer on SQLite (the card's index and
the scan of what is not indexed yet) and on PostgreSQL, through the real CLI."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sitegen
from conftest import BACKENDS, FeedsyncEnv
from sitegen import Item

from feedsync.localserver import LocalServer

FILLER = (
    "The council met on Tuesday evening to hear the report, and residents asked many "
    "questions about the budget for the coming year before the meeting closed."
)
STORIES = {
    "nasa": ("NASA launches a probe to the moon", "NASA said the probe left on time."),
    "plumber": (
        "Plumber mends the harbour pipes",
        "The plumber, Jim Anderson, mended the pipes by the harbour wall.",
    ),
    "storm": (
        "Ferry stays in port",
        "A winter storm kept the ferry in the harbour for a second day.",
    ),
    "bridge": ("Bridge closed after the gale", "Storm damage closed the old bridge."),
    "fees": ("Hafen erhöht die Gebühren", "Die Gebühren für Liegeplätze steigen im Januar."),
}
LATE = ("Café reopens on the quay", "The café by the quay reopened after the storm.")


def page(title: str, text: str) -> str:
    return sitegen.article_page(title, title, paragraphs=[text, FILLER, FILLER, FILLER])


@pytest.fixture(scope="module", params=BACKENDS)
def world(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[FeedsyncEnv]:
    """Four stories, and on SQLite in the card's search index; then one more, not
    indexed yet (found by the scan): every query below crosses both paths."""
    root = tmp_path_factory.mktemp("search")
    (root / "home").mkdir()
    url = None
    if request.param == "postgresql":
        url = request.getfixturevalue("pg_server").create_database("search")
    env = FeedsyncEnv(root=root, url=url)
    with LocalServer() as server:
        items = [
            Item(title, server.set(f"/articles/{slug}", page(title, text)))
            for slug, (title, text) in STORIES.items()
        ]
        feed = server.url("/feeds/news.xml")
        server.set("/feeds/news.xml", sitegen.rss2("News", feed, items), "application/rss+xml")
        env.configure([feed])
        env.run("run")
        if env.backend == "sqlite":
            from feedsync import timestamps
            from feedsync.config import StorageConfig
            from feedsync.storage.sqlite import SQLiteStorage

            store = SQLiteStorage.open(StorageConfig(db=env.db_path, card=None))
            try:
                indexed = store._card_db().index_all(timestamps.to_iso(timestamps.now()))
            finally:
                store.close()
            assert indexed == len(STORIES)
        items.append(Item(LATE[0], server.set("/articles/late", page(*LATE))))
        server.set("/feeds/news.xml", sitegen.rss2("News", feed, items), "application/rss+xml")
        env.run("run")
        yield env


def titles(env: FeedsyncEnv, *query: str) -> set[str]:
    done = env.run("search", *query, "--json")
    return {hit["title"] for hit in json.loads(done.stdout)}


def test_or_and_not_phrases_and_prefixes(world: FeedsyncEnv) -> None:
    nasa, plumber, ferry, bridge, _ = (title for title, _ in STORIES.values())
    cafe = LATE[0]
    assert titles(world, "NASA", "OR", "plumber") == {nasa, plumber}
    assert titles(world, "storm") == {ferry, bridge, cafe}
    assert titles(world, "storm", "ferry", "OR", "bridge") == {ferry, bridge}
    assert titles(world, "storm", "AND", "ferry") == {ferry}
    assert titles(world, '"winter storm"') == {ferry}
    assert titles(world, '"storm winter"') == set()
    assert titles(world, "harbour", "-plumber") == {ferry}  # a leading "-": without it
    assert titles(world, "harbour", "NOT", "plumber") == {ferry}
    assert titles(world, "-plumber", "harbour") == {ferry}  # first, with no "--"
    assert titles(world, "harb*") == titles(world, "harb") == {plumber, ferry}
    assert titles(world, "quay", "OR", "moon") == {cafe, nasa}  # the scan, and the index
    # a term begins a word: "son" is not in "Anderson", on both engines
    assert titles(world, "son") == set()
    assert titles(world, "ANDERSON") == {plumber}


def test_accents_do_not_matter_on_either_side(world: FeedsyncEnv) -> None:
    """What a feed reader's user expects (search --help and README say so): "gebuhren"
    finds "Gebühren", through the index and the scan alike, on both engines."""
    fees = STORIES["fees"][0]
    for query in ("gebuhren", "GEBÜHREN", "Gebühren", "liegeplatze", "erhoht"):
        assert titles(world, query) == {fees}, query
    assert titles(world, "cafe") == titles(world, "café") == titles(world, "CAFÉ") == {LATE[0]}
    hit = json.loads(world.run("search", "gebuhren", "--json").stdout)[0]
    assert "[Gebühren]" in hit["snippet"]
    assert "accents do not matter" in world.run("search", "--help").stdout


def test_only_the_words_searched_are_marked(world: FeedsyncEnv) -> None:
    done = world.run("search", "plumber", "AND")
    assert "[Plumber]" in done.stdout and "[plumber]" in done.stdout
    assert "[And" not in done.stdout and "Anderson" in done.stdout
    hit = json.loads(world.run("search", "harbour", "-plumber", "--json").stdout)[0]
    assert "[harbour]" in hit["snippet"] and "[plumber]" not in hit["snippet"]


def test_a_query_with_nothing_to_find_is_refused_in_one_line(world: FeedsyncEnv) -> None:
    done = world.run("search", "-plumber", expect=2)
    assert "a query needs a word to find" in done.stderr and done.stderr.count("\n") == 1
    done = world.run("search", "OR", "--", "...", expect=2)
    assert "no word in it" in done.stderr
    assert "AND, OR and NOT are operators" in world.run("search", "--help").stdout


def test_folding_is_one_character_for_one_whatever_the_text() -> None:
    """A match found in the folded text marks the same place in the text, so folding
    keeps the length; the fast path (one casefold of the whole text) gives what folding
    each character alone gives, "ß", "İ" and final sigmas included."""
    import random

    from feedsync.storage.search import _fold_char, fold

    rng = random.Random(23)
    pool = [*"ßẞİıΣσςﬁǅAaÉé漢字かなカナ한국어 .,-_", "\u0130", "\u1e9e"]
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))
        assert fold(text) == "".join(map(_fold_char, text)), repr(text)
        assert len(fold(text)) == len(text)
    assert fold("Straße ΣΑΣ 東京") == "straße σασ 東京"


def test_a_term_is_found_where_a_word_begins_and_nowhere_else() -> None:
    """Where a term matches (and so what a snippet marks): at the start of the text or
    after anything but a letter or digit ("_" and punctuation included), never inside a
    word; a phrase's words with only non-letters between them. Checked against the
    rule written as a lookbehind before the term, on random texts: the pattern that
    asks it after the word (searched for as a string, far faster) finds the same."""
    import random
    import re

    from feedsync.storage.search import Term, fold

    son = Term(("son",)).pattern
    text = "son anderson _son son's éson 1son\nson"
    assert [m.start() for m in son.finditer(text)] == [0, 14, 18, 34]
    phrase = Term(("winter", "storm")).pattern
    assert phrase.search("a winter  storm") and phrase.search("(winter)-storm")
    assert not phrase.search("winterstorm") and not phrase.search("a winter, big storm")

    def rule(words: tuple[str, ...]) -> re.Pattern[str]:
        body = r"[\W_]+".join(re.escape(fold(w)) for w in words)
        return re.compile(r"(?<![^\W_])" + body)

    rng = random.Random(7)
    for _ in range(5000):
        text = "".join(rng.choice("ab1é _.\n-") for _ in range(rng.randint(0, 24)))
        words = tuple(
            "".join(rng.choice("ab1é") for _ in range(rng.randint(1, 3)))
            for _ in range(rng.randint(1, 2))
        )
        found = [m.span() for m in Term(words).pattern.finditer(text)]
        assert found == [m.span() for m in rule(words).finditer(text)], (text, words)


def test_marks_come_off_as_one_pass_of_the_table_would_take_them() -> None:
    """fold's accent stripping (a ``str.replace`` per distinct character that loses a
    mark) gives what one ``translate`` through the table gives, whatever the script:
    Latin, Cyrillic (й), kana with a voicing mark (が), symbols (≠)."""
    import random

    from feedsync.storage.search import _BARE, _strip_marks, fold

    rng = random.Random(5)
    pool = [*"aeiouÉéèüÜñçÅåйЙёがガぱ≠∉ßİΣς漢字 .,-_’—", "\u212b", "e\u0301", "\ufb2a"]
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        folded = text.casefold() if len(text.casefold()) == len(text) else text
        assert _strip_marks(folded) == folded.translate(_BARE), repr(text)
        assert len(fold(text)) == len(text)


WORDS = ("storm", "Stormy", "ferry", "harbour", "bridge", "café", "winter", "quay", "the")


def _story(rng: random.Random, n: int) -> tuple[str, str]:
    title = f"Story {n}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 3)))
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))) + "."
    return title, body


def _search_as_before(store: Any, query: str, limit: int) -> list[Any]:
    """SQLite's search as it was until every candidate's row was read and judged, one
    statement each: the reference the lazy judging must agree with, hit for hit."""
    from feedsync.storage import search as fulltext
    from feedsync.storage.base import search_hit

    if store._tokenizer is None:
        store._tokenizer = fulltext.Tokenizer()
    wanted = fulltext.parse(query)
    match = fulltext.fts_match(wanted, store._tokenizer)
    months = store._months()
    scanned = store._scan(wanted, months, everything=match is None)
    found: list[tuple[float, int]] = []
    if match is not None:
        for month, _ in months:
            rows = store._month_rows("card_search", month, {"query": match, "limit": limit * 4})
            found += [(float(r["score"]), int(r["id"])) for r in rows]
    indexed = []
    seen = {int(r["id"]) for r in scanned}
    for _, article in sorted(found):
        if article in seen:
            continue
        rows = store._conn.execute(
            "SELECT id, url, title, published, feed_title, fetched_at, body"
            " FROM news_all WHERE id = ?",
            (article,),
        ).fetchall()
        if rows and wanted.matches(str(rows[0]["title"]) + " " + str(rows[0]["body"])):
            indexed.append(rows[0])
            seen.add(article)
    newest = sorted(scanned, key=lambda r: r["published"] or r["fetched_at"], reverse=True)
    titled = [r for r in newest if wanted.matches(r["title"])]
    titled += [r for r in indexed if wanted.matches(r["title"])]
    titled += [r for r in newest if not wanted.matches(r["title"])]
    titled += [r for r in indexed if not wanted.matches(r["title"])]
    return [search_hit(r, wanted, ("[", "]")) for r in titled[:limit]]


def test_sqlite_search_reads_and_judges_only_what_it_needs_and_finds_the_same(
    tmp_path: Path,
) -> None:
    """Only the texts a page of hits needs are read and judged (titles first decide the
    order): the hits, their order and their snippets are those of judging every
    candidate, for any limit, on an archive of indexed and not yet indexed articles."""
    import random

    from feedsync import timestamps
    from feedsync.config import StorageConfig
    from feedsync.storage.sqlite import SQLiteStorage

    rng = random.Random(3)
    (tmp_path / "home").mkdir()
    env = FeedsyncEnv(root=tmp_path)
    with LocalServer() as server:
        items = []
        feed = server.url("/feeds/news.xml")
        for n in range(48):
            if n == 40:  # the rest arrive after the index was built: found by the scan
                store = SQLiteStorage.open(StorageConfig(db=env.db_path, card=None))
                try:
                    store._card_db().index_all(timestamps.to_iso(timestamps.now()))
                finally:
                    store.close()
            title, body = _story(rng, n)
            items.append(Item(title, server.set(f"/articles/{n}", page(title, body))))
            if n % 8 == 7:
                server.set(
                    "/feeds/news.xml", sitegen.rss2("News", feed, items), "application/rss+xml"
                )
                if n == 7:
                    env.configure([feed])
                env.run("run")
    store = SQLiteStorage.open(StorageConfig(db=env.db_path, card=None))
    try:
        queries = ["storm", "storm -ferry", "harbour OR bridge", '"winter storm"', "cafe",
                   "sto*", "council", "-storm council", "ferry quay -the"]  # fmt: skip
        for query in queries:
            for limit in (1, 2, 3, 5, 8, 13, 60):
                got = store.search(query, limit, ("[", "]"))
                assert got == _search_as_before(store, query, limit), (query, limit)
        assert len(store.search("council", 60, ("[", "]"))) == 48
    finally:
        store.close()


def test_an_ascii_query_judges_english_with_typographic_punctuation_as_the_fold_does() -> None:
    """The shortcut for English with curly quotes and dashes (each a space to an ASCII
    term) gives the judge's answer on the folded text, for words, phrases, prefixes,
    exclusions and ORs, in texts with and without accents, "ß" and kana too."""
    from feedsync.storage.search import _ACCENTED, _PUNCTUATION, fold, parse

    for code in [0xA0, 0xAB, 0xBB, *range(0x2000, 0x2070)]:
        char = chr(code)
        assert _PUNCTUATION.fullmatch(char) and not char.isalnum() and char != "_"
        assert char.casefold() == char and not _ACCENTED.search(char), hex(code)
    assert _PUNCTUATION.search("\u009f\u00aa\u00b5\u2070") is None
    rng = random.Random(11)
    pool = [*"ab ab.'-_1", "ab", "ba", "\u2019", "\u201c", "\u2014", "\u00a0", "\u00ab",
            "\u2026", "é", "É", "ß", "が", "\u212a", "K"]  # fmt: skip
    words = ["ab", "ba", "a", "b1", "ab'ab", "a-b", "k", "ss", "e"]
    for _ in range(4000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))
        parts = []
        for _ in range(rng.randint(1, 3)):
            word = rng.choice(words)
            if rng.random() < 0.3:
                word = f'"{word} {rng.choice(words)}"'
            parts.append(rng.choice(["", "", "-", "NOT ", "OR "]) + word + rng.choice(["", "*"]))
        try:
            query = parse(" ".join(parts))
        except ValueError:
            continue
        assert query.ascii
        assert query.matches(text) == query.root.matches(fold(text)), (text, query.text)
