"""The web page of ``feedsync serve`` (feedsync/serve/pages.py, chart.py): each handler
called with a real request on a real SQLite database filled through the storage, and
its HTML parsed and read as a user would read it: every article once across the pages,
the same hits as ``feedsync search`` (the CLI, as a subprocess), an article's whole text,
hostile titles, bodies and links shown as text and never as markup or script, a failing
feed's error, a failed article's reason, the budgets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit

import lxml.html
import pageworld
import pytest
from conftest import BACKENDS, FeedsyncEnv
from pageworld import HOSTILE_TITLES, NOW, World

from feedsync import timestamps
from feedsync.serve import chart, web
from feedsync.serve.markup import esc, href, marked
from feedsync.serve.pages import PER_PAGE, Pages
from feedsync.storage import Storage, open_storage


@pytest.fixture(scope="module", params=BACKENDS)
def world(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[World]:
    """Two feeds of articles (65 stories over 32 days, hostile titles, bodies and
    links), a failed and a given-up article, a failing feed and a disabled one: on each
    engine, filled through the storage as a pass would."""
    root = tmp_path_factory.mktemp("pages")
    (root / "home").mkdir()
    url = None
    if request.param == "postgresql":
        url = request.getfixturevalue("pg_server").create_database("pages")
    env = FeedsyncEnv(root=root, url=url)
    env.configure([])
    yield pageworld.build(env)


@pytest.fixture
def pages(world: World) -> Pages:
    return Pages(world.config)


@pytest.fixture
def storage(world: World) -> Iterator[Storage]:
    with open_storage(world.config.storage) as opened:
        yield opened


def request(target: str, **headers: str) -> web.Request:
    """A GET of ``target`` ("/search?q=x") as the server hands it to a handler."""
    split = urlsplit(target)
    return web.Request(
        "GET",
        split.path,
        dict(parse_qsl(split.query)),
        {k.replace("_", "-").lower(): v for k, v in headers.items()},
        "http://127.0.0.1:8765",
        None,
    )


class Page:
    """A page as a user's browser sees it: its status, its parsed tree."""

    def __init__(self, response: web.Response):
        self.response = response
        assert response.content_type == "text/html; charset=utf-8", response
        self.html = response.body.decode()
        self.tree = lxml.html.document_fromstring(self.html)

    def texts(self, xpath: str) -> list[str]:
        return [" ".join(e.text_content().split()) for e in self.tree.xpath(xpath)]

    def one(self, xpath: str) -> lxml.html.HtmlElement:
        (found,) = self.tree.xpath(xpath)
        return found

    def next_link(self) -> str | None:
        found = self.tree.xpath("//a[contains(@class, 'next')]/@href")
        return str(found[0]) if found else None

    def article_ids(self) -> list[int]:
        hrefs = self.tree.xpath(
            "//li[contains(@class, 'item')]//a[contains(@class, 'title')]/@href"
        )
        return [int(h.removeprefix("/article/")) for h in hrefs]


def get(handler: web.Handler, storage: Storage, target: str) -> Page:
    response = handler(storage, request(target))
    assert response.status == 200, response
    return Page(response)


def assert_harmless(page: Page) -> None:
    """Nothing in the parsed page runs: no script, no frame, no handler, no link that is
    not the page's own or http(s), no style the stylesheet did not set."""
    for element in page.tree.iter():
        if not isinstance(element.tag, str):
            continue
        assert element.tag not in ("script", "iframe", "object", "embed", "style", "base")
        for name, value in element.attrib.items():
            assert not name.lower().startswith("on"), (element.tag, name, value)
            assert name.lower() != "style", (element.tag, value)
            if name.lower() in ("href", "src", "action", "xlink:href"):
                target = value.strip().lower()
                assert target.startswith(("/", "http://", "https://", "#", "data:,")), value
                assert "javascript:" not in target


# ---------------------------------------------------------------- the pure pieces


