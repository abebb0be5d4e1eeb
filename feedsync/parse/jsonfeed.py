"""JSON Feed 1.0 and 1.1 (jsonfeed.org), read with :mod:`json`.

feedparser reads no document that starts with '{', so a JSON document is this reader's
whatever it is served as. An item of the wrong shape is skipped with its reason; an item
without a title (1.1 allows it: a microblog post) is kept untitled, as every reader's
(``feedsync/titles.py``: what it is shown as).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from feedsync.parse.raw import NotAFeed, RawEntry, RawFeed, newest
from feedsync.titles import html_text

__all__ = ["html_text", "is_json_feed", "read_json_feed"]


def is_json_feed(body: bytes) -> bool:
    """A JSON document: an object where XML would start with '<' (whatever it is served
    as: feedparser reads no document that starts with '{')."""
    return body.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"


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
    # the newest MAX_ENTRIES by their dates alone, before any other work per item
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
