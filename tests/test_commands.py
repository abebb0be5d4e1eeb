"""The user's commands (status, feeds, add, news, show, search, export, OPML), each run as
a subprocess against a database that a real `feedsync run` filled from a local server.

The tests on the filled database (``world``) run on both engines, with the same
expectations: the same output and the same --json shapes from SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sitegen
from conftest import BACKENDS, FeedsyncEnv, RunningDaemon, cli_env, on_a_terminal, wait_until
from sitegen import Item

from feedsync.localserver import LocalServer

RSS = "application/rss+xml"

JAPANESE = [
    (
        "東京の天気は明日も晴れ",
        "今日の東京は朝から晴れて、気温は二十度まで上がりました。明日も晴れの予報です。",
    ),
    (
        "京都で紅葉が見頃に",
        "京都の寺では紅葉が見頃を迎え、多くの観光客が訪れています。東京からの客も多いです。",
    ),
]


def japanese_page(title: str, text: str) -> str:
    body = "".join(f"<p>{text}{text}</p>" for _ in range(4))
    return (
        f'<!DOCTYPE html><html lang="ja"><head><meta charset="utf-8"><title>{title}</title>'
        f"</head><body><nav><a href='/'>ホーム</a></nav><article><h1>{title}</h1>{body}"
        "</article><footer>著作権</footer></body></html>"
    )


@pytest.fixture(scope="module", params=BACKENDS)
def world(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[FeedsyncEnv, LocalServer]]:
    root = tmp_path_factory.mktemp("commands")
    (root / "home").mkdir()
    url = None
    if request.param == "postgresql":
        url = request.getfixturevalue("pg_server").create_database("commands")
    env = FeedsyncEnv(root=root, url=url)
    with LocalServer() as server:
        english = [
            Item(
                f"Harbour story {n}",
                server.set(
                    f"/articles/en-{n}", sitegen.article_page(f"Harbour story {n}", f"en-{n}")
                ),
                published=None,
            )
            for n in range(3)
        ]
        world_feed = server.set(
            "/feeds/world.xml",
            sitegen.rss2("World news", server.url("/feeds/world.xml"), english),
            "application/rss+xml",
        )
        japanese = [
            Item(title, server.set(f"/articles/ja-{n}", japanese_page(title, text)))
            for n, (title, text) in enumerate(JAPANESE)
        ]
        japan_feed = server.set(
            "/feeds/japan.xml",
            sitegen.rss2("日本のニュース", server.url("/feeds/japan.xml"), japanese),
            "application/rss+xml",
        )
        env.configure([world_feed, japan_feed])
        env.run("run")
        yield env, server


def run(env: FeedsyncEnv, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    return env.run(*args, expect=expect)


# Output into a pipe is whole; with COLUMNS it fits that width, as on a terminal: the
# tests of the cutting read it so (tests/test_output.py: the terminal itself, whole).
WIDTH = {"COLUMNS": "80"}


def lines_fit(text: str, width: int = 80) -> bool:
    """Every line within ``width`` columns (a Japanese character takes two)."""
    from feedsync.terminal import display_width

    return all(display_width(line) <= width for line in text.splitlines())


# ---------------------------------------------------------------- status and feeds


def test_status_answers_is_it_working(world: tuple[FeedsyncEnv, LocalServer]) -> None:
    env, _ = world
    text = env.run("status", env=WIDTH).stdout
    assert "daemon     not running" in text
    assert "feeds      2: 2 ok, 0 retrying, 0 failing, 0 disabled" in text
    assert "queue      0 new, 0 failed (waiting to retry), 0 given up" in text
    assert "articles   5 today, 5 in all" in text
    assert "next poll  20" in text
    assert lines_fit(text)
    data = json.loads(run(env, "status", "--json").stdout)
    assert data["articles"] == {"today": 5, "total": 5}
    assert data["feeds"]["healthy"] == 2 and data["daemon"]["running"] is False
    if env.url is None:
        assert "live       /" in text  # (long paths cut to fit)
        assert "card       /" in text and "the card is current" in text
        assert data["storage"]["live"] == str(env.live_path)
        assert data["storage"]["snapshot"] == str(env.card_path)
        assert data["storage"]["ram_budget"] > 0 and data["storage"]["nearly_full"] == []
        return
    # the server and the database instead of a path; the password nowhere
    where = env.url.split("@")[1]
    assert f"database   postgresql://postgres@{where} (" in text
    assert "snapshot   none: a PostgreSQL database is backed up with pg_dump" in text
    assert data["storage"]["engine"] == "postgresql" and data["storage"]["snapshot"] is None
    assert data["storage"]["live"] == f"postgresql://postgres@{where}"
    secret = env.url.split(":")[2].split("@")[0]
    assert secret not in text + json.dumps(data)


def test_status_sees_the_daemon_run_and_stop(
    fs: FeedsyncEnv, server: LocalServer, start_daemon_for: Any
) -> None:
    fs.configure([], daemon={"tick": "1s"})
    daemon: RunningDaemon = start_daemon_for(fs)
    wait_until(
        lambda: json.loads(fs.run("status", "--json").stdout)["daemon"]["running"],
        "status to see the daemon",
    )
    data = json.loads(fs.run("status", "--json").stdout)["daemon"]
    assert data["pid"] == daemon.process.pid and data["since"]
    assert f"running (pid {daemon.process.pid} on " in fs.run("status").stdout
    assert daemon.stop() == 0
    text = fs.run("status").stdout
    assert "daemon     not running (last seen " in text


def test_feeds_text_json_and_failing(world: tuple[FeedsyncEnv, LocalServer]) -> None:
    env, _ = world
    text = env.run("feeds", env=WIDTH).stdout
    assert "[2] 日本のニュース" in text and "    ok" in text and lines_fit(text)
    data = json.loads(run(env, "feeds", "--json").stdout)
    assert [f["title"] for f in data] == ["World news", "日本のニュース"]
    assert data[0]["health"] == "ok" and data[0]["entries"] == 3
    assert run(env, "feeds", "--failing").stdout == "no feeds in trouble\n"
    assert json.loads(run(env, "feeds", "--failing", "--json").stdout) == []


def test_feeds_failing_lists_only_the_troubled(fs: FeedsyncEnv, server: LocalServer) -> None:
    bad = server.set("/bad.xml", "x", status=500)
    good = server.set(
        "/good.xml", sitegen.rss2("Good", server.url("/good.xml"), []), "application/rss+xml"
    )
    fs.configure([bad, good], poll={"failing_after": 1})
    fs.run("run")
    failing = json.loads(fs.run("feeds", "--failing", "--json").stdout)
    assert [f["url"] for f in failing] == [bad]
    assert failing[0]["health"].startswith("FAILING (1 in a row): HTTP 500")


# ---------------------------------------------------------------- articles that fail


def closed_port() -> int:
    """A loopback port nobody listens on: its pages cannot be reached."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_articles_that_fail_are_listed_shown_and_counted_per_feed(
    fs: FeedsyncEnv, server: LocalServer
) -> None:
    """Every article of a feed fails: `feeds` said "ok", `--failing` "no feeds in
    trouble", `news --feed` "no articles yet", `show URL` "no article". Now each says
    so, with the reason, the attempts and the next try, until they are given up."""
    dead = closed_port()
    lost = [Item(f"Lost story {n}", f"http://127.0.0.1:{dead}/lost/{n}") for n in range(3)]
    bad = server.set("/bad.xml", sitegen.rss2("Bad", server.url("/bad.xml"), lost), RSS)
    page = server.set("/articles/fine", sitegen.article_page("Fine story", "fine"))
    good = server.set(
        "/good.xml", sitegen.rss2("Good", server.url("/good.xml"), [Item("Fine story", page)]), RSS
    )
    fs.configure([good, bad], extract={"max_attempts": 2})
    fs.run("run")

    text = fs.run("feeds", env=WIDTH).stdout
    assert "    ARTICLES FAILING: 3 failing; this week none extracted: cannot connect" in text
    assert text.count("    ok\n") == 1 and lines_fit(text)
    assert "feedsync news --state failed" in text
    failing = json.loads(fs.run("feeds", "--failing", "--json").stdout)
    assert [f["url"] for f in failing] == [bad]
    assert failing[0]["articles_failing"] == 3 and failing[0]["articles_in_trouble"] is True
    assert failing[0]["articles_last_error"].startswith("cannot connect")
    fine = json.loads(fs.run("feeds", "--json").stdout)[0]
    assert (fine["articles_failing"], fine["articles_extracted_week"]) == (0, 1)
    assert fine["health"] == "ok"

    assert fs.run("news", "--feed", "2").stdout == (
        "no articles yet, but 3 failed: 'feedsync news --state failed'\n"
    )
    text = fs.run("news", "--state", "failed", env=WIDTH).stdout
    assert "Lost story 2" in text and "Bad · http://127.0.0.1:" in text
    assert text.count("failed 1 time (of 2), next try 20") == 3
    assert text.count("      cannot connect") == 3 and lines_fit(text)
    listed = json.loads(fs.run("news", "--state", "failed", "--feed", bad, "--json").stdout)
    assert sorted(e["url"] for e in listed) == sorted(i.link for i in lost)
    assert {(e["state"], e["attempts"]) for e in listed} == {("failed", 1)}
    assert all(e["next_attempt_at"] for e in listed)
    assert all(e["last_error"].startswith("cannot connect") for e in listed)
    assert listed[0]["feeds"] == [{"id": 2, "url": bad, "title": "Bad"}]

    shown = fs.run("show", lost[0].link).stdout
    assert shown.splitlines()[0] == "Lost story 0"
    assert "state      no article: failed 1 time (of 2), next try 20" in shown
    assert "last error cannot connect" in shown and "feed       Bad" in shown
    assert json.loads(fs.run("show", lost[0].link, "--json").stdout)["state"] == "failed"

    fs.run("run")  # the second and last attempt: given up
    assert fs.run("news", "--state", "failed").stdout == "no failed articles\n"
    gone = json.loads(fs.run("news", "--state", "given-up", "--json").stdout)
    assert {(e["state"], e["attempts"]) for e in gone} == {("given-up", 2)} and len(gone) == 3
    shown = fs.run("show", lost[1].link).stdout
    assert "state      no article: given up after 2 attempts: not tried again" in shown
    health = json.loads(fs.run("feeds", "--failing", "--json").stdout)[0]["health"]
    assert health.startswith("ARTICLES FAILING: this week 3 given up, none extracted: cannot")

    other = server.set(  # staged by `add`, fetched by the next run: pending meanwhile
        "/other.xml",
        sitegen.rss2("Other", server.url("/other.xml"), [Item("Waiting story", page + "?w")]),
        RSS,
    )
    fs.run("add", other)
    text = fs.run("news", "--state", "pending").stdout
    assert "Waiting story" in text and "not fetched yet: with the next run" in text


