"""Whether an article link may point into the LAN: decided once, from the peer address
that served the feed document carrying it, and kept with the entry (issue 40).

Through the real CLI, with the attacker's tools of tests/fakedns.py: names whose
answers the test changes between runs, and 127.0.0.1 counting as a public address where
a test says so. A second LocalServer on ::1 is a machine on the LAN (a router's
admin page, a NAS); every test asserts that it got no request it should not have.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sitegen
from conftest import BACKENDS, FeedsyncEnv, Site
from fakedns import FakeDNS
from sitegen import Item

from feedsync.localserver import LocalServer
from feedsync.storage import sqlfiles

ADMIN_TEXT = "the router's admin page, which no feed may bring into the news"


@pytest.fixture
def lan() -> Iterator[LocalServer]:
    """A machine on the LAN: a server on ::1 (loopback, private)."""
    with LocalServer("::1") as running:
        yield running


def lan_page(lan: LocalServer, path: str, host: str) -> str:
    """A page on the LAN machine with recognisable text, its URL under ``host``."""
    url = lan.set(
        path,
        sitegen.article_page("Router admin", seed=path, paragraphs=[ADMIN_TEXT] * 6),
        "text/html; charset=utf-8",
    )
    return url.replace("[::1]", host)


def under(url: str, host: str) -> str:
    """``url`` of the server on 127.0.0.1 under another host name."""
    return url.replace("127.0.0.1", host)


def stored_texts(fs: FeedsyncEnv) -> list[str]:
    return [row[0] for row in fs.query("SELECT body FROM news")]


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_rebound_feed_name_does_not_open_the_lan_to_its_staged_links(
    fs: FeedsyncEnv, site: Site, lan: LocalServer, fake_dns: FakeDNS
) -> None:
    """The publisher's feed is served from a public address when its entries are staged;
    its name answering a private address later (the feed not polled again) changes
    nothing: the link to the LAN is refused, not one request reaches it."""
    fake_dns.public("127.0.0.1")
    fake_dns.answer("pub.test", "127.0.0.1")
    fake_dns.answer("lan.test", "::1")
    admin = lan_page(lan, "/admin", "lan.test")
    feed = under(site.feed("pub.xml", [Item("Router admin", admin)]), "pub.test")
    fs.configure()
    fs.run("add", feed)  # polled once, staged; the articles come with the next run
    assert fs.query("SELECT lan_host FROM news_summary") == [(None,)]

    fake_dns.answer("pub.test", "127.0.0.3")  # its name now answers a private address
    done = fs.run_json("--due")
    assert done["polled"] == 0  # the feed is not due: not polled again
    state, error = fs.query("SELECT state, last_error FROM news_summary")[0]
    assert state == "gone"
    assert error == "refused: lan.test is at a private address (::1)"
    assert lan.hits["/admin"] == 0
    assert not any(ADMIN_TEXT in text for text in stored_texts(fs))


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_lan_feed_opens_only_its_own_host_and_the_listed_ones(
    fs: FeedsyncEnv, site: Site, lan: LocalServer, fake_dns: FakeDNS
) -> None:
    """A feed on the LAN (RSS-Bridge on localhost) relays internet authors' links: those
    on its own host are fetched, a link to another machine of the LAN is refused, unless
    the owner lists that machine in [fetch] lan_hosts."""
    fake_dns.answer("localhost", "127.0.0.1")
    fake_dns.answer("other-lan.test", "::1")
    own = under(site.page("own", "Bridge story"), "localhost")
    secret = lan_page(lan, "/secret", "other-lan.test")
    feed = under(site.feed("bridge.xml", [Item("Own", own), Item("Secret", secret)]), "localhost")
    fs.configure([feed])
    fs.run("run")
    assert lan.hits["/secret"] == 0
    assert fs.query("SELECT state, last_error FROM news_summary WHERE title = 'Secret'") == [
        ("gone", "refused: other-lan.test is at a private address (::1)")
    ]
    assert site.hits("/articles/own") == 1
    rows = dict(fs.query("SELECT title, lan_host FROM news_summary"))
    assert rows == {"Own": "localhost", "Secret": "localhost"}
    assert fs.scalar("SELECT count(*) FROM news WHERE url = ?", own) == 1

    nas = lan_page(lan, "/nas", "other-lan.test")
    site.feed("bridge.xml", [Item("Own", own), Item("Secret", secret), Item("NAS", nas)])
    fs.configure(fetch={"lan_hosts": ["Other-LAN.test"]})
    fs.run("run")
    assert lan.hits["/nas"] == 1
    assert any(ADMIN_TEXT in text for text in stored_texts(fs))


def test_an_internet_feed_linking_a_listed_lan_host_is_still_refused(
    fs: FeedsyncEnv, site: Site, lan: LocalServer, fake_dns: FakeDNS
) -> None:
    """[fetch] lan_hosts opens a host to the links of feeds on the LAN only."""
    fake_dns.public("127.0.0.1")
    fake_dns.answer("pub.test", "127.0.0.1")
    fake_dns.answer("nas.test", "::1")
    page = lan_page(lan, "/nas", "nas.test")
    feed = under(site.feed("pub.xml", [Item("NAS", page)]), "pub.test")
    fs.configure([feed], fetch={"lan_hosts": ["nas.test"]})
    fs.run("run")
    assert fs.query("SELECT lan_host, state FROM news_summary") == [(None, "gone")]
    assert lan.hits["/nas"] == 0


def test_a_public_page_cannot_lead_discovery_to_a_lan_feed(
    fs: FeedsyncEnv, site: Site, lan: LocalServer, fake_dns: FakeDNS
) -> None:
    fake_dns.public("127.0.0.1")
    fake_dns.answer("pub.test", "127.0.0.1")
    fake_dns.answer("lan.test", "::1")
    port = lan.base_url.rsplit(":", 1)[1]
    lan.set("/feed.xml", sitegen.rss2("LAN", "http://lan.test/", []), "application/rss+xml")
    page = site.server.set(
        "/page.html",
        '<html><head><link rel="alternate" type="application/rss+xml" '
        f'href="http://lan.test:{port}/feed.xml"></head><body>news</body></html>',
    )
    done = fs.run("add", under(page, "pub.test"), expect=None)
    assert done.returncode != 0
    assert f"http://lan.test:{port}/feed.xml: refused: lan.test is at a private address" in (
        done.stderr
    )
    assert lan.hits["/feed.xml"] == 0


def test_a_lan_page_may_name_a_lan_feed(
    fs: FeedsyncEnv, site: Site, lan: LocalServer, fake_dns: FakeDNS
) -> None:
    """The page the owner typed is on the LAN: its candidates may be too."""
    fake_dns.answer("lan.test", "::1")
    port = lan.base_url.rsplit(":", 1)[1]
    lan.set("/feed.xml", sitegen.rss2("LAN", "http://lan.test/", []), "application/rss+xml")
    page = site.server.set(
        "/page.html",
        '<html><head><link rel="alternate" type="application/rss+xml" '
        f'href="http://lan.test:{port}/feed.xml"></head><body>news</body></html>',
    )
    fs.run("add", page)
    assert fs.query("SELECT url FROM feeds") == [(f"http://lan.test:{port}/feed.xml",)]


# ---------------------------------------------------------------- an upgraded database
# Entries staged before version 8 were allowed on the LAN when one of their feeds was
# found on it at fetch time. What the pending ones get instead (sql/migrations/0008):
# lan_host only when the link's host is the host of one of its feeds AND that host is
# localhost or a literal private address; decided from the URLs, no lookup.

OLD_FEEDS = {
    1: "http://localhost:3000/feed.xml",  # RSS-Bridge
    2: "http://192.168.1.5/rss",
    3: "http://nas.lan/rss",  # a name: it would take a lookup, so not trusted
    4: "https://news.example/rss",
    5: "http://[fd00::1]:8080/feed",
    6: "http://10.evil.example/rss",  # looks like 10/8, is a name
}
# (link, state, its feeds) -> the lan_host expected after the upgrade
OLD_ENTRIES: list[tuple[str, str, tuple[int, ...], str | None]] = [
    ("http://localhost:3000/story", "new", (1,), "localhost"),
    ("http://localhost:3001/other-port", "failed", (1,), "localhost"),
    ("http://192.168.1.1/admin", "new", (1,), None),  # not the feed's host
    ("http://localhost:3000/done", "done", (1,), None),  # not fetched again
    ("http://192.168.1.5/post", "new", (2,), "192.168.1.5"),
    ("http://nas.lan/post", "new", (3,), None),
    ("http://localhost:3000/relayed", "new", (4,), None),  # only an internet feed
    ("http://localhost:3000/both", "new", (4, 1), "localhost"),
    ("http://[fd00::1]:8080/post", "new", (5,), "fd00::1"),
    ("http://10.evil.example/post", "new", (6,), None),
]


def _fill_old(execute: Callable[[str, tuple[object, ...]], object]) -> None:
    at = "2026-01-01T00:00:00Z"
    for feed_id, url in OLD_FEEDS.items():
        execute("INSERT INTO feeds (id, url, added_at) VALUES (?, ?, ?)", (feed_id, url, at))
    for entry_id, (url, state, feeds, _) in enumerate(OLD_ENTRIES, 1):
        execute(
            "INSERT INTO news_summary (id, url, title, first_seen_at, state) "
            "VALUES (?, ?, ?, ?, ?)",
            (entry_id, url, f"entry {entry_id}", at, state),
        )
        for feed_id in feeds:
            execute(
                "INSERT INTO feed_entries (feed_id, summary_id, first_seen_at) VALUES (?, ?, ?)",
                (feed_id, entry_id, at),
            )


EXPECTED = {url: lan_host for url, _, _, lan_host in OLD_ENTRIES}


def test_the_upgrade_trusts_pending_entries_of_literal_lan_feeds_only_sqlite(
    tmp_path: Path,
) -> None:
    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    for _, script in sqlfiles.schema_steps()[:7]:
        for statement in sqlfiles.split_statements(script.read_text(encoding="utf-8")):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 7")
    _fill_old(conn.execute)
    sqlfiles.migrate_sqlite(conn, "old.db")
    assert dict(conn.execute("SELECT url, lan_host FROM news_summary")) == EXPECTED


def test_the_upgrade_trusts_pending_entries_of_literal_lan_feeds_only_postgresql(
    pg_url: str,
) -> None:
    import psycopg

    from feedsync.storage.postgresql import ENGINE_DIR, PostgreSQLStorage

    admin = {name: sqlfiles.pyformat(text) for name, text in sqlfiles.queries(ENGINE_DIR).items()}
    with psycopg.connect(pg_url, autocommit=True) as pg:
        for _, script in sqlfiles.schema_steps(ENGINE_DIR)[:7]:
            pg.execute(script.read_text(encoding="utf-8").encode())
        pg.execute(admin["schema_version_table"])
        pg.execute(admin["schema_version_set"], {"version": 7})
        _fill_old(lambda sql, params: pg.execute(sql.replace("?", "%s"), params))
    PostgreSQLStorage.open(pg_url).close()  # the upgrade
    with psycopg.connect(pg_url) as pg:
        assert dict(pg.execute("SELECT url, lan_host FROM news_summary").fetchall()) == EXPECTED
