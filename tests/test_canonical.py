"""Canonical URLs: one spelling per article, never an exception, never a lost article."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

import pytest
from conftest import corpus_or_skip
from hypothesis import example, given, settings
from hypothesis import strategies as st

from feedsync import canonical
from feedsync.canonical import canonical_url

FEED = "https://news.example.com/feeds/world.xml"


@pytest.mark.parametrize(
    "spelling",
    [
        "https://news.example.com/2026/11/story.html",
        "HTTPS://News.Example.COM/2026/11/story.html",
        "https://news.example.com:443/2026/11/story.html",
        "https://news.example.com/2026/11/story.html#comments",
        "https://news.example.com/2026/11/story.html?utm_source=rss&utm_medium=feed",
        "https://news.example.com/2026/11/story.html?fbclid=IwAR0abc&gclid=xyz",
        "https://news.example.com/2026/11/story.html?mc_cid=1&mc_eid=2",
        "https://news.example.com/2026/11/./story.html",
        "https://news.example.com/2026/12/../11/story.html",
        "/2026/11/story.html",  # relative to the feed
        "../2026/11/story.html",
        "  https://news.example.com/2026/11/story.html  ",
    ],
)
def test_spellings_of_one_article_agree(spelling: str) -> None:
    assert canonical_url(spelling, FEED) == "https://news.example.com/2026/11/story.html"


def test_default_port_dropped_other_ports_kept() -> None:
    assert canonical_url("http://example.com:80/a") == "http://example.com/a"
    assert canonical_url("http://example.com:8080/a") == "http://example.com:8080/a"
    assert canonical_url("https://example.com:80/a") == "https://example.com:80/a"


def test_the_rest_of_the_query_is_kept_as_written() -> None:
    assert (
        canonical_url("https://e.com/s?id=3&utm_campaign=x&page=2") == "https://e.com/s?id=3&page=2"
    )
    # order is meaning for some sites: kept
    assert canonical_url("https://e.com/s?b=2&a=1") == "https://e.com/s?b=2&a=1"
    # value-less keys identify articles on some sites: /story?123 vs /story?456
    assert canonical_url("https://e.com/story?123") == "https://e.com/story?123"
    assert canonical_url("https://e.com/story?123") != canonical_url("https://e.com/story?456")
    # a parameter that only looks like a tracker is not one
    assert canonical_url("https://e.com/s?reference=7") == "https://e.com/s?reference=7"
    assert canonical_url("https://e.com/s?a=&b=1") == "https://e.com/s?a=&b=1"


def test_percent_encoding_has_one_spelling() -> None:
    expected = "https://e.com/caf%C3%A9/~user"
    assert canonical_url("https://e.com/café/~user") == expected
    assert canonical_url("https://e.com/caf%c3%a9/%7Euser") == expected
    # an encoded slash is not a slash
    assert canonical_url("https://e.com/a%2fb") == "https://e.com/a%2Fb"


def test_international_hosts_and_empty_paths() -> None:
    assert canonical_url("https://Bücher.example/") == "https://xn--bcher-kva.example/"
    assert canonical_url("https://example.com") == "https://example.com/"
    assert canonical_url("https://user:secret@example.com/a") == "https://example.com/a"
    assert canonical_url("http://[::1]:8080/x") == "http://[::1]:8080/x"


@pytest.mark.parametrize(
    "link",
    [
        "mailto:editor@example.com",
        "javascript:alert(1)",
        "ftp://example.com/file",
        "data:text/html,hi",
        "https://",
        "http://example.com:99999/",
        "http://exa mple.com/",
        "",
        "   ",
        "https://e.com/" + "a" * 5000,
        "https://e.com/\x00",
    ],
)
def test_unusable_links_give_none(link: str) -> None:
    assert canonical_url(link, FEED) is None


urls = st.one_of(
    st.text(max_size=200),
    st.builds(
        lambda scheme, host, port, path, query, frag: f"{scheme}://{host}{port}{path}{query}{frag}",
        st.sampled_from(["http", "https", "HTTP", "Https", "ftp", ""]),
        st.text(min_size=0, max_size=30),
        st.sampled_from(["", ":80", ":443", ":8080", ":0", ":x"]),
        st.text(max_size=60).map(lambda t: "/" + t),
        st.text(max_size=60).map(lambda t: "?" + t),
        st.text(max_size=20).map(lambda t: "#" + t),
    ),
)


@settings(max_examples=1500, deadline=None)
@given(link=urls, base=st.sampled_from([None, FEED, "http://a.example/x/y/"]))
@example(link="; ?", base=FEED)  # an empty ";params": urljoin drops it from absolute links
def test_canonicalisation_never_raises_and_is_idempotent(link: str, base: str | None) -> None:
    once = canonical_url(link, base)
    if once is not None:
        assert once.startswith(("http://", "https://"))
        assert canonical_url(once) == once
        assert canonical_url(once, base) == once


# ---------------------------------------------------------------- the plain-ASCII fast path
# canonical_url takes a link of the common shape the short way (canonical._simple), skips
# w3lib's safe_url_string for a URL of plain ASCII characters and urljoin for an absolute
# link. Every shortcut must give exactly what the long way gives: resolve with urljoin,
# then make a URI with w3lib (the shortcuts shut off).

PLAIN = "abcXYZ019-._~:/?@!$&()*+,;=%"
plain_urls = st.builds(
    lambda scheme, host, port, path, query, frag: f"{scheme}://{host}{port}{path}{query}{frag}",
    st.sampled_from(["http", "https", "HTTP", "Https"]),
    st.sampled_from(["news.example.com", "News.Example.COM", "127.0.0.1", "a_b.example", "h."]),
    st.sampled_from(["", ":80", ":443", ":8080", ":", ":0080"]),
    st.text(alphabet=PLAIN + "/.", max_size=60).map(lambda t: "/" + t),
    st.one_of(
        st.just(""),
        st.text(alphabet=PLAIN, max_size=40).map(lambda t: "?" + t),
        st.sampled_from(["?utm_source=rss&id=7", "?a=%7e&b=%2f", "?x&&y=", "?%zz=1"]),
    ),
    st.sampled_from(["", "#", "#frag", "#a?b"]),
)
relative_links = st.text(alphabet=PLAIN + "./", max_size=60)


def _the_long_way(link: str, base: str | None, monkeypatch: pytest.MonkeyPatch) -> str | None:
    stripped = link.strip()
    given = urlsplit(stripped)
    if not stripped or (given.scheme in ("http", "https") and not given.netloc):
        return None  # rules of canonical_url's own, before any resolving
    with monkeypatch.context() as patch:
        patch.setattr(canonical, "_PLAIN_URI", re.compile(r"(?!)"))  # never plain
        patch.setattr(canonical, "_SIMPLE", re.compile(r"(?!)"))  # never simple
        return canonical_url(urljoin(base, stripped) if base else stripped)


@settings(max_examples=1500, deadline=None)
@given(
    link=st.one_of(plain_urls, relative_links),
    base=st.sampled_from([None, FEED, "http://127.0.0.1:8080/x/feed.xml"]),
)
def test_the_fast_path_gives_what_w3lib_and_urljoin_give(link: str, base: str | None) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert canonical_url(link, base) == _the_long_way(link, base, monkeypatch)


def test_the_fast_path_on_every_link_of_the_corpus() -> None:
    """Every entry link of the real-world feeds: the same canonical URL both ways."""
    folder = corpus_or_skip("feeds")
    links = 0
    with pytest.MonkeyPatch.context() as monkeypatch:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            text = path.read_bytes().decode("utf-8", errors="replace")
            for link in re.findall(r"https?://[^\s<>\"']+", text):
                base = "https://feeds.example.org/a/feed.xml"
                assert canonical_url(link, base) == _the_long_way(link, base, monkeypatch), link
                links += 1
    assert links > 1000


simple_urls = st.builds(
    lambda scheme, host, port, path, query: f"{scheme}://{host}{port}{path}{query}",
    st.sampled_from(["http", "https"]),
    st.sampled_from(["news.example.com", "127.0.0.1", "a-b.example", "x", "9.example", "a..b"]),
    st.sampled_from(["", ":80", ":443", ":8080", ":0080", ":0", ":65535", ":65536", ":99999"]),
    st.text(alphabet="abZ09-._~/", max_size=40).map(lambda t: "/" + t if t else t),
    st.one_of(
        st.just(""),
        st.text(alphabet="aZ09-._~=&+,:/", max_size=30).map(lambda t: "?" + t),
        st.sampled_from(["?utm_source=rss&id=7", "?fbclid=1", "?id=7&UTM_medium=x", "?&&"]),
    ),
)


@settings(max_examples=1500, deadline=None)
@given(link=simple_urls, base=st.sampled_from([None, FEED]))
def test_the_common_shape_gives_what_the_general_way_gives(link: str, base: str | None) -> None:
    """The short way for the common link (most of a feed's), or no answer: never another."""
    simple = canonical._simple(link)
    assert simple is None or simple == canonical._general(link, base)


def test_the_common_link_takes_the_short_way() -> None:
    """The links most feeds carry do have the common shape (else the short way is dead)."""
    for link, expected in [
        ("https://news.example.com/2026/11/27/story-1.html", None),
        ("http://127.0.0.1:8080/a/b?id=7&utm_source=rss", "http://127.0.0.1:8080/a/b?id=7"),
        ("https://example.com:443", "https://example.com/"),
    ]:
        assert canonical._simple(link) == (expected or link)
