"""Containment, by property: whatever a server answers, ``feedsync run`` lives through it.

Each example serves a few feeds on 127.0.0.1 (under the host name ``localhost``) whose
answers are random but structured: any status code, a ``Location`` with any scheme or a
malformed URL, ``Retry-After`` / ``Cache-Control`` / ``Content-Length`` /
``Content-Encoding`` / ``Content-Type`` values that are garbage, huge, negative or lying,
bodies truncated, bombed or random, and feeds whose entries link anywhere (pages with
their own random answers, or URLs no client can fetch). Beside them a good feed on
``127.0.0.1`` (another host: a 429 from the hostile one may silence only its own).

The property: the real CLI exits 0 without a traceback, the good story lands, the save
reaches the card, and every feed and every entry is left in a recorded state (polled,
or failed with a reason, or waiting for a host that asked to be left alone; no lease
held). Examples are derandomized, so CI runs the same ones every time; set
FEEDSYNC_FUZZ_EXAMPLES to search further (the seeds found go in as regular tests, in
tests/test_hostile.py).
"""

from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
import tempfile
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import hypothesis.strategies as st
import sitegen
from conftest import FeedsyncEnv, live_and_card, what_feedsync_sees
from hypothesis import HealthCheck, given, settings
from sitegen import Item

from feedsync.localserver import LocalServer

EXAMPLES = int(os.environ.get("FEEDSYNC_FUZZ_EXAMPLES", "25"))

# what a header value may hold: printable Latin-1 (CR/LF would only end the header)
HEADER_TEXT = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
    max_size=40,
)
NUMBERS = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.text(alphabet="0123456789", min_size=15, max_size=40),
    st.sampled_from(["", "-1", "1.5", "0x10", "²", "١٢٣", " 60 ", "60, 60", "1e9"]),
)
WEIRD_URLS = [
    "javascript:alert(1)",
    "data:text/html,<p>hi</p>",
    "ftp://localhost/x",
    "mailto:someone@example.com",
    "file:///etc/passwd",
    "http://0177.0.0.1/",
    "http://0x7f.1/",
    "http://[::1]:1/",
    "http://localhost:0/",
    "http://localhost:99999/",
    "http://",
    "http:///nohost",
    "http://local host/",
    "http://localhost/%zz%",
    "http://[fe80::1%25eth0]/",
    "http://xn--/",
    "http://xn--ls8h.la/" + "a" * 3000,
    "https://127.0.0.1:1/",
    "//localhost:1/x",
    "\x00http://localhost/",
]