# ---------------------------------------------------------------- add


def test_add_a_feed_polls_it_once(fs: FeedsyncEnv, server: LocalServer) -> None:
    page = server.set("/articles/a", sitegen.article_page("Added story", "added"))
    feed = server.set(
        "/feed.xml",
        sitegen.rss2("Added", server.url("/feed.xml"), [Item("Added story", page)]),
        "application/rss+xml",
    )
    done = fs.run("add", feed, "--category", "News/Local")
    assert done.stdout == (
        f"added {feed}: Added, 1 entry staged; their articles come with the next run\n"
    )
    assert server.hits["/articles/a"] == 0  # polled, not extracted
    assert fs.run("add", feed).stdout == f"already there: [1] {feed}; not fetched again\n"
    fs.run("run")
    assert fs.scalar("SELECT title FROM news") == "Added story"  # free for the next run
    assert fs.scalar("SELECT category FROM feeds") == "News/Local"


def test_add_a_web_page_finds_its_feed(fs: FeedsyncEnv, server: LocalServer) -> None:
    feed = server.set(
        "/rss/main.xml",
        sitegen.rss2("Main", server.url("/rss/main.xml"), []),
        "application/rss+xml",
    )
    home = server.set(
        "/",
        '<html><head><link rel="alternate" type="application/rss+xml" '
        'href="/rss/main.xml" title="Main"></head><body>Welcome</body></html>',
    )
    done = fs.run("add", home)
    assert done.stdout.startswith(f"added {feed} (found through {home}): Main")
    anchors = server.set(
        "/blog", '<html><body><a href="/blog/atom.xml">subscribe</a></body></html>'
    )
    server.set(
        "/blog/atom.xml",
        sitegen.atom("Blog", server.url("/blog/atom.xml"), []),
        "application/atom+xml",
    )
    assert fs.run("add", anchors).stdout.startswith(f"added {server.url('/blog/atom.xml')}")


