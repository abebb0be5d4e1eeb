"""Hostile feed documents at scale, and what parsing and staging them costs per entry.

A feed may carry 100,000 entries in 10 MB (an archive served as a feed), all without a
description, all with one link, one title or one GUID, nested deep, or malformed so that
only feedparser's lenient reader takes it. Every step on the poll path must stay linear
in such a document (issue 41): ``python -m bench.hostile`` parses and stages each shape at
2,000 / 20,000 / 100,000 entries and prints CPU per entry, with the ratio of the largest
size to the smallest (flat within 1.5x is the bar). tests/test_parse_scale.py runs the
same documents at smaller sizes as a property test.
"""

from __future__ import annotations

import json

SHAPES = (
    "plain",  # title, link, description, date: the ordinary feed, for comparison
    "no-description",
    "one-link",
    "one-title",
    "one-guid",
    "deep",  # each description nested 200 elements deep
    "malformed",  # an unescaped '&' in every title: feedparser's lenient reader reads it
    "atom-no-summary",
    "json",
)

_DAY = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _date(i: int) -> str:
    """A distinct RFC 822 date per entry, newest last (an archive listed oldest first)."""
    minutes = i % 60
    hours = (i // 60) % 24
    day = 1 + (i // 1440) % 28
    return f"{_DAY[(day - 1) % 7]}, {day:02d} Feb 2026 {hours:02d}:{minutes:02d}:00 GMT"


def _iso(i: int) -> str:
    minutes = i % 60
    hours = (i // 60) % 24
    day = 1 + (i // 1440) % 28
    return f"2026-02-{day:02d}T{hours:02d}:{minutes:02d}:00Z"


def document(shape: str, entries: int, site: str = "https://news.example.com") -> tuple[bytes, str]:
    """(body, content type) of a feed of ``entries`` entries of ``shape``, its links on
    ``site``."""
    if shape == "json":
        items = [
            {
                "id": f"urn:x:{i}",
                "url": f"{site}/a/{i}",
                "content_text": f"Story {i}",
                "date_published": _iso(i),
            }
            for i in range(entries)
        ]
        body = {"version": "https://jsonfeed.org/version/1.1", "title": "Big", "items": items}
        return json.dumps(body).encode(), "application/feed+json"
    if shape == "atom-no-summary":
        parts = [
            '<?xml version="1.0" encoding="utf-8"?>'
            '<feed xmlns="http://www.w3.org/2005/Atom"><title>Big</title>'
            "<id>urn:x:feed</id><updated>2026-02-28T00:00:00Z</updated>"
        ]
        parts.extend(
            f"<entry><id>urn:x:{i}</id><title>Story {i}</title>"
            f'<link href="{site}/a/{i}"/><updated>{_iso(i)}</updated></entry>'
            for i in range(entries)
        )
        parts.append("</feed>")
        return "".join(parts).encode(), "application/atom+xml"
    items = []
    nest = "<div>" * 200 + "deep" + "</div>" * 200
    for i in range(entries):
        link = f"{site}/a/0" if shape == "one-link" else f"{site}/a/{i}"
        title = "The same story" if shape == "one-title" else f"Story {i}"
        if shape == "malformed":
            title += " & more"
        guid = "<guid>urn:x:same</guid>" if shape == "one-guid" else ""
        if shape == "no-description":
            description = ""
        elif shape == "deep":
            description = f"<description><![CDATA[{nest}]]></description>"
        else:
            description = f"<description>Text of story {i}.</description>"
        items.append(
            f"<item><title>{title}</title><link>{link}</link>{guid}{description}"
            f"<pubDate>{_date(i)}</pubDate></item>"
        )
    body = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Big</title>'
        "<link>https://news.example.com/</link>" + "".join(items) + "</channel></rss>"
    )
    return body.encode(), "application/rss+xml"