@dataclass(frozen=True)
class Answer:
    """One random answer: written raw, byte for byte, then the connection closes."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def handler(self, request: BaseHTTPRequestHandler) -> None:
        head = [f"HTTP/1.1 {self.status} Fuzz"]
        head += [f"{name}: {value}" for name, value in self.headers]
        head += ["Connection: close", "", ""]
        text = "\r\n".join(head)
        try:  # header bytes as a server would send them: Latin-1, else UTF-8
            raw = text.encode("latin-1")
        except UnicodeEncodeError:
            raw = text.encode("utf-8")
        try:
            request.wfile.write(raw + self.body)
            request.wfile.flush()
        except OSError:
            pass  # the client hung up first (size cap, bad header): its right
        request.close_connection = True


@st.composite
def links(draw: st.DrawFn, local: list[str]) -> str:
    return draw(st.one_of(st.sampled_from(local), st.sampled_from(WEIRD_URLS)))


@st.composite
def feed_bodies(draw: st.DrawFn, local: list[str]) -> bytes:
    """An RSS document with random entries, possibly cut short, in some encoding."""
    entries = []
    for n in range(draw(st.integers(0, 4))):
        title = draw(
            st.one_of(
                st.text(max_size=30),
                st.sampled_from(["&#xD800; lone", "&#27;]0;pwned&#7;", "&#1;&#2;", "\u202e"]),
            )
        )
        link = draw(links(local))
        entries.append(Item(title or f"untitled {n}", link))
    xml = sitegen.rss2("fuzz", "http://localhost/", entries)
    body = xml.encode("utf-8", "surrogatepass")
    cut = draw(st.sampled_from([None, None, None, 0.5, 0.9]))
    if cut is not None:
        body = body[: int(len(body) * cut)]
    return body


@st.composite
def answers(draw: st.DrawFn, local: list[str], feed: bool) -> Answer:
    status = draw(
        st.one_of(
            st.sampled_from([200, 200, 200, 301, 302, 303, 304, 307, 308, 404, 410, 429, 503]),
            st.integers(100, 599),
        )
    )
    if feed:
        kind = draw(st.sampled_from(["feed", "feed", "random", "bomb", "empty"]))
    else:
        kind = draw(st.sampled_from(["page", "page", "random", "bomb", "empty"]))
    body = {
        "feed": lambda: draw(feed_bodies(local)),
        "page": lambda: sitegen.article_page("A fuzzed page", seed="fuzz").encode(),
        "random": lambda: draw(st.binary(max_size=300)),
        "bomb": lambda: b"",
        "empty": lambda: b"",
    }[kind]()
    headers: list[tuple[str, str]] = []
    coding = draw(
        st.sampled_from(["", "", "gzip", "deflate", "br", "x-gzip", "gzip, gzip", "garbage"])
    )
    if kind == "bomb":
        coding = "gzip"
        body = gzip.compress(b"\0" * 3_000_000, 1)  # past the 1 MB cap once inflated
    elif coding in ("gzip", "x-gzip") and draw(st.booleans()):  # else: it lies
        body = gzip.compress(body)
    elif coding == "deflate" and draw(st.booleans()):
        body = zlib.compress(body)
    if coding:
        headers.append(("Content-Encoding", coding))
    length = draw(
        st.one_of(
            st.just(str(len(body))),
            st.just(None),
            st.integers(-5, len(body) + 500).map(str),
            NUMBERS,
        )
    )
    if length is not None:
        headers.append(("Content-Length", length))
    if draw(st.booleans()):
        headers.append(("Location", draw(st.one_of(links(local), HEADER_TEXT))))
    if draw(st.booleans()):
        headers.append(("Retry-After", draw(st.one_of(NUMBERS, HEADER_TEXT, http_dates()))))
    if draw(st.booleans()):
        headers.append(("Cache-Control", "max-age=" + draw(NUMBERS) if draw(st.booleans()) else ""))
    content_type = draw(
        st.one_of(
            st.sampled_from(
                [
                    "application/rss+xml",
                    "text/html; charset=utf-8",
                    "text/xml; charset=garbage-42",
                    "application/rss+xml; charset=shift_jis",
                    "image/png",
                    "",
                ]
            ),
            HEADER_TEXT,
        )
    )
    headers.append(("Content-Type", content_type))
    if draw(st.booleans()):
        headers.append(("ETag", draw(HEADER_TEXT)))
        headers.append(("Last-Modified", draw(st.one_of(HEADER_TEXT, http_dates()))))
    return Answer(status, tuple(headers), body)


def http_dates() -> st.SearchStrategy[str]:
    days = st.sampled_from(["Mon", "Fri", "Xyz"])
    return st.builds(
        lambda d, day, year, hh: f"{d}, {day:02d} Dec {year} {hh:02d}:00:00 GMT",
        days,
        st.integers(0, 40),
        st.integers(0, 99999),
        st.integers(0, 30),
    )


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[Answer], list[Answer]]:
    """Answers for the hostile feeds, and for the pages their entries may link to."""
    pages = draw(st.lists(answers(["http://localhost/"], feed=False), min_size=1, max_size=3))
    feeds = [draw(answers(_PAGE_SLOTS[: len(pages)], feed=True)) for _ in range(3)]
    return feeds, pages


# paths are fixed per example and filled with that example's answers; the port is
# swapped in when served (hypothesis draws before the server is known)
_PAGE_SLOTS = [f"http://localhost:PORT/fuzz/page{n}" for n in range(3)]


class _Served:
    """One server for the whole test (a function-scoped fixture would be shared across
    examples anyway); each example gets fresh paths and a fresh database."""

    server: LocalServer | None = None
    count = 0


def _serve(answers: list[Answer], pages: list[Answer]) -> tuple[str, list[str]]:
    server = _Served.server
    assert server is not None
    _Served.count += 1
    prefix = f"/ex{_Served.count}"
    port = str(server.base_url.rsplit(":", 1)[1])

    def local(answer: Answer) -> Answer:
        fix = lambda b: b.replace(b"localhost:PORT/fuzz", f"localhost:{port}{prefix}".encode())  # noqa: E731
        headers = tuple(
            (n, v.replace("localhost:PORT/fuzz", f"localhost:{port}{prefix}"))
            for n, v in answer.headers
        )
        return Answer(answer.status, headers, fix(answer.body))

    for n, page in enumerate(pages):
        server.set(f"{prefix}/page{n}", b"", handler=local(page).handler)
    feeds = []
    for n, answer in enumerate(answers):
        server.set(f"{prefix}/feed{n}.xml", b"", handler=local(answer).handler)
        feeds.append(f"http://localhost:{port}{prefix}/feed{n}.xml")
    good_page = server.set(
        f"{prefix}/good-story", sitegen.article_page("Good story", seed="good"), "text/html"
    )
    good = server.set(
        f"{prefix}/good.xml",
        sitegen.rss2("good", server.url("/"), [Item("Good story", good_page)]),
        "application/rss+xml",
    )
    return good, feeds


def _check(env: FeedsyncEnv) -> None:
    done = env.run("run", expect=None, timeout=240)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    conn = what_feedsync_sees(*live_and_card(env.db_path, env.snapshot_path))
    try:
        titles = {t for (t,) in conn.execute("SELECT title FROM news")}
        assert "Good story" in titles, done.stderr
        held = conn.execute(
            "SELECT count(*) FROM feeds WHERE lease_owner IS NOT NULL AND lease_until > "
            "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')"
        ).fetchone()[0]
        assert held == 0
        blocked = {h for (h,) in conn.execute("SELECT host FROM hosts")}
        for url, polled, error in conn.execute("SELECT url, last_poll_at, last_error FROM feeds"):
            assert polled or error or "localhost" in blocked, (url, done.stderr)
        for title, state, attempts, error in conn.execute(
            "SELECT title, state, attempts, last_error FROM news_summary"
        ):
            assert state in {"new", "done", "failed", "gone"}
            if state in {"failed", "gone"}:
                assert error, title
            if state == "new":  # not tried: only when its host asked us to wait
                refused = blocked or "HTTP 429" in done.stderr or "HTTP 503" in done.stderr
                assert attempts == 0 and refused, (title, done.stderr)
    finally:
        conn.close()
    card = sqlite3.connect(f"file:{env.card_path}?mode=ro", uri=True)
    try:
        assert card.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert card.execute("SELECT count(*) FROM news WHERE title = 'Good story'").fetchone()[0]
    finally:
        card.close()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 25,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(worlds())
def test_whatever_the_servers_answer_the_run_lives_through_it(
    world: tuple[list[Answer], list[Answer]],
) -> None:
    answers, pages = world
    good, feeds = _serve(answers, pages)
    root = Path(tempfile.mkdtemp(prefix="feedsync-fuzz-"))
    ram = Path(tempfile.mkdtemp(prefix="feedsync-fuzz-", dir="/dev/shm"))
    try:
        (root / "home").mkdir()
        env = FeedsyncEnv(root=root, db_path=ram / "feedsync.db", snapshot_path=root / "card.db")
        env.configure(
            [good, *feeds],
            poll={"timeout": "20s", "max_feed_bytes": "1MB"},
            extract={"max_page_bytes": "1MB", "timeout": "60s"},
        )
        _check(env)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(ram, ignore_errors=True)


def setup_module() -> None:
    _Served.server = LocalServer().start()


def teardown_module() -> None:
    if _Served.server is not None:
        _Served.server.stop()