def test_add_refuses_what_is_not_a_feed(fs: FeedsyncEnv, server: LocalServer) -> None:
    page = server.set("/about", "<html><body><p>About us</p></body></html>")
    done = fs.run("add", page, expect=2)
    assert "names no RSS, Atom or JSON feed" in done.stderr and done.stderr.count("\n") == 1
    broken = server.set(
        "/named",
        '<html><head><link rel="alternate" type="application/'
        'rss+xml" href="/missing.xml"></head></html>',
    )
    done = fs.run("add", broken, expect=2)
    assert "none of the feeds it names works" in done.stderr and "HTTP 404" in done.stderr
    assert fs.run("add", server.url("/nothing-here"), expect=2).stderr.startswith(
        "feedsync: error: cannot fetch"
    )


# ---------------------------------------------------------------- news and show


def test_news_newest_first_with_filters(world: tuple[FeedsyncEnv, LocalServer]) -> None:
    env, server = world
    data = json.loads(run(env, "news", "--json").stdout)
    assert len(data) == 5 and "body" not in data[0]
    dates = [d["published"] or d["fetched_at"] for d in data]
    assert dates == sorted(dates, reverse=True)
    only = json.loads(run(env, "news", "--feed", server.url("/feeds/japan.xml"), "--json").stdout)
    assert {d["title"] for d in only} == {t for t, _ in JAPANESE}
    assert len(json.loads(run(env, "news", "--feed", "1", "--limit", "2", "--json").stdout)) == 2
    assert json.loads(run(env, "news", "--since", "2099-01-01", "--json").stdout) == []
    text = env.run("news", env=WIDTH).stdout
    assert "Harbour story" in text and lines_fit(text)