def test_text_is_escaped_and_links_are_only_http() -> None:
    assert esc('<a href="x">\x1b[2J') == "&lt;a href=&quot;x&quot;&gt;[2J"
    assert href("https://e.com/a?b=1&c=2") == "https://e.com/a?b=1&amp;c=2"
    for bad in (
        "javascript:alert(1)",
        "JAVASCRIPT:x",
        " https://e.com",
        "data:,x",
        "/local",
        "https://e.com/\x00",
        "java\tscript:x",
        "https://e.com/a b",
    ):
        assert href(bad) is None, bad


def test_a_snippet_is_escaped_before_its_marks_become_mark_elements() -> None:
    assert marked("a \x01<b>\x02 c") == "a <mark>&lt;b&gt;</mark> c"
    assert marked("\x01open") == "<mark>open</mark>"  # an unpaired mark is closed
    assert marked("x\x02y") == "xy"


def test_the_chart_stacks_each_feeds_articles_per_day() -> None:
    days = chart.last_days(NOW.date(), 3)
    rows = [(1, days[0], 2), (2, days[0], 1), (1, days[2], 4), (3, "1999-01-01", 9)]
    svg = lxml.html.fragment_fromstring(chart.articles_per_day(rows, {1: "A <i>", 2: "B"}, days))
    hover = [" ".join(e.text_content().split()) for e in svg.iter("title")]
    assert f"{days[0]} · A <i>: 2 articles" in hover  # escaped in the markup, text here
    assert f"{days[2]} · A <i>: 4 articles" in hover
    assert f"{days[0]}: 3 articles" in hover
    assert not any("1999" in h for h in hover)  # outside the days drawn
    legend = [" ".join(li.text_content().split()) for li in svg.iter("li")]
    assert legend == ["A <i> 6", "B 1"]
    assert chart.articles_per_day([], {}, days).startswith('<p class="chart-empty">')


# ---------------------------------------------------------------- the news


def test_paging_the_news_shows_every_article_once_newest_first(
    world: World, pages: Pages, storage: Storage
) -> None:
    seen: list[int] = []
    target: str | None = "/"
    stamps: list[str] = []
    while target is not None:
        page = get(pages.news_page, storage, target)
        ids = page.article_ids()
        assert 0 < len(ids) <= PER_PAGE
        seen += ids
        stamps += [str(t) for t in page.tree.xpath("//li[@class='item']//time/@datetime")]
        target = page.next_link()
        assert_harmless(page)
    assert len(seen) == len(set(seen)) == len(world.article_ids)
    assert set(seen) == set(world.article_ids)
    assert stamps == sorted(stamps, reverse=True)


def test_a_news_item_shows_its_title_feed_date_and_first_words(
    world: World, pages: Pages, storage: Storage
) -> None:
    page = get(pages.news_page, storage, "/")
    item = page.one(f"//li[@id='a{world.hostile_ids[HOSTILE_TITLES[2]]}']")
    assert " ".join(item.xpath(".//a[@class='title']")[0].text_content().split()) == (
        "Ferry <b>bold</b> & 'quoted' \"double\""
    )
    assert "Harbour News <i>daily</i>" in item.text_content()
    assert "First paragraph with <script>alert('body')</script> in it." in item.text_content()
    assert item.xpath(".//time/@datetime")


def test_one_feeds_news_and_bad_parameters(world: World, pages: Pages, storage: Storage) -> None:
    page = get(pages.news_page, storage, f"/?feed={world.other_feed}")
    titles = page.texts("//li[@class='item']/a[@class='title']")
    assert titles and all(t.startswith(("Story", "Link that runs code")) for t in titles)
    assert "Other Times" in page.texts("//h1")[0]
    for target in ("/?before=abc", "/?before=-1", "/?before=0", "/?feed=x"):
        answer = pages.news_page(storage, request(target))
        assert answer.status == 400 and answer.body.count(b"\n") == 1, target
    assert pages.news_page(storage, request("/?feed=99999")).status == 404
    stale = pages.news_page(storage, request("/?before=999999"))  # retention took it
    assert stale.status == 404 and stale.body.count(b"\n") == 1


