"""``feedsync add URL``: is it a feed, or a page that names its feeds?

A URL that answers with a feed is the feed. A web page names its feeds in
``<link rel="alternate" type="application/rss+xml" href="...">`` (RSS, Atom, RDF, and
``application/feed+json`` for a JSON Feed), the way browsers and readers find them; then
``application/json`` alternates (JSON Feed 1.0's type, but also any JSON API a page links,
so tried after the others); failing that, links that look like feeds (``/feed``,
``/rss.xml``, ``atom``, ``feed.json``) are tried. Every candidate is fetched and must
parse as a feed before it is accepted: a URL that is not a feed, and names none, is
refused with the reason.

What is found keeps the response it was found by and the guard that fetched it
(:class:`Found`): ``feedsync add`` stages the feed's entries from that very document,
instead of asking the server for it a second time within a second.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser

import httpx

from feedsync import fetch, timestamps
from feedsync.canonical import canonical_url
from feedsync.guard import Guard
from feedsync.parse import NotAFeed, parse_feed

FEED_TYPES = {
    "application/rss+xml",
    "application/atom+xml",
    "application/rdf+xml",
    "application/xml",
    "text/xml",
    "application/feed+xml",
    "application/feed+json",
}
# JSON Feed 1.0 said application/json, which also names a WordPress page's REST API: tried
# after every other alternate
MAYBE_FEED_TYPES = {"application/json"}
_FEEDISH = re.compile(r"(?:^|[/._-])(?:rss|atom|feeds?|rdf)(?:[/._-]|\.xml|$)", re.IGNORECASE)
MAX_CANDIDATES = 5


class NoFeed(Exception):
    """The URL is not a feed and names none; ``str()`` says why, in one line.
    ``unreachable``: the URL itself could not be fetched (it may be a feed that is down)."""

    def __init__(self, message: str, *, unreachable: bool = False):
        super().__init__(message)
        self.unreachable = unreachable


@dataclass(frozen=True)
class Found:
    url: str
    title: str | None
    entries: int
    # the feed document as fetched, and the guard that fetched it (whether its peer
    # was on the LAN: feedsync.guard), for the first poll to use (feedsync.polling)
    response: fetch.Response | None = None
    guard: Guard | None = None


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.alternates: list[str] = []
        self.maybe: list[str] = []
        self.anchors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name.lower(): value or "" for name, value in attrs}
        href = values.get("href", "").strip()
        if not href:
            return
        if tag == "link":
            rel = values.get("rel", "").lower().split()
            kind = values.get("type", "").lower().split(";")[0].strip()
            if "alternate" in rel and kind in FEED_TYPES:
                self.alternates.append(href)
            elif "alternate" in rel and kind in MAYBE_FEED_TYPES:
                self.maybe.append(href)
        elif tag == "a" and _FEEDISH.search(href):
            self.anchors.append(href)


def feed_links(html: str, base_url: str) -> list[str]:
    """Feed URLs a page names: its <link rel=alternate> first, then feed-like links."""
    parser = _Links()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # html.parser on hostile markup: keep what was read
        pass
    found: list[str] = []
    for href in [*parser.alternates, *parser.maybe, *parser.anchors]:
        url = canonical_url(href, base_url)
        if url and url not in found:
            found.append(url)
    return found


async def _try(
    client: httpx.AsyncClient, url: str, max_bytes: int, deadline: float, guard: Guard
) -> Found | str:
    try:
        response = await fetch.get(
            client,
            url,
            max_bytes=max_bytes,
            deadline=deadline,
            accept=fetch.FEED_ACCEPT,
            guard=guard,
        )
        parsed = parse_feed(response.body, response.url, timestamps.now(), response.content_type)
    except (fetch.FetchError, NotAFeed) as exc:
        return str(exc)
    return Found(
        url=url, title=parsed.title, entries=len(parsed.entries), response=response, guard=guard
    )


async def find_feed(
    url: str,
    *,
    deadline: float,
    max_bytes: int,
    agent: str,
    known: Callable[[str], bool] = lambda _: False,
) -> Found:
    """The feed at ``url`` or named by the page at ``url``; raises NoFeed. A feed the
    page names that is ``known`` (a feed there already) is taken as it is, not fetched:
    it is found, without a :attr:`Found.response`."""
    page = Guard.feed()  # what the user typed: the owner's choice
    async with fetch.make_client(deadline, 4, agent=agent) as client:
        try:
            response = await fetch.get(
                client,
                url,
                max_bytes=max_bytes,
                deadline=deadline,
                accept=fetch.FEED_ACCEPT + ", text/html;q=0.8",
                guard=page,
            )
        except fetch.FetchError as exc:
            raise NoFeed(f"cannot fetch {url}: {exc}", unreachable=True) from None
        try:
            parsed = parse_feed(
                response.body, response.url, timestamps.now(), response.content_type
            )
            return Found(
                url=url,
                title=parsed.title,
                entries=len(parsed.entries),
                response=response,
                guard=page,
            )
        except NotAFeed as exc:
            why = str(exc)
        html = response.body.decode("utf-8", "replace")
        candidates = feed_links(html, response.url)[:MAX_CANDIDATES]
        if not candidates:
            if "html" in (response.content_type or "").lower() or "<html" in html[:2048].lower():
                raise NoFeed(f"{url} is a web page that names no RSS, Atom or JSON feed")
            raise NoFeed(f"{url} is not a feed: {why}")
        tried = []
        for candidate in candidates:
            if known(candidate):
                return Found(url=candidate, title=None, entries=0)
            # a page on the internet cannot lead onto the LAN
            result = await _try(client, candidate, max_bytes, deadline, Guard.found_on(page))
            if isinstance(result, Found):
                return result
            tried.append(f"{candidate}: {result}")
        raise NoFeed(
            f"{url} is not a feed and none of the feeds it names works (" + "; ".join(tried) + ")"
        )
