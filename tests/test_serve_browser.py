"""The web page of ``feedsync serve`` in a real browser: headless Chromium (tests/browser.py)
against the real command serving a real database (tests/pageworld.py: hostile titles,
bodies and links among ordinary articles). A reader pages through the news, searches
from the box, opens an article, looks at the feeds, the failed articles and the status,
on a phone's screen and a laptop's; every page shows hostile text as text, runs no
script and needs nothing its Content-Security-Policy refuses (the browser logs any such
refusal: none is allowed). A screenshot of each page is taken in the run
(``FEEDSYNC_SCREENSHOTS=DIR`` keeps them there: docs/screenshots/ holds the README's).

Chromium and chromedriver are Debian packages that tests/run.sh installs: where they are
missing these tests skip, unless ``FEEDSYNC_BROWSER_REQUIRED`` is set (tests/run.sh sets
it, so CI cannot pass without a browser).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import browser
import pageworld
import pytest
from browser import LAPTOP, PHONE, Browser, chromium
from conftest import FeedsyncEnv
from pageworld import HOSTILE_BODY, HOSTILE_TITLES, World
from serving import Serving

from feedsync.serve.pages import PER_PAGE

_MISSING = browser.available()
if _MISSING is not None and os.environ.get("FEEDSYNC_BROWSER_REQUIRED"):
    raise RuntimeError(f"FEEDSYNC_BROWSER_REQUIRED is set, but {_MISSING}")
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


class Served:
    def __init__(self, world: World, serving: Serving, shots: Path):
        self.world = world
        self.base = serving.base
        self.shots = shots


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The pages' database, served by the real ``feedsync serve`` on 127.0.0.1."""
    root = tmp_path_factory.mktemp("browser")
    (root / "home").mkdir()
    env = FeedsyncEnv(root=root, url=None)
    env.configure([])
    world = pageworld.build(env)
    running = Serving(env, "serve", "--listen", "127.0.0.1:0", stub=False).started()
    shots = Path(os.environ.get("FEEDSYNC_SCREENSHOTS") or tmp_path_factory.mktemp("shots"))
    shots.mkdir(parents=True, exist_ok=True)
    try:
        yield Served(world, running, shots)
    finally:
        code, err = running.stop()
        assert code == 0, err


@pytest.fixture(scope="module")
def phone() -> Iterator[Browser]:
    with chromium(PHONE) as opened:
        yield opened


def clean(page: Browser) -> None:
    """What the page did that it must not: an alert (a script ran) or a refusal logged
    by the Content-Security-Policy (something tried to run or style inline)."""
    assert page.alert() is None, f"a script ran on {page.url}: {page.alert()!r}"
    refused = [line for line in page.console() if "Content Security Policy" in line]
    assert not refused, refused


def article_ids(page: Browser) -> list[int]:
    """The articles a list shows, top to bottom, from the links a reader clicks."""
    found = []
    for link in page.find_all("li.item a.title"):
        href = link.attribute("href") or ""
        matched = re.search(r"/article/(\d+)$", href)
        assert matched, href
        found.append(int(matched.group(1)))
    return found