def test_the_news_answers_not_modified_when_nothing_changed(pages: Pages, storage: Storage) -> None:
    first = pages.news_page(storage, request("/"))
    etag = dict(first.headers)["ETag"]
    again = pages.news_page(storage, request("/", if_none_match=etag))
    assert again.status == 304 and again.body == b""
    other = pages.news_page(storage, request(f"/?before={get_first_id(first)}", if_none_match=etag))
    assert other.status == 200


def get_first_id(response: web.Response) -> int:
    return Page(response).article_ids()[0]


# ---------------------------------------------------------------- an article


def test_an_article_shows_its_whole_text_and_where_it_came_from(
    world: World, pages: Pages, storage: Storage
) -> None:
    news_id = world.article_ids[0]
    item = storage.news_get(news_id)
    assert item is not None
    page = get(pages.article_page, storage, f"/article/{news_id}")
    paragraphs = page.texts("//article[@id='text']/p")
    assert paragraphs == [line for line in item.body.split("\n") if line.strip()]
    assert page.texts("//h1") == [item.title]
    assert page.one("//a[@class='original']").get("href") == item.url
    assert item.author is not None and item.author in page.html
    assert page.one("//article[@id='text']").get("lang") == "en"
    assert_harmless(page)


def test_a_hostile_article_is_shown_as_text(world: World, pages: Pages, storage: Storage) -> None:
    for title, news_id in world.hostile_ids.items():
        page = get(pages.article_page, storage, f"/article/{news_id}")
        assert_harmless(page)
        shown = page.texts("//h1")[0]
        # what was written is what is read (its control characters dropped)
        assert shown == " ".join(title.replace("\x01", "").replace("\x02", "").split())
        assert page.texts("//title")[0] == f"{shown} · feedsync"
        assert not page.tree.xpath("//mark")  # the title's \x01...\x02 marks nothing
        text = page.texts("//article[@id='text']/p")
        assert text[0] == "First paragraph with <script>alert('body')</script> in it."
        assert text[2] == "Third, after an empty line: [31mred[0m and harbour words."
        assert '<b onclick="x()">Eve</b>' in page.one("//span[@class='author']").text_content()


def test_a_link_that_is_not_http_is_shown_not_linked(
    world: World, pages: Pages, storage: Storage
) -> None:
    for news_id in world.hostile_url_ids:
        page = get(pages.article_page, storage, f"/article/{news_id}")
        assert_harmless(page)
        assert not page.tree.xpath("//a[@class='original']")
        assert page.one("//span[@class='original']").text_content() == "Read the original"


def test_an_unknown_article_is_a_404_in_one_line(pages: Pages, storage: Storage) -> None:
    for target in ("/article/999999", "/article/abc", "/article/0"):
        answer = pages.article_page(storage, request(target))
        assert answer.status == 404 and answer.body.count(b"\n") == 1, target
        assert answer.body.startswith(b"no article")


# ---------------------------------------------------------------- search


def _search_ids(pages: Pages, storage: Storage, query: str) -> list[int]:
    ids: list[int] = []
    target: str | None = "/search?" + urlencode({"q": query})
    while target is not None:
        page = get(pages.search_page, storage, target)
        assert_harmless(page)
        ids += page.article_ids()
        target = page.next_link()
    return ids


@pytest.mark.parametrize(
    "query", ["harbour", "council OR storm", "ferry -timetable", '"second paragraph"', "stor*"]
)
def test_search_finds_what_feedsync_search_finds(
    world: World, pages: Pages, storage: Storage, query: str
) -> None:
    done = world.env.run("search", "--json", "--limit", "0", query)
    expected = [hit["id"] for hit in json.loads(done.stdout)]
    assert expected, query
    found = _search_ids(pages, storage, query)
    assert found == expected
    first = get(pages.search_page, storage, "/search?" + urlencode({"q": query}))
    assert first.texts("//p[@class='count']") == [
        f"{len(expected)} article{'s' if len(expected) != 1 else ''} found."
    ]


