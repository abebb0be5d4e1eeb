"""OPML reading and writing: folders, duplicates, escaping."""

from __future__ import annotations

import pytest

from feedsync import opml
from feedsync.records import FeedHealth


def health(url: str, title: str | None, category: str | None) -> FeedHealth:
    return FeedHealth(
        id=1,
        url=url,
        title=title,
        enabled=True,
        disabled_reason=None,
        origin="cli",
        latest_published="",
        last_poll_at=None,
        last_success_at=None,
        error_count=0,
        last_error=None,
        entries=0,
        category=category,
    )


def test_write_then_read_keeps_folders_titles_and_escaping() -> None:
    feeds = [
        health("https://a.example/rss?x=1&y=2", "A & B <news>", "News/World"),
        health("https://b.example/atom", None, None),
        health("https://c.example/feed", "Tech", "News/Tech"),
    ]
    back = opml.read(opml.write(feeds).encode())
    assert {(f.url, f.title, f.category) for f in back.feeds} == {
        ("https://a.example/rss?x=1&y=2", "A & B <news>", "News/World"),
        ("https://b.example/atom", "https://b.example/atom", None),
        ("https://c.example/feed", "Tech", "News/Tech"),
    }
    assert back.merged == 0 and back.unusable == ()


def test_not_opml() -> None:
    with pytest.raises(opml.OpmlError, match="not an OPML subscription list"):
        opml.read(b"<html><body>hi</body></html>")
