"""The round trip of ``feedsync serve``'s full-text feeds through ``reader`` (lemon24/reader,
the bench's anchor): what a reader app gets over HTTP from the real command is what
``feedsync export`` gives for the same database, the same articles with the same titles,
links and dates (an article's own date, else when it was fetched; compared in UTC, to the
second), on both engines. The server asks for its token even on loopback, as a reader on
the LAN meets it: every URL reader is given, and every ``next``, carries it.

reader is the independent reader of both formats: its own HTTP client fetches the
served URLs, feedparser (its vendored copy) reads the Atom and its own parser the JSON
Feed 1.1. It runs in the bench's own venv (bench/baseline.py, ``bench/.venv-baseline``)
through tests/reader_roundtrip.py, never in feedsync's: reader is no dependency of
feedsync. The first run creates that venv with pip from PyPI (30-60 s, once; later runs
reuse it). Without a package index the test skips, saying why, except under
tests/run.sh (so CI), which sets FEEDSYNC_READER_REQUIRED=1: there it fails.
tests/test_serve_syndication.py reads the same documents with feedparser (Atom) and
with json.loads (JSON Feed, which feedparser 6 does not read), in-process.

The server pages its documents ([serve] window: 8 here, against 27 articles): reader
does not follow RFC 5005's ``next`` (nor JSON Feed's ``next_url``), so the test follows
it, gives reader every page's URL as a feed of its own, and checks each page holds the
next slice of ``feedsync news --all``'s listing and that the pages together hold every
article once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import BACKENDS, FeedsyncEnv, cli_env
from servedb import FEEDS, START, extract_all, fill, poll
from serving import Serving

from feedsync.records import Entry
from feedsync.storage.base import SQLStorage
from feedsync.timestamps import to_iso

pytestmark = pytest.mark.parametrize("backend", BACKENDS, indirect=True)

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).resolve().parent / "reader_roundtrip.py"
TOKEN = "round-trip-token-0123456789"
WINDOW = 8
FILLED = 24  # fill(): every 7th article also carried by a second feed, every 11th undated
# what a feed may put in a title: markup characters, quotes, non-ASCII (accents, CJK, an
# emoji outside the BMP); and a link whose query needs escaping in an attribute
AWKWARD_TITLE = 'Café <b>bold</b> & "quotes" — 東京 ≠ <script>x</script> 🚀'
AWKWARD_LINK = "https://site.example/a?x=1&y=<2>&z='3'"
UNDATED_TITLE = "Ünïcode without a date ½"
UNDATED_LINK = "https://site.example/undated/ü"
# text that looks escaped already: a reader that unescapes twice shows "AT&T" and "<not"
ENTITY_TITLE = "AT&amp;T, &lt;not a tag&gt;, &#x27; and <![CDATA[x]]>"
ENTITY_LINK = "https://site.example/p?a=1&amp;b=2"
AWKWARD = {AWKWARD_LINK: AWKWARD_TITLE, UNDATED_LINK: UNDATED_TITLE, ENTITY_LINK: ENTITY_TITLE}


@pytest.fixture(scope="module")
def reader_python() -> Path:
    """The bench venv's python, with reader in it: created on first use (before any
    server is started: without it, the module skips at once)."""
    sys.path.insert(0, str(REPO))
    try:
        from bench import baseline
        from bench.measure import BenchError
    finally:
        sys.path.remove(str(REPO))
    try:
        baseline.ensure(lambda line: print(line, file=sys.stderr))
    except BenchError as exc:
        reason = f"reader's venv cannot be made (no package index?): {exc}"
        if os.environ.get("FEEDSYNC_READER_REQUIRED") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return baseline.python()


def open_storage(fs: FeedsyncEnv) -> SQLStorage:
    if fs.url is None:
        from feedsync.storage.sqlite import SQLiteStorage

        return SQLiteStorage.open(fs.db_path)
    from feedsync.storage.postgresql import PostgreSQLStorage

    return PostgreSQLStorage.open(fs.url)


def fill_awkward(fs: FeedsyncEnv) -> int:
    """FILLED articles, and three awkward ones, all carried by the first feed: a title
    with markup and non-ASCII and a link with ``&``, ``<`` and quotes (carried by the
    second feed too); one with no date of its own (its date is when it was fetched) and
    non-ASCII in its link; one whose title and link look escaped already. Returns the
    first feed's id."""
    store = open_storage(fs)
    try:
        ids = fill(store, FILLED)
        first, second = ids[FEEDS[0].url], ids[FEEDS[1].url]
        later = START + timedelta(days=1, seconds=7)
        entries = [
            Entry(AWKWARD_LINK, AWKWARD_TITLE, to_iso(START + timedelta(hours=5))),
            Entry(UNDATED_LINK, UNDATED_TITLE, None),
            Entry(ENTITY_LINK, ENTITY_TITLE, to_iso(START + timedelta(minutes=90))),
        ]
        poll(store, first, entries, later)
        poll(store, second, entries[:1], later)
        extract_all(store, later)
        return first
    finally:
        store.close()


