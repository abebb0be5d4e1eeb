"""What an entry is called where it is shown, when its feed gave it no title.

RSS 2.0 allows an item with only a link and a description, JSON Feed 1.1 an item without
"title", and a Mastodon account's feed (``/@user.rss``) is nothing else: every post is a
``<guid>``, a ``<link>``, a ``<pubDate>`` and a ``<description>`` of HTML. Such an entry
is staged under the title ``''``: its key ``(url, '')`` is the same on every poll, so a
post whose text is edited is still the one entry, never a second article (a title made
from the text would change with it), and ``''`` is a value, where NULLs would all be
distinct under ``UNIQUE(url, title)``.

Where it is shown (``news``, ``show``, ``search``, ``export``, the article's ``title``
in the database) it is called, in this order:

1. the first line of its summary's text (the first paragraph, or up to the first line
   break), the @mentions a reply starts with left out, cut at a word to
   :data:`UNTITLED_TITLE_CHARS` characters ("…" where cut);
2. once its page is extracted, the page's own title (for a post of only a picture);
3. its URL (Miniflux's last resort too).

docs/architecture.md ("Entries without a title") has the measurements behind the choice.
"""

from __future__ import annotations

import html
import re

# The longest title made from a text, in characters (Miniflux's too): a list line shows
# what fits its width of it.
UNTITLED_TITLE_CHARS = 100
# How much of a summary is read for it: the first line is far sooner, and the cost stays
# bounded (a summary is at most 64 KiB already).
_SUMMARY_CHARS = 64 * 1024

# Elements whose content is no text a reader is shown: code and styling, inert templates,
# fallbacks (for no scripting, no frames, no audio or video), the metadata of a whole
# page, the labels inside a graphic or a formula.
_HIDDEN = (
    "script|style|template|noscript|iframe|noembed|noframes|audio|video|canvas|object"
    "|head|title|svg|math"
)
# Elements that run on inside a word (the rest end one): "<b>po</b>st" is "post".
_INLINE_NAMES = (
    "a abbr b bdi bdo cite code data del dfn em font i ins kbd mark q s samp small span"
    " strike strong sub sup time tt u var wbr"
)
_INLINE = frozenset(_INLINE_NAMES.split())
# Elements that end a line: a paragraph, a line break, a heading, an item, a rule.
_BLOCK_NAMES = (
    "address article aside blockquote br dd div dl dt figcaption figure footer h1 h2 h3 h4"
    " h5 h6 header hr li main nav ol p pre section table tr ul"
)
_BLOCK = frozenset(_BLOCK_NAMES.split())
# What a tag holds up to its ">": a quoted value may hold a ">" (an attribute's quotes
# only count after its "="). Every character is taken by one branch, so the scan never
# backtracks: linear in the text, however broken.
_TAG_BODY = r"""(?:[^>"'=]|=\s*"[^"]*(?:"|\Z)|=\s*'[^']*(?:'|\Z)|["'=])*(?:>|\Z)"""
# HTML's markup, as its tokenizer reads it, leftmost first, each to its end or to the end
# of the text when it is not closed (as HTML reads an unclosed comment or <script>): a
# comment, a CDATA section (a comment to HTML), a hidden element with all it holds (none
# when self-closed: <svg/>, <iframe .../>), any other tag, a doctype or processing
# instruction. Each branch succeeds once started, so no start is scanned twice.
_MARKUP = re.compile(
    r"<!--.*?(?:--!?>|\Z)"
    r"|<!\[CDATA\[.*?(?:\]\]>|\Z)"
    rf"|<({_HIDDEN})(?=[\s/>]|\Z){_TAG_BODY}(?:(?<=/>)|.*?(?:</\1\s*>|\Z))"
    rf"|</?([A-Za-z][^\s/>]*){_TAG_BODY}"
    r"|<[!?/][^>]*(?:>|\Z)",
    re.IGNORECASE | re.DOTALL,
)
_LINE_END = "\n"


def _what_markup_leaves(markup: re.Match[str]) -> str:
    """Nothing inside a word, a line's end after a block, else a space."""
    tag = markup.group(2)
    if tag is None:
        return " "
    name = tag.lower()
    return "" if name in _INLINE else _LINE_END if name in _BLOCK else " "


def html_lines(fragment: str) -> list[str]:
    """The lines a reader sees of an HTML fragment (or of plain text): no markup, nothing
    of the elements that show no text, no comment or CDATA section, character references
    decoded, whitespace collapsed, no empty line."""
    text = html.unescape(_MARKUP.sub(_what_markup_leaves, fragment))
    return [line for line in (" ".join(part.split()) for part in text.splitlines()) if line]


def html_text(fragment: str) -> str:
    """The text a reader sees of an HTML fragment, one line (see :func:`html_lines`)."""
    return " ".join(html_lines(fragment))


# A reply starts with whom it answers: "@board", "@alice@social.example".
_MENTIONS = re.compile(r"(?:@[\w.-]+(?:@[\w-]+(?:\.[\w-]+)+)?(?:\s+|$))+")


def from_summary(summary: str | None) -> str | None:
    """The title an untitled entry is shown under, made from its summary (HTML or
    plain text): the first line of its text, the @mentions it starts with left out, cut
    at a word to :data:`UNTITLED_TITLE_CHARS`; None when it shows no text."""
    if not summary:
        return None
    lines = html_lines(summary[:_SUMMARY_CHARS])
    if not lines:
        return None
    first = lines[0]  # kept when every line is mentions only
    for line in lines:  # "@board" may be a paragraph of its own
        start = _MENTIONS.match(line)
        rest = line[start.end() :] if start else line
        if rest:
            first = rest
            break
    if len(first) <= UNTITLED_TITLE_CHARS:
        return first
    cut = first[:UNTITLED_TITLE_CHARS].rsplit(" ", 1)[0]
    return f"{cut}…"


def shown(title: str, summary: str | None, url: str, page_title: str | None = None) -> str:
    """What an entry is called: its own title, else the beginning of its summary, else
    its page's title (once extracted), else its URL. Never empty."""
    return title or from_summary(summary) or page_title or url