def test_search_marks_the_words_found_and_escapes_the_rest(
    world: World, pages: Pages, storage: Storage
) -> None:
    page = get(pages.search_page, storage, "/search?q=alert")
    assert_harmless(page)
    assert set(page.article_ids()) == set(world.hostile_ids.values())
    marks = page.texts("//p[@class='snippet']/mark")
    # each match marked (one the snippet's end cuts is marked as far as it goes)
    assert marks and all("alert".startswith(m.lower()) for m in marks)
    assert "alert" in marks
    snippets = page.texts("//p[@class='snippet']")
    assert any("<script>alert('body')</script>" in s for s in snippets)
    # the search box keeps the query, escaped
    hostile = get(pages.search_page, storage, '/search?q="><script>x')
    assert hostile.one("//form[@id='search']//input[@name='q']").get("value") == '"><script>x'
    assert_harmless(hostile)


def test_search_says_what_is_wrong_with_a_query_or_a_page(pages: Pages, storage: Storage) -> None:
    empty = get(pages.search_page, storage, "/search?q=")
    assert empty.tree.xpath("//form[@id='search']")
    refused = pages.search_page(storage, request("/search?q=-alone"))
    assert refused.status == 400
    assert Page(refused).texts("//p[@class='alert']")
    for target in ("/search?q=x&page=0", "/search?q=x&page=two", "/search?q=x&page=1000"):
        answer = pages.search_page(storage, request(target))
        assert answer.status == 400 and answer.body.count(b"\n") == 1, target


# ---------------------------------------------------------------- feeds, failed, status


def test_the_feeds_page_shows_each_feeds_health_and_last_error(
    world: World, pages: Pages, storage: Storage
) -> None:
    page = get(pages.feeds_page, storage, "/feeds")
    assert_harmless(page)
    broken = page.one(f"//section[@id='feed-{world.failing_feed}']")
    assert "bad" in broken.get("class")
    text = " ".join(broken.text_content().split())
    assert f"FAILING ({world.config.poll.failing_after} in a row)" in text
    assert "HTTP 500 <b>Internal</b> Error" in text
    gone = " ".join(page.one(f"//section[@id='feed-{world.disabled_feed}']").text_content().split())
    assert "DISABLED: HTTP 410 Gone: the feed was removed" in gone
    news = page.one(f"//section[@id='feed-{world.news_feed}']")
    assert "ok" in news.get("class").split()
    assert page.texts(f"//section[@id='feed-{world.news_feed}']/h2") == [
        "Harbour News <i>daily</i>"
    ]
    links = news.xpath(".//a[@class='atom']/@href")
    assert links == [f"http://127.0.0.1:8765/feeds/{world.news_feed}.atom"]


def test_the_feeds_page_draws_the_articles_per_day(
    world: World, pages: Pages, storage: Storage
) -> None:
    for _ in range(2):  # the page's four weeks end on its own today: not across a midnight
        today = timestamps.now().date()
        page = get(pages.feeds_page, storage, "/feeds")
        if timestamps.now().date() == today:
            break
    legend = page.texts("//ul[@class='legend']/li")
    assert [entry.rsplit(" ", 1)[0] for entry in legend] == [
        "Harbour News <i>daily</i>",
        "Other Times",
    ]
    days = chart.last_days(today, 28)
    per_day = storage.news_per_day(days[0])
    drawn = sum(int(entry.rsplit(" ", 1)[1]) for entry in legend)
    assert drawn == sum(n for _, day, n in per_day if day >= days[0])
    assert 0 < drawn < len(world.article_ids)  # the oldest stories are older than 28 days
    assert page.tree.xpath("//svg//rect/title")


