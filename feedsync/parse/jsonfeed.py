"""JSON Feed 1.0 and 1.1 (jsonfeed.org), read with :mod:`json`.

feedparser reads no document that starts with '{', so a JSON document is this reader's
whatever it is served as. An item of the wrong shape is skipped with its reason; an item
without a title is titled by the start of its text, since an entry is (url, title) here.
"""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from typing import Any

from feedsync.parse.raw import NotAFeed, RawEntry, RawFeed, newest


def is_json_feed(body: bytes) -> bool:
    """A JSON document: an object where XML would start with '<' (whatever it is served
    as: feedparser reads no document that starts with '{')."""
    return body.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"


# A title made for an item that has none (JSON Feed allows it: a microblog post) is its
# text's beginning, cut at a word, as Miniflux does; reader keeps it untitled, but an entry
# is (url, title) here.
UNTITLED_TITLE_CHARS = 100
# How much of content_html is read for that title: its text starts well before (a post
# whose first 64 KiB show no text stays untitled), and the cost stays bounded.
_UNTITLED_HTML_CHARS = 64 * 1024

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


def _space_or_nothing(markup: re.Match[str]) -> str:
    """What a piece of markup leaves in the text: nothing inside a word, else a space."""
    tag = markup.group(2)
    return "" if tag is not None and tag.lower() in _INLINE else " "


def html_text(fragment: str) -> str:
    """The text a reader sees of an HTML fragment, one line: no markup, nothing of the
    elements that show no text (a <script> block at the start of a post was its made-up
    title), no comment or CDATA section, character references decoded."""
    return " ".join(html.unescape(_MARKUP.sub(_space_or_nothing, fragment)).split())


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _json_date(value: Any) -> datetime | None:
    """An RFC 3339 date (JSON Feed's), or None."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    text = value.strip()
    if text[-1:] in ("z", "Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _names(value: Any) -> list[str]:
    """The names of JSON Feed authors: 1.1's list of objects, 1.0's single object."""
    people = value if isinstance(value, list) else [value]
    return [p["name"].strip() for p in people if isinstance(p, dict) and _string(p.get("name"))]


def _untitled(item: dict[str, Any]) -> str | None:
    """A title for an item without one: the start of its summary or text."""
    for key in ("summary", "content_text", "content_html"):
        value = _string(item.get(key))
        if value is None:
            continue
        if key == "content_html":
            value = html_text(value[:_UNTITLED_HTML_CHARS])
        words = " ".join(value.split())
        if words:
            if len(words) <= UNTITLED_TITLE_CHARS:
                return words
            cut = words[:UNTITLED_TITLE_CHARS].rsplit(" ", 1)[0]
            return f"{cut}…"
    return None


def _item_date(item: Any) -> datetime | None:
    """An item's date (published, else modified); None for an item of the wrong shape."""
    if not isinstance(item, dict):
        return None
    return _json_date(item.get("date_published")) or _json_date(item.get("date_modified"))


def _json_item(item: Any, date: datetime | None, feed_authors: list[str]) -> RawEntry | str:
    """One JSON Feed item (``date``: its date, read once when the newest were chosen),
    or why it is skipped."""
    if not isinstance(item, dict):
        return "not a JSON object"
    guid = item.get("id")
    if isinstance(guid, (int, float)) and not isinstance(guid, bool):
        guid = str(guid)  # 1.0: "coerce it to a string"
    link = _string(item.get("url")) or _string(item.get("external_url"))
    title = _string(item.get("title"))
    if title is None or not title.strip():
        title = _untitled(item)
    summary = next(
        (
            value
            for key in ("summary", "content_html", "content_text")
            if (value := _string(item.get(key))) and value.strip()
        ),
        None,
    )
    authors = _names(item.get("authors")) or _names(item.get("author")) or feed_authors
    return RawEntry(
        link=link,
        title=title,
        date=date,
        summary=summary.strip() if summary else None,
        author=", ".join(dict.fromkeys(authors)) or None,
        guid=_string(guid),
    )


def read_json_feed(body: bytes) -> RawFeed:
    """A JSON Feed (jsonfeed.org 1.0 or 1.1); raises NotAFeed with the reason. An item of
    the wrong shape is skipped with a reason, never fatal."""
    try:
        document = json.loads(body)
    except RecursionError:
        raise NotAFeed("not a feed (JSON nested too deep)") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, a 5,000-digit number
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        raise NotAFeed(f"not a feed (malformed JSON: {reason})") from None
    if not isinstance(document, dict):
        raise NotAFeed("not a feed (JSON, but not an object)")
    version = document.get("version")
    if not isinstance(version, str) or "jsonfeed.org/version/" not in version:
        raise NotAFeed("not a feed (JSON, but not a JSON Feed: no jsonfeed.org version)")
    items = document.get("items")
    if not isinstance(items, list):
        raise NotAFeed("malformed feed, no entry readable (JSON Feed without an items list)")
    feed_authors = _names(document.get("authors")) or _names(document.get("author"))
    # the newest MAX_ENTRIES by their dates alone, before any other work per item (a
    # title made from 64 KiB of HTML is some)
    dates = [_item_date(item) for item in items]
    kept = newest(dates)
    entries: list[RawEntry] = []
    rejected: list[str] = []
    for index in kept:
        read = _json_item(items[index], dates[index], feed_authors)
        if isinstance(read, str):
            rejected.append(read)
        else:
            entries.append(read)
    return RawFeed(
        title=document.get("title"),
        entries=entries,
        rejected=tuple(rejected),
        beyond=len(items) - len(kept),
    )