def test_show_an_article_by_id_or_url(world: tuple[FeedsyncEnv, LocalServer]) -> None:
    env, _ = world
    first = json.loads(run(env, "news", "--feed", "2", "--json").stdout)[0]
    text = run(env, "show", str(first["id"])).stdout
    assert text.splitlines()[0] == first["title"]
    assert "feed       日本のニュース" in text
    assert ("晴れ" in text) or ("紅葉" in text)  # its text, whichever of the two it is
    data = json.loads(run(env, "show", first["url"], "--json").stdout)
    assert data["id"] == first["id"] and data["body"]
    assert data["feeds"][0]["title"] == "日本のニュース"


# ---------------------------------------------------------------- search


def test_search_english_japanese_and_short_queries(world: tuple[FeedsyncEnv, LocalServer]) -> None:
    env, _ = world

    def titles(*query: str) -> list[str]:
        return [hit["title"] for hit in json.loads(run(env, "search", *query, "--json").stdout)]

    assert titles("Harbour", "story", "1") == ["Harbour story 1"]  # "1": the short path
    assert titles("東京の天気") == ["東京の天気は明日も晴れ"]  # trigram, no word breaks
    assert titles("紅葉") == ["京都で紅葉が見頃に"]  # two characters: below trigrams
    assert set(titles("東京")) == {t for t, _ in JAPANESE}  # in a title and in a text
    assert titles("晴") == ["東京の天気は明日も晴れ"]
    assert titles("nothing-like-this") == []
    hit = json.loads(run(env, "search", "東京の天気", "--json").stdout)[0]
    assert "[東京の天気]" in hit["snippet"]
    text = run(env, "search", "紅葉").stdout
    assert "[紅葉]" in text and "\033[" not in text  # marks, no colour off a terminal
    assert run(env, "search", "zzzzzz").stdout == "nothing found for 'zzzzzz'\n"


# ---------------------------------------------------------------- export


