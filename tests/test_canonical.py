"""Canonical URLs: one spelling per article, never an exception, never a lost article."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
def test_canonicalisation_never_raises_and_is_idempotent(link: str, base: str | None) -> None:
    once = canonical_url(link, base)
    if once is not None:
        assert once.startswith(("http://", "https://"))
        assert canonical_url(once) == once
        assert canonical_url(once, base) == once
