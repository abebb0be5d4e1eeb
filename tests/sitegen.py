"""Generated feeds (RSS 2.0, RSS 1.0/RDF, Atom 1.0) and article pages for the tests.

Pages look like news pages (header, nav, article, aside, footer) with enough prose for
trafilatura to find the article; each page's text is derived from its slug, so a test
can check that the right text landed under the right title.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from xml.sax.saxutils import escape

WORDS = (
    "harbour",
    "council",
    "ferry",
    "island",
    "library",
    "volunteers",
    "survey",
    "winter",
    "storm",
    "repairs",
    "budget",
    "school",
    "teachers",
    "parents",
    "road",
    "bridge",
    "river",
    "flood",
    "warning",
    "museum",
    "exhibition",
    "festival",
    "market",
    "traders",
    "farmers",
    "harvest",
    "weather",
    "forecast",
    "station",
    "trains",
    "delays",
    "hospital",
    "nurses",
    "patients",
    "ward",
    "funding",
    "plan",
    "residents",
    "meeting",
    "evening",
    "report",
    "minister",
    "village",
    "square",
    "church",
    "bells",
    "cyclists",
    "lane",
    "parking",
    "fees",
    "shop",
    "owners",
    "visitors",
    "season",
    "tide",
    "lifeboat",
    "crew",
    "rescue",
    "coast",
    "path",
    "walkers",
    "dogs",
    "beach",
    "clean",
    "plastic",
    "recycling",
    "scheme",
)


def prose(seed: str, paragraphs: int = 5, sentences: int = 5) -> list[str]:
    """Deterministic, sentence-shaped text for a page (the same seed gives the same text)."""
    rng = random.Random(hashlib.sha256(seed.encode()).hexdigest())
    out = []
    for _ in range(paragraphs):
        parts = []
        for _ in range(sentences):
            words = [rng.choice(WORDS) for _ in range(rng.randint(9, 16))]
            parts.append(" ".join(words).capitalize() + ".")
        out.append(" ".join(parts))
    return out


def article_page(
    title: str,
    seed: str,
    *,
    lang: str = "en",
    charset: str = "utf-8",
    canonical: str | None = None,
    paragraphs: list[str] | None = None,
) -> str:
    """A news page. ``canonical``: a <link rel=canonical>; ``paragraphs``: the text
    (default: prose(seed))."""
    body = "\n".join(f"      <p>{escape(p)}</p>" for p in paragraphs or prose(seed))
    link = f'<link rel="canonical" href="{escape(canonical)}">' if canonical else ""
    nav = "".join(f'<li><a href="/section/{w}">{w.title()}</a></li>' for w in WORDS[:7])
    return f"""<!DOCTYPE html>
<html lang="{lang}">
<head>
  <meta charset="{charset}">
  <title>{escape(title)} | Test Gazette</title>
  <meta property="og:title" content="{escape(title)}">
  <meta name="author" content="Test Reporter">
  {link}
</head>
<body>
  <header><a href="/">Test Gazette</a><nav><ul>{nav}</ul></nav></header>
  <main>
    <article>
      <h1>{escape(title)}</h1>
      <p class="byline">By Test Reporter</p>
{body}
    </article>
    <aside><h2>Related</h2><ul><li><a href="/other">Another story</a></li></ul></aside>
  </main>
  <footer><p>Copyright Test Gazette. All rights reserved.</p></footer>