def test_export_jsonl_and_csv_with_stable_fields(
    world: tuple[FeedsyncEnv, LocalServer], tmp_path: Path
) -> None:
    env, _ = world
    rows = [json.loads(line) for line in run(env, "export").stdout.splitlines()]
    fields = [
        "id",
        "url",
        "title",
        "published",
        "feed_title",
        "author",
        "language",
        "fetched_at",
        "body",
    ]
    assert len(rows) == 5 and all(list(row) == fields for row in rows)
    table = list(csv.DictReader(io.StringIO(run(env, "export", "--format", "csv").stdout)))
    assert [r["title"] for r in table] == [r["title"] for r in rows]
    assert table[0]["body"] == rows[0]["body"]  # newlines and commas survive
    out = tmp_path / "news.jsonl"
    done = run(env, "export", "--since", "24h", "--output", str(out))
    assert done.stderr == f"exported 5 articles to {out}\n"
    assert len(out.read_text().splitlines()) == 5


def _peak_rss_kib(command: list[str], env: dict[str, str]) -> int:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, process.stderr.read() if process.stderr else ""
    return usage.ru_maxrss


@pytest.mark.slow
def test_export_of_100k_articles_runs_in_constant_memory(fs: FeedsyncEnv, tmp_path: Path) -> None:
    fs.configure([])
    fs.run("feeds")  # creates the database
    body = "A line of an article body, with a comma, and some more words. " * 4

    def fill(total: int) -> None:
        # straight into the card database, where the articles of months past are
        with sqlite3.connect(fs.card_path) as conn:
            (month,) = conn.execute(
                "SELECT name FROM sqlite_master WHERE name GLOB 'news_[0-9]*' AND type = 'table'"
            ).fetchone()
            have = conn.execute(f"SELECT count(*) FROM {month}").fetchone()[0]
            rows = range(have + 1, total + 1)
            conn.executemany(
                "INSERT INTO news_summary (id, url, title, first_seen_at, state) "
                "VALUES (?, ?, ?, '2026-11-01T00:00:00Z', 'done')",
                ((n, f"https://e.com/{n}", f"Story {n}") for n in rows),
            )
            conn.executemany(
                f"INSERT INTO {month} (id, summary_id, url, title, body, fetched_at) "
                "VALUES (?, ?, ?, ?, ?, '2026-11-01T00:00:00Z')",
                ((n, n, f"https://e.com/{n}", f"Story {n}", body) for n in rows),
            )

    env = cli_env(fs.root / "home")
    peaks = {}
    for total in (1_000, 100_000):
        fill(total)
        out = tmp_path / f"export-{total}.jsonl"
        peaks[total] = _peak_rss_kib(fs.command("export", "--output", str(out)), env)
        assert sum(1 for _ in out.open()) == total
    print(f"export peak RSS: {peaks} KiB")
    # a hundred times the rows, the same memory (give or take page-cache noise)
    assert peaks[100_000] < peaks[1_000] + 8 * 1024, peaks


# ---------------------------------------------------------------- OPML


NESTED = b"""<?xml version="1.0" encoding="utf-8"?>
<opml version="2.0"><head><title>my reader</title></head><body>
  <outline text="News">
    <outline text="World">
      <outline type="rss" text="BBC" xmlUrl="https://bbc.example/world.xml"/>
      <outline type="rss" text="NHK" xmlUrl="https://nhk.example/ja.xml"/>
    </outline>
    <outline type="rss" text="Local" xmlUrl="https://local.example/rss"/>
  </outline>
  <outline type="rss" text="Top" xmlUrl="https://top.example/rss"/>
  <outline type="rss" text="Top again" xmlUrl="https://top.example/rss"/>
  <outline type="rss" text="Gopher" xmlUrl="gopher://old.example/feed"/>
</body></opml>"""


