"""Finding the feeds a web page names."""

from __future__ import annotations

from feedsync.discover import feed_links

PAGE = "https://news.example.com/section/"


def test_link_alternates_come_first_resolved_and_deduplicated() -> None:
    html = """<html><head>
      <link rel="stylesheet" href="/style.css">
      <link rel="alternate" type="application/rss+xml" href="/rss.xml" title="RSS">
      <LINK REL="Alternate" TYPE="application/atom+xml; charset=utf-8" HREF="atom.xml">
      <link rel="alternate" type="text/html" href="/fr/">
      <link rel="alternate" type="application/rss+xml" href="/rss.xml?utm_source=x">
    </head><body><a href="/feed/">Feed</a><a href="/contact">Contact</a></body></html>"""
    assert feed_links(html, PAGE) == [
        "https://news.example.com/rss.xml",
        "https://news.example.com/section/atom.xml",
        "https://news.example.com/feed/",
    ]


def test_broken_markup_and_no_links() -> None:
    assert feed_links("<html><body><p>nothing", PAGE) == []
    assert feed_links("<<<>>>\x00<a href='javascript:alert(1)/rss'>", PAGE) == []