</body>
</html>
"""


@dataclass(frozen=True)
class Item:
    title: str
    link: str
    published: datetime | None = None
    guid: str | None = None
    summary: str = "A short summary."


def rss2(title: str, link: str, items: list[Item]) -> str:
    rows = []
    for it in items:
        date = f"<pubDate>{format_datetime(it.published)}</pubDate>" if it.published else ""
        guid = f'<guid isPermaLink="false">{escape(it.guid)}</guid>' if it.guid else ""
        rows.append(
            f"<item><title>{escape(it.title)}</title><link>{escape(it.link)}</link>"
            f"{guid}{date}<description>{escape(it.summary)}</description></item>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel>'
        f"<title>{escape(title)}</title><link>{escape(link)}</link>"
        f"<description>test</description>{''.join(rows)}</channel></rss>\n"
    )


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def atom(title: str, link: str, items: list[Item]) -> str:
    rows = []
    for index, it in enumerate(items):
        stamp = it.published or datetime(2000, 1, 1, tzinfo=UTC)
        # an Atom entry must have <updated>; "no date" is tested with RSS/RDF instead
        rows.append(
            f"<entry><title>{escape(it.title)}</title>"
            f'<link rel="alternate" href="{escape(it.link)}"/>'
            f"<id>{escape(it.guid or f'urn:test:{index}:{it.link}')}</id>"
            f"<updated>{_rfc3339(stamp)}</updated>"
            + (f"<published>{_rfc3339(it.published)}</published>" if it.published else "")
            + f"<summary>{escape(it.summary)}</summary></entry>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<feed xmlns="http://www.w3.org/2005/Atom">'
        f'<title>{escape(title)}</title><link rel="self" href="{escape(link)}"/>'
        f"<id>{escape(link)}</id><updated>2026-01-01T00:00:00Z</updated>"
        f"{''.join(rows)}</feed>\n"
    )


def rdf(title: str, link: str, items: list[Item]) -> str:
    seq = "".join(f'<rdf:li rdf:resource="{escape(it.link)}"/>' for it in items)
    rows = []
    for it in items:
        date = f"<dc:date>{_rfc3339(it.published)}</dc:date>" if it.published else ""
        rows.append(
            f'<item rdf:about="{escape(it.link)}"><title>{escape(it.title)}</title>'
            f"<link>{escape(it.link)}</link>{date}"
            f"<description>{escape(it.summary)}</description></item>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        'xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f'<channel rdf:about="{escape(link)}"><title>{escape(title)}</title>'
        f"<link>{escape(link)}</link><description>test</description>"
        f"<items><rdf:Seq>{seq}</rdf:Seq></items></channel>{''.join(rows)}</rdf:RDF>\n"
    )


@dataclass(frozen=True)
class Toot:
    """One public post of a Mastodon account: its URL, date, HTML and attachments."""

    url: str
    published: datetime
    html: str  # the post's content, as Mastodon renders it
    media: tuple[tuple[str, str], ...] = ()  # (file URL, alt text)
    tags: tuple[str, ...] = ()


def mastodon_rss(name: str, acct: str, profile: str, toots: list[Toot]) -> str:
    """A Mastodon account's feed (``/@user.rss``), written as Mastodon 4.x writes it
    (app/views/accounts/show.rss.ruby; real ones from v4.2 and v4.4 compared): each
    <item> a <guid isPermaLink="true">, <link>, <pubDate>, the post's HTML escaped in
    <description>, a <media:content> per attachment, a <category> per hashtag, and NO
    <title>."""
    items = []
    for toot in toots:
        media = "".join(
            f'<media:content url="{escape(url)}" type="image/jpeg" fileSize="458863"'
            ' medium="image"><media:rating scheme="urn:simple">nonadult</media:rating>'
            + (f'<media:description type="plain">{escape(alt)}</media:description>' if alt else "")
            + "</media:content>"
            for url, alt in toot.media
        )
        tags = "".join(f"<category>{escape(tag)}</category>" for tag in toot.tags)
        items.append(
            f'<item><guid isPermaLink="true">{escape(toot.url)}</guid>'
            f"<link>{escape(toot.url)}</link>"
            f"<pubDate>{format_datetime(toot.published)}</pubDate>"
            f"<description>{escape(toot.html)}</description>{media}{tags}</item>"
        )
    newest = max((t.published for t in toots), default=datetime(2026, 1, 1, tzinfo=UTC))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"'
        ' xmlns:webfeeds="http://webfeeds.org/rss/1.0"'
        ' xmlns:media="http://search.yahoo.com/mrss/"><channel>'
        f"<title>{escape(name)}</title>"
        f"<description>Public posts from @{escape(acct)}</description>"
        f"<link>{escape(profile)}</link>"
        f"<lastBuildDate>{format_datetime(newest)}</lastBuildDate>"
        f"<generator>Mastodon v4.2.7</generator>{''.join(items)}</channel></rss>\n"
    )


FORMATS = {
    "rss2": (rss2, "application/rss+xml; charset=utf-8"),
    "atom": (atom, "application/atom+xml; charset=utf-8"),
    "rdf": (rdf, "application/rdf+xml; charset=utf-8"),
}