def test_opml_round_trip_keeps_nested_folders(fs: FeedsyncEnv, tmp_path: Path) -> None:
    source = tmp_path / "subscriptions.opml"
    source.write_bytes(NESTED)
    fs.configure([])
    done = fs.run("import-opml", str(source))
    assert done.stdout.splitlines()[:4] == [
        f"imported {source}: 4 feeds added, 0 already there",
        "  2 outlines not imported, 1 of them repeats:",
        "    line 11: https://top.example/rss: a repeat of the feed on line 10",
        "    line 12: gopher://old.example/feed: not an http(s) feed URL",
    ]
    again = fs.run("import-opml", str(source)).stdout
    assert "0 feeds added, 4 already there" in again
    assert "  already there: https://bbc.example/world.xml" in again
    exported = tmp_path / "out.opml"
    fs.run("export-opml", "--output", str(exported))

    other = FeedsyncEnv(root=tmp_path / "other")
    (other.root / "home").mkdir(parents=True)
    other.configure([])
    other.run("import-opml", str(exported))
    nhk = "SELECT user_title FROM feeds WHERE url = 'https://nhk.example/ja.xml'"
    assert fs.scalar(nhk) == "NHK"  # the outline's title: the user's, kept over the feed's
    mine = set(fs.query("SELECT url, category FROM feeds"))
    theirs = set(other.query("SELECT url, category FROM feeds"))
    assert set(fs.query("SELECT url, user_title FROM feeds")) == set(
        other.query("SELECT url, user_title FROM feeds")
    )
    assert (
        mine
        == theirs
        == {
            ("https://bbc.example/world.xml", "News/World"),
            ("https://nhk.example/ja.xml", "News/World"),
            ("https://local.example/rss", "News"),
            ("https://top.example/rss", None),
        }
    )


def test_import_opml_refuses_what_is_not_opml(fs: FeedsyncEnv, tmp_path: Path) -> None:
    fs.configure([])
    html = tmp_path / "page.html"
    html.write_text("<html><body>hello</body></html>")
    done = fs.run("import-opml", str(html), expect=2)
    assert "not an OPML subscription list" in done.stderr and done.stderr.count("\n") == 1
    done = fs.run("import-opml", str(tmp_path / "missing.opml"), expect=2)
    assert "cannot read" in done.stderr and "No such file" in done.stderr


# ---------------------------------------------------------------- terminals and errors


def _on_a_terminal(env: FeedsyncEnv, *args: str, no_color: bool) -> str:
    environment = {**cli_env(env.root / "home"), "TERM": "xterm", "PAGER": "cat"}
    environment.pop("NO_COLOR", None)
    if no_color:
        environment["NO_COLOR"] = "1"
    return on_a_terminal(env.command(*args), environment, timeout=60)[1]


def test_colour_on_a_terminal_only_and_never_with_no_color(
    world: tuple[FeedsyncEnv, LocalServer],
) -> None:
    env, _ = world
    coloured = _on_a_terminal(env, "feeds", no_color=False)
    assert "\033[32m" in coloured  # "ok" in green
    plain = _on_a_terminal(env, "feeds", no_color=True)
    assert "ok" in plain and "\033[" not in plain
    assert "\033[" not in run(env, "feeds").stdout  # and never into a pipe


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("news", "--limit", "x"), "argument --limit: expected a whole number (0: all of them)"),
        (("news", "--since", "last week"), 'argument --since: expected a duration like "24h"'),
        (("news", "--feed", "https://nowhere.example/feed"), "no such feed"),
        (("news", "--feed", "999"), "no such feed"),
        (("show", "999999"), "no article '999999'"),
        (("show", "https://nowhere.example/a"), "no article"),
        (("search",), "the following arguments are required: query"),
        (("search", "   "), "the search query is empty"),
        (("export", "--format", "xml"), "argument --format: invalid choice: 'xml'"),
        (("export", "--output", "/nonexistent/dir/out.jsonl"), "is not a folder"),
        (("import-opml",), "the following arguments are required: file"),
        (("add", "not a url"), "not an http:// or https:// URL"),
    ],
)
def test_each_bad_argument_gets_one_clear_line(
    world: tuple[FeedsyncEnv, LocalServer], args: tuple[str, ...], message: str
) -> None:
    env, _ = world
    done = env.run(*args, expect=2)
    assert message in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and done.stdout == ""
    assert re.match(r"feedsync: (error|config error): ", done.stderr)


# ---------------------------------------------------------------- hostile text

