"""Reading what was kept: ``news``, ``show``, ``search`` and ``export``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.records import NewsItem, SearchHit, StagedEntry
    from feedsync.storage import Storage
from feedsync.cli.common import (
    EXIT_OK,
    UsageError,
    atomic_text,
    feed_ref,
    open_storage,
)
from feedsync.health import ENTRY_STATES, entry_state_line


def _article_ref(storage: Storage, ref: str) -> NewsItem:
    from feedsync.canonical import canonical_url

    item = storage.news_get(int(ref)) if ref.isdigit() else None
    if item is None and not ref.isdigit():
        url = canonical_url(ref)
        item = storage.news_get(url) if url else None
    if item is None:
        raise UsageError(f"no article {ref!r} (see 'feedsync news' or 'feedsync search')")
    return item


# what --limit 0 and --all ask the storage for: every one (a LIMIT both engines take,
# and that search's "four times the limit" keeps within a BIGINT)
EVERY = 1 << 40


def _limit(args: argparse.Namespace) -> int:
    return args.limit or EVERY


def cut_short(shown: int, total: int | None) -> None:
    """A list cut by ``--limit`` says so, on stderr (stdout stays the list), with how
    to see all of it: "20 of 51 shown (--limit N, or --all)"; ``total`` None: more were
    found, not counted."""
    of = f"{shown} of {total}" if total is not None else f"the first {shown}, more found,"
    print(f"feedsync: {of} shown (--limit N, or --all)", file=sys.stderr)


def cmd_news(args: argparse.Namespace, config: Config) -> int:
    total: int | None = None
    since = args.since or ""
    with open_storage(config) as storage:
        feed_id = feed_ref(storage, args.feed)[0] if args.feed else None
        if args.state != "extracted":
            state = ENTRY_STATES[args.state]
            entries = storage.entries_in_state(state, since, feed_id, _limit(args))
            if args.limit and len(entries) >= args.limit:
                total = storage.entries_count(state, since, feed_id)
            shown = len(entries)
        else:
            items = storage.news_list(since, feed_id, _limit(args))
            others = "" if items or args.json else _not_there(storage, args.since, feed_id)
            if args.limit and len(items) >= args.limit:
                total = storage.news_count(since, feed_id)
            shown = len(items)
    if args.state != "extracted":
        _print_entries(args, config, entries)
    else:
        _print_news(args, items, others)
    if total is not None and total > shown:
        cut_short(shown, total)
    return EXIT_OK


def _print_news(args: argparse.Namespace, items: list[NewsItem], others: str) -> int:
    import json

    from feedsync import terminal as t

    if args.json:
        print(
            json.dumps(
                [{k: v for k, v in i._asdict().items() if k != "body"} for i in items],
                ensure_ascii=False,
            )
        )
        return EXIT_OK
    if not items:
        print("no articles" + (" in that time" if args.since else " yet") + others)
        return EXIT_OK
    room = t.width()
    for item in items:
        when = t.short_time(item.published or item.fetched_at)
        print(t.cut(f"[{item.id}] {when}  {item.title}", room))
        print(t.paint(t.labelled(f"      {item.feed_title or '-'}", item.url, room), "dim"))
    return EXIT_OK


def _not_there(storage: Storage, since: str | None, feed_id: int | None) -> str:
    """Where ``news`` found no article: the entries whose article is not there, so "no
    articles yet" never hides 20 failing ones (", but 20 failed: 'feedsync news --state
    failed'")."""
    found = []
    for name, state in ENTRY_STATES.items():
        count = storage.entries_count(state, since or "", feed_id)
        if count:
            found.append((f"{count} {name}", name))
    if not found:
        return ""
    states = "|".join(name for _, name in found)
    return f", but {', '.join(n for n, _ in found)}: 'feedsync news --state {states}'"


def _entry_json(entry: StagedEntry) -> dict[str, Any]:
    from feedsync.records import STATE_NAMES

    return {
        "entry_id": entry.id,
        "url": entry.url,
        "title": entry.title,
        "published": entry.published,
        "first_seen_at": entry.first_seen_at,
        "state": STATE_NAMES[entry.state],
        "attempts": entry.attempts,
        "next_attempt_at": entry.next_attempt_at,
        "last_error": entry.last_error,
        "feeds": [{"id": i, "url": u, "title": ti} for i, u, ti in entry.feeds],
    }