@pytest.fixture
def served(fs: FeedsyncEnv) -> Iterator[tuple[Serving, int]]:
    """A filled database behind a running ``feedsync serve`` that asks for a token even on
    loopback, as a reader on the LAN meets it (its URLs carry the token)."""
    fs.configure(serve={"window": WINDOW, "token": TOKEN, "trust_loopback": False})
    feed_id = fill_awkward(fs)
    running = Serving(fs, "serve", "--listen", "127.0.0.1:0", stub=False).started()
    try:
        yield running, feed_id
    finally:
        code, errors = running.stop()
        assert code == 0, errors


def pages(base: str, path: str) -> list[str]:
    """The URLs of a feed document and of every page after it, following ``next``."""
    urls = [f"{base}{path}?token={TOKEN}"]
    with httpx.Client(timeout=30, trust_env=False) as client:
        while len(urls) < 100:
            answer = client.get(urls[-1])
            assert answer.status_code == 200, answer.text
            if path.endswith(".json"):
                following = answer.json().get("next_url")
            else:
                root = ET.fromstring(answer.content)
                link = root.find("{http://www.w3.org/2005/Atom}link[@rel='next']")
                following = None if link is None else link.get("href")
            if following is None:
                return urls
            assert f"token={TOKEN}" in following  # a reader cannot log in: links carry it
            urls.append(following)
    raise AssertionError(f"{path}: next never ends")


def read_with_reader(python: Path, fs: FeedsyncEnv, urls: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [str(python), str(SCRIPT), *urls],
        capture_output=True,
        text=True,
        env=cli_env(fs.root / "home"),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    for url, feed in found.items():
        assert feed["error"] is None, f"reader could not read {url}: {feed['error']}"
    return found


def utc(value: str) -> datetime:
    """An ISO 8601 date in UTC, to the second."""
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return when.astimezone(UTC).replace(microsecond=0)


def exported(fs: FeedsyncEnv) -> dict[str, dict[str, Any]]:
    """``feedsync export``'s articles by their URL."""
    rows = [json.loads(line) for line in fs.run("export").stdout.splitlines()]
    return {row["url"]: row for row in rows}


def listing(fs: FeedsyncEnv, *feed: str) -> list[int]:
    """The ids ``feedsync news`` lists, newest first (of one feed: ``--feed ID``)."""
    done = fs.run("news", "--all", "--json", *(("--feed", *feed) if feed else ()))
    return [row["id"] for row in json.loads(done.stdout)]


def assert_as_exported(
    base: str, entries: list[dict[str, Any]], rows: dict[str, dict[str, Any]]
) -> None:
    """Each entry reader stored is the exported article of its link: id, title, dates."""
    for entry in entries:
        row = rows[entry["link"]]
        assert entry["id"] == f"{base}/article/{row['id']}"
        assert entry["title"] == row["title"]
        shown = row["published"] or row["fetched_at"]
        assert utc(entry["published"]) == utc(shown), entry
        assert utc(entry["updated"]) == max(utc(shown), utc(row["fetched_at"])), entry


@pytest.mark.parametrize("kind", ["atom", "json"])
def test_reader_reads_back_what_export_gives(
    reader_python: Path, served: tuple[Serving, int], fs: FeedsyncEnv, kind: str
) -> None:
    running, feed_id = served
    everything = pages(running.base, f"/feeds/all.{kind}")
    one_feed = pages(running.base, f"/feeds/{feed_id}.{kind}")
    read = read_with_reader(reader_python, fs, everything + one_feed)
    rows = exported(fs)
    assert len(rows) == FILLED + len(AWKWARD)
    version = {"atom": "atom10", "json": "json11"}[kind]
    assert {feed["version"] for feed in read.values()} == {version}  # each its own parser

    for urls, listed in ((everything, listing(fs)), (one_feed, listing(fs, str(feed_id)))):
        # every page is the next window of the listing; together, every article once
        got = [[e["id"] for e in read[url]["entries"]] for url in urls]
        want = [f"{running.base}/article/{i}" for i in listed]
        assert [sorted(ids) for ids in got] == [
            sorted(want[n : n + WINDOW]) for n in range(0, len(got) * WINDOW, WINDOW)
        ]
        assert sum(len(ids) for ids in got) == len(listed)
        for url in urls:
            assert_as_exported(running.base, read[url]["entries"], rows)

    # all of them: exactly the articles export gives, each once
    assert sorted(e["link"] for url in everything for e in read[url]["entries"]) == sorted(rows)
    # the awkward ones came through whole, once in each document that carries them
    links = [e["link"] for url in everything + one_feed for e in read[url]["entries"]]
    assert all(links.count(link) == 2 for link in AWKWARD)
    titles = {e["link"]: e["title"] for url in everything for e in read[url]["entries"]}
    assert {link: titles[link] for link in AWKWARD} == AWKWARD
    assert rows[UNDATED_LINK]["published"] is None  # dated by its fetch, as exported
    assert len(listed) < len(rows)  # the one feed is a part: the pages are its own