def test_a_reader_pages_through_the_news_and_reads_an_article(
    served: Served, phone: Browser
) -> None:
    phone.get(served.base + "/")
    clean(phone)
    assert phone.title
    first = article_ids(phone)
    assert len(first) == PER_PAGE
    phone.screenshot(served.shots / "news-phone.png")
    seen = list(first)
    pages = 1
    while phone.find_all("a.next"):
        phone.find("a.next").click()
        phone.wait_for_url(lambda url: "before=" in url)
        phone.wait_for("li.item a.title")
        clean(phone)
        seen += article_ids(phone)
        pages += 1
        assert pages < 10, "the pages never end"
    # every article once, across the pages, newest first
    assert sorted(seen) == sorted(served.world.article_ids)
    assert len(seen) == len(set(seen))
    assert pages == -(-len(seen) // PER_PAGE)
    # back to the first page, and into its first ordinary article
    odd = set(served.world.hostile_ids.values()) | set(served.world.hostile_url_ids)
    number = next(n for n in first if n not in odd)
    phone.get(served.base + "/")
    opened = phone.find(f"li#a{number} a.title")
    title = opened.text
    opened.click()
    text = phone.wait_for("article#text")
    clean(phone)
    assert urlsplit(phone.url).path == f"/article/{number}"
    assert title in phone.find("h1").text
    # its whole text, as `feedsync show` gives it, paragraph by paragraph
    shown = json.loads(served.world.env.run("show", str(number), "--json").stdout)
    paragraphs = [line.strip() for line in shown["body"].splitlines() if line.strip()]
    assert paragraphs and all(line in text.text for line in paragraphs)
    originals = [a.attribute("href") or "" for a in phone.find_all("a.original")]
    assert originals and all(href.startswith(("http://", "https://")) for href in originals)
    phone.screenshot(served.shots / "article-phone.png")


def test_the_search_box_finds_what_feedsync_search_finds(served: Served, phone: Browser) -> None:
    phone.get(served.base + "/feeds")
    box = phone.find("form#search input[name=q]")
    box.type("harbour ferry\ue007")  # typed, then Enter: the form is sent as a person sends it
    phone.wait_for_url(lambda url: "/search?" in url)
    phone.wait_for("li.item a.title")
    clean(phone)
    done = served.world.env.run("search", "--json", "--limit", str(PER_PAGE), "harbour ferry")
    expected = [hit["id"] for hit in json.loads(done.stdout)]
    assert expected
    assert article_ids(phone) == expected
    # the matches are marked, inside the text a reader sees
    assert phone.find_all("li.item mark")
    phone.screenshot(served.shots / "search-phone.png")


def test_hostile_titles_and_bodies_are_text_and_no_script_runs(
    served: Served, phone: Browser
) -> None:
    world = served.world
    phone.get(served.base + "/")
    clean(phone)
    shown = " ".join(link.text for link in phone.find_all("li.item a.title"))
    for title in HOSTILE_TITLES[:2]:  # markup in a title: on the list, as its characters
        assert title in shown
    for title, number in world.hostile_ids.items():
        phone.get(f"{served.base}/article/{number}")
        text = phone.wait_for("article#text").text
        clean(phone)
        heading = phone.find("h1").text
        if "<" in title:
            assert "<" in heading  # the markup is shown, not parsed
        assert "alert('body')" in text  # the body's script is a sentence of the text
        assert not phone.find_all("article#text script, article#text iframe")
        assert not phone.find_all("[onerror], [onload], [onclick]")
    assert HOSTILE_BODY.splitlines()[0].split("<")[0].strip() in text
    for number in world.hostile_url_ids:  # a link that would run code is not a link
        phone.get(f"{served.base}/article/{number}")
        clean(phone)
        hrefs = [a.attribute("href") or "" for a in phone.find_all("a")]
        assert not [h for h in hrefs if h.lower().startswith(("javascript:", "data:"))]
    phone.get(served.base + "/search?q=script")
    clean(phone)


@pytest.mark.parametrize("size", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_feeds_failed_and_status_pages_show_what_feedsync_says(
    served: Served, size: tuple[int, int]
) -> None:
    name = "phone" if size == PHONE else "laptop"
    with chromium(size) as page:
        page.get(served.base + "/feeds")
        clean(page)
        failing = page.find(f"section.feed#feed-{served.world.failing_feed}").text
        assert "FAILING" in failing and "HTTP 500 <b>Internal</b> Error" in failing
        disabled = page.find(f"section.feed#feed-{served.world.disabled_feed}").text
        assert "HTTP 410 Gone" in disabled
        assert page.find_all("svg rect"), "the chart of articles per day"
        page.screenshot(served.shots / f"feeds-{name}.png")
        page.get(served.base + "/failed")
        clean(page)
        entries = page.find("main").text
        assert "HTTP 503 <from> the server" in entries
        assert "cannot resolve given-up.example" in entries
        page.screenshot(served.shots / f"failed-{name}.png")
        page.get(served.base + "/status")
        clean(page)
        assert "RAM" in page.find("main").text
        page.screenshot(served.shots / f"status-{name}.png")
        if size == LAPTOP:
            page.get(served.base + "/")
            clean(page)
            page.screenshot(served.shots / "news-laptop.png")
    # every screenshot is a picture of a page, not an empty one
    for shot in served.shots.glob(f"*-{name}.png"):
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert shot.stat().st_size > 5_000, shot