def _print_entries(args: argparse.Namespace, config: Config, entries: list[StagedEntry]) -> int:
    """``news --state pending|failed|given-up``: every entry, its feed and URL, where it
    stands and why (the full list that a run's grouped problem lines stand for)."""
    import json

    from feedsync import terminal as t

    if args.json:
        print(json.dumps([_entry_json(e) for e in entries], ensure_ascii=False))
        return EXIT_OK
    if not entries:
        where = " in that time" if args.since else ""
        where += " from that feed" if args.feed else ""
        print(f"no {args.state} articles{where}")
        return EXIT_OK
    room = t.width()
    for entry in entries:
        when = t.short_time(entry.published or entry.first_seen_at)
        print(t.cut(f"{when}  {t.clean(entry.title, one_line=True)}", room))
        feed = ", ".join(title or url for _, url, title in entry.feeds) or "-"
        print(t.paint(t.labelled(f"      {feed}", entry.url, room), "dim"))
        state = entry_state_line(entry, config.extract.max_attempts)
        print(t.cut(f"      {state}", room))
        if entry.last_error:
            reason = t.clean(entry.last_error, one_line=True)
            print(t.paint(t.cut(f"      {reason}", room), "yellow"))
    return EXIT_OK


def _show_entries(args: argparse.Namespace, config: Config, entries: list[StagedEntry]) -> int:
    """``show URL`` for an entry whose article is not there: where it stands and its
    history (attempts, last error, next try, the feeds it came from)."""
    import json

    from feedsync import terminal as t

    if args.json:
        # the newest (one URL under several titles is rare): one object, as for an article
        print(json.dumps(_entry_json(entries[0]), ensure_ascii=False))
        return EXIT_OK
    blocks = []
    for entry in entries:
        lines = [
            t.clean(entry.title, one_line=True),
            "state      no article: " + entry_state_line(entry, config.extract.max_attempts),
        ]
        if entry.last_error:
            lines.append(f"last error {entry.last_error}")
        lines.append(f"published  {t.short_time(entry.published, 'unknown')}")
        lines += [f"feed       {title or url}" for _, url, title in entry.feeds]
        lines.append(f"url        {entry.url}")
        lines.append(f"first seen {t.short_time(entry.first_seen_at)} · entry {entry.id}")
        blocks.append("\n".join(t.clean(line, one_line=True) for line in lines))
    print("\n\n".join(blocks))
    return EXIT_OK