def test_the_failed_page_shows_each_reason_and_next_try(pages: Pages, storage: Storage) -> None:
    page = get(pages.failed_page, storage, "/failed")
    assert_harmless(page)
    failed = page.texts("//li[contains(@class, 'entry') and contains(@class, 'failed')]")
    assert len(failed) == 1
    assert "A page that fails <now>" in failed[0]
    assert "HTTP 503 <from> the server" in failed[0]
    assert "failed 2 times (of 5), next try" in failed[0]
    given_up = page.texts("//li[contains(@class, 'entry') and contains(@class, 'gone')]")
    assert len(given_up) == 1
    assert "given up after 5 attempts" in given_up[0]
    assert "cannot resolve given-up.example" in given_up[0]


def test_the_status_page_shows_the_budgets_and_the_queue(
    world: World, pages: Pages, storage: Storage
) -> None:
    from feedsync import terminal as t

    page = get(pages.status_page, storage, "/status")
    assert_harmless(page)
    facts = dict(
        zip(
            page.texts("//dl[contains(@class, 'status')]/dt"),
            page.texts("//dl[contains(@class, 'status')]/dd"),
            strict=True,
        )
    )
    where = storage.status()
    if world.env.backend == "sqlite":
        assert f"of its {t.size(where.ram_budget)} budget" in facts["RAM disk"]
        assert f"of its {t.size(where.card_budget)} budget" in facts["card"]
        assert len(page.tree.xpath("//meter")) == 2
    else:  # a server's database: its name and size, never its password
        assert facts["database"].startswith(where.live)
        assert "pg_dump" in facts["saved"]
        secret = urlsplit(world.env.url or "").password
        assert secret and secret not in page.html
    assert facts["queue"].startswith("0 new, 1 failed (waiting to retry), 1 given up")
    assert facts["articles"].endswith(f"{len(world.article_ids)} in all")
    assert facts["daemon"].startswith("not running")


def test_the_stylesheet_is_css_and_revalidates(pages: Pages, storage: Storage) -> None:
    answer = pages.stylesheet(storage, request("/style.css"))
    assert answer.status == 200 and answer.content_type.startswith("text/css")
    assert b"prefers-color-scheme: dark" in answer.body
    etag = dict(answer.headers)["ETag"]
    assert pages.stylesheet(storage, request("/style.css", if_none_match=etag)).status == 304


def test_every_page_shares_the_layout_and_changes_nothing(
    world: World, pages: Pages, storage: Storage
) -> None:
    """The header's navigation and search form on every page, the one stylesheet, no
    form but the GET search, no button that acts, and the database unchanged."""
    before = storage.counts()
    writes = storage.writes
    for handler, target in (
        (pages.news_page, "/"),
        (pages.search_page, "/search?q=harbour"),
        (pages.article_page, f"/article/{world.article_ids[0]}"),
        (pages.feeds_page, "/feeds"),
        (pages.failed_page, "/failed"),
        (pages.status_page, "/status"),
    ):
        page = get(handler, storage, target)
        assert page.tree.xpath("//meta[@name='viewport']")
        assert page.tree.xpath("//link[@rel='stylesheet']/@href") == ["/style.css"]
        nav = page.tree.xpath("//header/nav/a/@href")
        assert {"/", "/feeds", "/failed", "/status"} <= set(nav)
        forms = page.tree.xpath("//form")
        assert [(f.get("id"), f.get("action"), f.get("method")) for f in forms] == [
            ("search", "/search", "get")
        ]
        assert not page.tree.xpath("//button[not(ancestor::form[@id='search'])]")
        assert_harmless(page)
    assert storage.counts() == before
    assert storage.writes == writes


def test_the_chart_days_end_today() -> None:
    days = chart.last_days(NOW.date(), 28)
    assert len(days) == 28 and days[-1] == NOW.date().isoformat()
    assert days == sorted(days)
