"""feedsync serve's full-text feeds (feedsync/serve/syndication.py), as a reader app sees
them: Atom with RFC 4287's required elements, JSON Feed 1.1 with its types, both read
back by feedparser to what ``feedsync export`` gives for the same database, pages that
follow ``next`` to every article once, a 304 for a reader that has the page, the OPML,
and documents that stay well-formed whatever a feed put in a title or a text.
(``reader``, the independent reader of Atom and JSON Feed both, reads them over HTTP from
the real ``feedsync serve``: tests/test_serve_roundtrip.py.)"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import timedelta
from email.utils import parsedate_to_datetime
from urllib.parse import parse_qs, urlsplit

import feedparser
import pytest
from conftest import FeedsyncEnv
from servedb import FEEDS, START, extract_all, fill, poll

from feedsync import config as config_module
from feedsync.records import Article, Entry
from feedsync.serve import routes, syndication
from feedsync.serve.web import Request, Response
from feedsync.storage.sqlite import SQLiteStorage
from feedsync.timestamps import to_iso

# the server's route table, as `feedsync serve` builds it from a default config
ROUTE = routes.router(config_module.from_dict({}))

ATOM = "{http://www.w3.org/2005/Atom}"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
BASE = "http://192.168.1.5:8080"
ARTICLES = 30
HOSTILE_TITLE = "Bad \x00\x01\x08 <b>title</b> & \ufffe ]]> \x1b[31m"
HOSTILE_BODY = "First \x00 line <script>alert(1)</script> & \x07\x0b\x0c\n\nSecond ]]> \ufffe para"


def request(path: str, token: str | None = None, **query: str) -> Request:
    headers = {k.replace("_", "-"): v for k, v in query.items() if k.startswith("if_")}
    params = {k: v for k, v in query.items() if not k.startswith("if_")}
    return Request("GET", path, params, headers, BASE, token)


def follow(url: str) -> Request:
    """The request a reader makes for a URL the document gave it."""
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == BASE
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    token = query.pop("token", None)
    return Request("GET", parts.path, query, {}, BASE, token)


@pytest.fixture
def db(fs: FeedsyncEnv) -> Iterator[SQLiteStorage]:
    """A database the real CLI reads too: the fs set-up's, filled through storage calls,
    one article with a hostile title and text among them."""
    fs.configure()
    store = SQLiteStorage.open(fs.db_path)
    fill(store, ARTICLES)
    later = START + timedelta(days=1)
    poll(store, 1, [Entry("https://site.example/bad", "Bad", to_iso(later))], later)
    (job,) = store.claim_articles("test", 0, to_iso(later), to_iso(later), to_iso(later), 10)
    store.save_article(job.id, Article(text=HOSTILE_BODY, author="Eve\x00"), None, to_iso(later))
    # what the pipeline would have cleaned (a database written by another tool may not be)
    with store._conn:
        store._conn.execute(
            "UPDATE main.news SET title = ? WHERE url = ?", (HOSTILE_TITLE, job.url)
        )
    yield store
    store.close()


def parse(body: bytes, kind: str) -> feedparser.FeedParserDict:
    """What a reader app makes of a document: feedparser for Atom; JSON Feed (which
    feedparser 6 does not read) with json.loads as its spec says, into the same shape.
    The independent reader of both formats, over HTTP from the real command, is
    ``reader``: tests/test_serve_roundtrip.py."""
    if kind == "atom":
        return feedparser.parse(body)
    doc = json.loads(body)
    entries = [
        feedparser.FeedParserDict(
            id=item["id"],
            link=item["url"],
            title=item["title"],
            published=item["date_published"],
            content=[feedparser.FeedParserDict(value=item["content_html"])],
        )
        for item in doc["items"]
    ]
    links = (
        [feedparser.FeedParserDict(rel="next", href=doc["next_url"])] if "next_url" in doc else []
    )
    return feedparser.FeedParserDict(
        bozo=0, entries=entries, feed=feedparser.FeedParserDict(links=links)
    )


def ok(response: Response) -> bytes:
    assert response.status == 200, response.body
    return response.body


def test_atom_has_what_rfc_4287_requires_even_with_hostile_text(db: SQLiteStorage) -> None:
    body = ok(syndication.feed_atom(db, request("/feeds/all.atom"), window=10))
    root = ET.fromstring(body)  # well-formed, whatever the feeds put in their text
    assert root.tag == f"{ATOM}feed"
    for name in ("id", "title", "updated"):
        assert root.find(f"{ATOM}{name}") is not None, name
    assert RFC3339.match(root.findtext(f"{ATOM}updated") or "")
    assert root.find(f"{ATOM}author/{ATOM}name") is not None
    links = {link.get("rel"): link.get("href") for link in root.findall(f"{ATOM}link")}
    assert links["self"] == f"{BASE}/feeds/all.atom"
    assert links["alternate"] == f"{BASE}/"
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == 10
    for entry in entries:
        for name in ("id", "title", "updated", "published", "content"):
            assert entry.find(f"{ATOM}{name}") is not None, name
        assert RFC3339.match(entry.findtext(f"{ATOM}updated") or "")
        assert entry.find(f"{ATOM}link[@rel='alternate']") is not None
        assert entry.find(f"{ATOM}content").get("type") == "html"  # type: ignore[union-attr]
    newest = entries[0]
    assert newest.findtext(f"{ATOM}title") == "Bad  <b>title</b> &  ]]> [31m"
    html = newest.findtext(f"{ATOM}content") or ""
    assert "<script>" not in html and "&lt;script&gt;" in html  # text, not markup
    assert html.startswith("<p>First  line") and "<p>Second ]]&gt;  para</p>" in html
    assert newest.findtext(f"{ATOM}author/{ATOM}name") == "Eve"


def test_json_feed_1_1_fields_and_types(db: SQLiteStorage) -> None:
    doc = json.loads(ok(syndication.feed_json(db, request("/feeds/all.json"), window=10)))
    assert doc["version"] == "https://jsonfeed.org/version/1.1"
    assert isinstance(doc["title"], str) and doc["feed_url"] == f"{BASE}/feeds/all.json"
    assert doc["next_url"].startswith(f"{BASE}/feeds/all.json?before=")
    assert len(doc["items"]) == 10
    for item in doc["items"]:
        assert isinstance(item["id"], str) and item["id"].startswith(f"{BASE}/article/")
        for key in ("url", "title", "content_html", "content_text"):
            assert isinstance(item[key], str), key
        for key in ("date_published", "date_modified"):
            assert RFC3339.match(item[key]), key
        assert all(isinstance(t, str) for t in item["tags"])
        assert all(isinstance(f["id"], int) for f in item["_feedsync"]["feeds"])
        standard = {"id", "url", "title", "content_html", "content_text", "date_published"}
        standard |= {"date_modified", "authors", "language", "tags"}
        assert all(k in standard or k.startswith("_") for k in item)  # extensions: "_..."
    assert doc["items"][0]["content_text"].startswith("First  line <script>")


def export(fs: FeedsyncEnv) -> dict[str, dict[str, str]]:
    done = fs.run("export")
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    return {row["url"]: row for row in rows}


@pytest.mark.parametrize("kind", ["atom", "json"])
def test_a_reader_reads_back_what_export_gives(
    db: SQLiteStorage, fs: FeedsyncEnv, kind: str
) -> None:
    handler = syndication.feed_atom if kind == "atom" else syndication.feed_json
    body = ok(handler(db, request(f"/feeds/all.{kind}"), window=ARTICLES + 1))
    parsed = parse(body, kind)
    assert not parsed.bozo, parsed.bozo_exception
    exported = export(fs)
    assert len(parsed.entries) == len(exported) == ARTICLES + 1
    for entry in parsed.entries:
        row = exported[entry.link]
        assert entry.title == row["title"].replace("\x00", "").replace("\x01", "").replace(
            "\x08", ""
        ).replace("\ufffe", "").replace("\x1b", "")
        when = row["published"] or row["fetched_at"]
        assert to_iso(parsedate_to_datetime_iso(entry.published)) == when
        assert entry.id.endswith(f"/article/{row['id']}")
        text = entry.content[0].value
        assert row["body"].split()[0].replace("\x00", "") in text


def parsedate_to_datetime_iso(value: str):  # type: ignore[no-untyped-def]
    from datetime import datetime

    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return parsedate_to_datetime(value)


@pytest.mark.parametrize("path", ["/feeds/all", "/feeds/1", "/feeds/category/News"])
@pytest.mark.parametrize("kind", ["atom", "json"])
def test_following_next_visits_every_article_once(db: SQLiteStorage, path: str, kind: str) -> None:
    handler = syndication.feed_atom if kind == "atom" else syndication.feed_json
    seen: list[str] = []
    current = request(f"{path}.{kind}", token="s3cret")
    for _ in range(100):
        parsed = parse(ok(handler(db, current, window=4)), kind)
        seen += [e.id for e in parsed.entries]
        following = next((link.href for link in parsed.feed.links if link.rel == "next"), None)
        if following is None:
            break
        assert "token=s3cret" in following  # a reader cannot log in: its links carry it
        current = follow(following)
    which = {"/feeds/all": {}, "/feeds/1": {"feed_id": 1}, "/feeds/category/News": {}}[path]
    if path.endswith("News"):
        expected = db.news_window(category="News", limit=1000)
    else:
        expected = db.news_window(limit=1000, **which)  # type: ignore[arg-type]
    assert seen == [f"{BASE}/article/{i.id}" for i in expected]
    assert len(seen) == len(set(seen))


def test_a_reader_that_has_the_page_gets_a_304(db: SQLiteStorage) -> None:
    first = syndication.feed_atom(db, request("/feeds/all.atom"))
    headers = dict(first.headers)
    again = syndication.feed_atom(db, request("/feeds/all.atom", if_none_match=headers["ETag"]))
    assert (again.status, again.body) == (304, b"")
    since = syndication.feed_atom(
        db, request("/feeds/all.atom", if_modified_since=headers["Last-Modified"])
    )
    assert since.status == 304
    later = START + timedelta(days=2)
    poll(db, 2, [Entry("https://site.example/new", "New", to_iso(later))], later)
    extract_all(db, later)
    changed = syndication.feed_atom(db, request("/feeds/all.atom", if_none_match=headers["ETag"]))
    assert changed.status == 200 and b"https://site.example/new" in changed.body


def test_unknown_feeds_and_bad_pages_are_one_line_errors(db: SQLiteStorage) -> None:
    cases = {
        "/feeds/999.atom": (404, "no feed 999"),
        "/feeds/x.json": (404, "no feed 'x'"),
        "/feeds/category/Sport.atom": (404, "no category 'Sport'"),
    }
    for path, (status, message) in cases.items():
        handler = syndication.feed_atom if path.endswith(".atom") else syndication.feed_json
        answer = handler(db, request(path))
        assert (answer.status, answer.body.decode()) == (status, message + "\n")
    for before in ("abc", "-1", "99999"):
        answer = syndication.feed_atom(db, request("/feeds/all.atom", before=before))
        assert answer.status == 400 and answer.body.count(b"\n") == 1
    assert ROUTE("/feeds.rss") is None and ROUTE("/feeds/x.json") is None  # the server's 404


def test_opml_subscribes_to_every_feed_in_its_folders(db: SQLiteStorage) -> None:
    body = ok(syndication.opml(db, request("/feeds.opml", token="s3cret")))
    root = ET.fromstring(body)
    assert root.get("version") == "2.0"
    top = root.find("body")
    assert top is not None
    assert top[0].get("xmlUrl") == f"{BASE}/feeds/all.atom?token=s3cret"
    news = next(o for o in top if o.get("text") == "News")
    world = next(o for o in news if o.get("text") == "World" and o.get("xmlUrl") is None)
    (feed,) = list(world)
    assert feed.get("htmlUrl") == FEEDS[0].url
    assert feed.get("xmlUrl", "").startswith(f"{BASE}/feeds/")
    subscribed = [o.get("xmlUrl") for o in root.iter("outline") if o.get("xmlUrl")]
    assert len(subscribed) == len(FEEDS) + 1
    # each outline's URL gives that feed's full text
    found = ROUTE(urlsplit(feed.get("xmlUrl", "")).path)
    assert found is not None
    answer = found.handler(db, follow(feed.get("xmlUrl", "")))
    assert (answer.status, answer.content_type) == (200, syndication.ATOM_TYPE)
    assert feedparser.parse(answer.body).feed.title == "feedsync: World"