def cmd_show(args: argparse.Namespace, config: Config) -> int:
    import json

    from feedsync import terminal as t
    from feedsync.canonical import canonical_url

    with open_storage(config) as storage:
        try:
            item = _article_ref(storage, args.article)
        except UsageError:  # no article: an entry still pending, failing or given up?
            url = canonical_url(args.article) if not args.article.isdigit() else None
            entries = storage.entries_by_url(url) if url else []
            if not entries:
                raise
            return _show_entries(args, config, entries)
        feeds = storage.news_feeds(item.id)
        revisions, duplicates = storage.news_links(item.id)
    if args.json:
        data = {
            **item._asdict(),
            "feeds": [{"id": i, "url": u, "title": ti} for i, u, ti in feeds],
            "revisions": [r._asdict() for r in revisions],
            "duplicates": [d._asdict() for d in duplicates],
        }
        print(json.dumps(data, ensure_ascii=False))
        return EXIT_OK
    room = min(t.width(), 100)
    details = [
        f"published  {t.short_time(item.published, 'unknown')}"
        + (f" · {item.author}" if item.author else "")
        + (f" · {item.language}" if item.language else ""),
        *(f"feed       {title or url}" for _, url, title in feeds),
        f"url        {item.url}",
        f"fetched    {t.short_time(item.fetched_at)} · article {item.id}",
    ]
    if len(revisions) > 1:  # the first is the article's own first title
        details.append("revisions")
        for revision in revisions:
            why = f" ({revision.reason})" if revision.reason else " (first seen)"
            details.append(f"  {t.short_time(revision.first_seen_at)}  {revision.title}{why}")
    if duplicates:
        details.append("duplicates (the same article under another URL)")
        for copy in duplicates:
            details.append(f"  {copy.url} ({copy.reason})")
    # every line of it without control characters (stored text is cleaned, but a
    # database may predate that), then the title in bold
    to_pager = t.pager() if sys.stdout.isatty() else None
    title = t.clean(item.title, one_line=True)
    if to_pager is not None and to_pager.colour:
        title = f"\033[{t.COLOURS['bold']}m{title}\033[0m"
    lines = [title]
    lines += [t.clean(line, one_line=True) for line in details] + [""]
    paragraphs = [  # filled by display width: a line of Japanese takes twice its length
        "\n".join(t.wrap(" ".join(t.clean(p, one_line=True).split()), room, sys.maxsize))
        for p in item.body.split("\n")
        if p.strip()
    ]
    text = "\n".join(lines) + "\n" + "\n\n".join(paragraphs) + "\n"
    if to_pager is not None:
        t.page(text, to_pager)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_search(args: argparse.Namespace, config: Config) -> int:
    import json

    from feedsync import terminal as t
    from feedsync.storage.search import QueryError, parse

    query = " ".join(args.query).strip()
    if not query:
        raise UsageError("the search query is empty")
    try:
        parse(query)  # a query that cannot be answered is said before opening anything
    except QueryError as exc:
        raise UsageError(str(exc)) from None
    colour = t.colour_enabled() and not args.json
    # on a terminal the highlight is put in after the snippet is cut to the width
    marks = (t.MARK_ON, t.MARK_OFF) if colour else ("[", "]")
    with open_storage(config) as storage:
        # one more than shown: whether the list is cut (search does not count them all)
        hits = storage.search(query, args.limit + 1 if args.limit else EVERY, marks)
    more = bool(args.limit) and len(hits) > args.limit
    hits = hits[: args.limit or None]
    if args.json:
        print(json.dumps([h._asdict() for h in hits], ensure_ascii=False))
    else:
        _print_hits(query, hits)
    if more:
        cut_short(len(hits), None)
    return EXIT_OK


def _print_hits(query: str, hits: list[SearchHit]) -> int:
    from feedsync import terminal as t

    if not hits:
        print(f"nothing found for {query!r}")
        return EXIT_OK
    room = t.width()
    for hit in hits:
        when = (hit.published or "")[:10]
        print(t.cut(f"[{hit.id}] {hit.title}", room))
        print(t.paint(t.cut(f"      {hit.feed_title or '-'} {when}", room), "dim"))
        for line in t.wrap(" ".join(hit.snippet.split()), room - 6, lines=2):
            print("      " + line.replace(t.MARK_ON, "\033[1;33m").replace(t.MARK_OFF, "\033[0m"))
    return EXIT_OK


# The export's field names are a documented, stable interface (README, "feedsync export").
EXPORT_FIELDS = (
    "id",
    "url",
    "title",
    "published",
    "feed_title",
    "author",
    "language",
    "fetched_at",
    "body",
)


def cmd_export(args: argparse.Namespace, config: Config) -> int:
    import contextlib
    import csv
    import json

    with open_storage(config) as storage, contextlib.ExitStack() as stack:
        out = stack.enter_context(atomic_text(args.output)) if args.output else sys.stdout
        count = 0
        if args.format == "csv":
            writer = csv.writer(out)
            writer.writerow(EXPORT_FIELDS)
            for item in storage.export_news(args.since or ""):
                writer.writerow(item)
                count += 1
        else:
            for item in storage.export_news(args.since or ""):
                out.write(
                    json.dumps(dict(zip(EXPORT_FIELDS, item, strict=True)), ensure_ascii=False)
                    + "\n"
                )
                count += 1
    if args.output:
        from feedsync.terminal import plural

        print(f"exported {plural(count, 'article')} to {args.output}", file=sys.stderr)
    return EXIT_OK