# An OSC that retitles the terminal window (raw ESC ... BEL) and a colour CSI as an XML
# character reference: what a hostile feed put in titles, authors and its channel title.
OSC = "\x1b]0;pwned\x07"
CSI_REF = "&#27;[31m"
# what a terminal takes as a command: C0 (but tab and newline), DEL, C1
COMMANDS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _hostile_feed(server: LocalServer) -> str:
    page = server.set("/articles/wall", sitegen.article_page("Harbour wall", "wall"))
    body = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
        f"<title>Gazette {OSC} {CSI_REF}</title><link>{server.url('/')}</link>"
        f"<item><title>Harbour wall {OSC} {CSI_REF} falls</title><link>{page}</link>"
        f"<author>Reporter {OSC} {CSI_REF}</author>"
        f"<description>Summary {OSC} {CSI_REF}</description></item></channel></rss>"
    )
    return server.set("/hostile.xml", body.encode(), "application/rss+xml")


def _commands_in(printed: dict[str, str]) -> dict[str, list[str]]:
    """The terminal commands in each command's output (none, one hopes)."""
    return {name: found for name, out in printed.items() if (found := COMMANDS.findall(out))}


def _printed_by_every_command(env: FeedsyncEnv) -> dict[str, str]:
    """What news, feeds, show, search and export-opml print (stdout and stderr)."""
    article = str(env.scalar("SELECT id FROM news"))
    commands = [("news",), ("feeds",), ("show", article), ("search", "harbour"), ("export-opml",)]
    printed = {}
    for args in commands:
        done = env.run(*args)
        printed[" ".join(args)] = done.stdout + done.stderr
    return printed


def test_terminal_commands_in_a_feed_are_neither_stored_nor_printed(
    fs: FeedsyncEnv, server: LocalServer
) -> None:
    fs.configure([_hostile_feed(server)])
    fs.run("run")
    stored = [
        *fs.query("SELECT title FROM feeds"),
        *fs.query("SELECT title, author, summary FROM news_summary"),
        *fs.query("SELECT title, author, feed_title, body FROM news"),
    ]
    assert len(stored) == 3
    assert not [v for row in stored for v in row if COMMANDS.search(v or "")], stored
    printed = _printed_by_every_command(fs)
    assert _commands_in(printed) == {}, printed
    # the words around them are still there, to be read
    assert "Harbour wall ]0;pwned [31m falls" in printed["news"]
    assert "Gazette ]0;pwned [31m" in printed["feeds"]
    assert "Reporter ]0;pwned [31m" in printed["show " + str(fs.scalar("SELECT id FROM news"))]
    assert "Harbour wall" in printed["search harbour"]
    assert 'title="Gazette ]0;pwned [31m"' in printed["export-opml"]


def _dirty(path: Path) -> None:
    """Put the OSC back into every stored text, as a feedsync older than the cleaning
    left its database (the card's articles are in one table per month)."""
    conn = sqlite3.connect(path)
    with conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        columns = {"feeds": ["title"], "news_summary": ["title", "author"]}
        for table in tables:
            if re.fullmatch(r"news(_\d{4}_\d{2})?", table):
                columns[table] = ["title", "author", "feed_title", "body"]
        for table, names in columns.items():
            if table in tables:
                update = ", ".join(f"{n} = {n} || ?" for n in names)
                conn.execute(f"UPDATE {table} SET {update}", [f" {OSC}\x9b2J"] * len(names))
    conn.close()


def test_a_database_from_before_the_cleaning_prints_no_terminal_commands(
    fs: FeedsyncEnv, server: LocalServer
) -> None:
    """Defence in depth: text that reached the database with its control characters
    (written by an older feedsync) is cleaned again on its way to the terminal."""
    fs.configure([_hostile_feed(server)])
    fs.run("run")
    for path in {fs.live_path, fs.card_path}:
        _dirty(path)
    assert COMMANDS.search(fs.scalar("SELECT title FROM news"))  # dirty indeed
    printed = _printed_by_every_command(fs)
    assert _commands_in(printed) == {}, printed
    assert "]0;pwned" in printed["news"] and "]0;pwned" in printed["export-opml"]
