"""The subscriptions: ``add``, ``remove``, ``feeds`` (their health) and OPML import and
export."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from feedsync import config as config_module

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.records import FeedHealth
    from feedsync.storage import Storage
from feedsync.cli.common import EXIT_OK, UsageError, atomic_text, feed_ref, open_storage
from feedsync.health import articles_line, feed_health_line


def _user_feed_url(url: str) -> str:
    """The URL a user gives ``add``: http(s), or a ``feed:`` link as a page carries it
    (``feed://host/x`` is ``http://host/x``, as for ``import-opml``)."""
    from feedsync.canonical import canonical_url, without_feed_scheme

    canonical = canonical_url(without_feed_scheme(url))
    if canonical is None:
        raise UsageError(f"not an http:// or https:// URL: {url!r}")
    return canonical


def cmd_add(args: argparse.Namespace, config: Config) -> int:
    """Add the feed at URL, or the feed the page at URL names, then poll it once (its
    entries staged; their articles come with the next run or daemon tick).

    The feed is asked for once: the document discovery fetched is the one its first
    poll stages entries from. A URL already there (as it is, or as the URL a feed moved
    from) is said, and not fetched at all; with ``--no-fetch`` nothing is fetched, the
    next pass polls it."""
    import asyncio

    from feedsync import progress, terminal, timestamps
    from feedsync.discover import NoFeed, find_feed
    from feedsync.pass_plan import PassPlan, PassRuntime
    from feedsync.pipeline import Pass

    url = _user_feed_url(args.url)
    title = None
    if args.title is not None:
        title = terminal.clean(args.title, one_line=True).strip()
        if not title:
            raise UsageError("--title: expected some text")
    with open_storage(config) as storage:
        if storage.feed_id(url) is not None:
            return _already_there(storage, url, unapplied=_names_given(args))
        now = timestamps.to_iso(timestamps.now())
        if args.no_fetch:
            storage.add_feed(url, now, args.category, title)
            print(
                f"added {url} without fetching it; the next run (or the daemon's next tick) "
                "polls it"
            )
            return EXIT_OK
        try:
            found = asyncio.run(
                find_feed(
                    url,
                    deadline=config.poll.timeout.total_seconds(),
                    max_bytes=config.poll.max_feed_bytes,
                    agent=config.fetch.user_agent,
                    known=lambda candidate: storage.feed_id(candidate) is not None,
                )
            )
        except NoFeed as exc:
            hint = " (a feed that is down today: add it with --no-fetch)" if exc.unreachable else ""
            raise UsageError(f"{exc}{hint}") from None
        if found.url != url and storage.feed_id(found.url) is not None:
            return _already_there(storage, found.url, through=url, unapplied=_names_given(args))
        if not storage.add_feed(found.url, now, args.category, title):  # another process
            return _already_there(storage, found.url, unapplied=_names_given(args))
        feed_id = storage.feed_id(found.url)
        assert feed_id is not None
        first = {feed_id: (found.response, found.guard)} if found.response and found.guard else {}
        stats = Pass(
            PassPlan(only={feed_id}, prefetched=first, extract=False),
            PassRuntime(config, storage, progress.PlainProgress(summary=False)),
        ).run()
    via = "" if found.url == url else f" (found through {url})"
    name = terminal.clean(title or found.title or terminal.NO_TITLE, one_line=True)
    print(
        f"added {found.url}{via}: {name}, {terminal.plural(stats.staged, 'entry')} staged;"
        " their articles come with the next run"
    )
    return EXIT_OK


def _names_given(args: argparse.Namespace) -> str | None:
    """ "--title and --category", as far as they were given; None when neither was."""
    given = [f"--{name}" for name in ("title", "category") if getattr(args, name) is not None]
    return " and ".join(given) or None


def _already_there(
    storage: Storage, url: str, through: str | None = None, unapplied: str | None = None
) -> int:
    """``add`` of a feed the database has: said, with its id and where it comes from;
    ``unapplied``: the flags that would have named or filed it, which do not change a
    feed already there (said, not silently dropped)."""
    feed_id = storage.feed_id(url)
    found = next((f for f in storage.feed_health() if f.id == feed_id), None)
    where = " (found through " + through + ")" if through else ""
    if found is None:  # removed again this instant
        print(f"already there: {url}{where}")
        return EXIT_OK
    origin = ", listed in the config file" if found.origin == "config" else ""
    print(f"already there: [{found.id}] {found.url}{where}{origin}; not fetched again")
    if unapplied:
        print(f"  {unapplied} not applied: a feed is named and filed as it is added")
    return EXIT_OK


def cmd_remove(args: argparse.Namespace, config: Config) -> int:
    with open_storage(config) as storage:
        _, url = feed_ref(storage, args.feed)
        if url in config_module.feed_urls(config):
            raise UsageError(
                f"{url} is listed in {config.source}: delete it there "
                "(feedsync then stops polling it)"
            )
        removed = storage.remove_feed(url)
    if not removed:
        raise UsageError(f"no such feed: {url} (see 'feedsync feeds')")
    print(f"removed {url} (its articles are kept)")
    return EXIT_OK


def _is_failing(feed: FeedHealth, failing_after: int) -> bool:
    return not feed.enabled or feed.error_count >= failing_after or feed.articles_in_trouble


def cmd_feeds(args: argparse.Namespace, config: Config) -> int:
    import json
    from datetime import timedelta

    from feedsync import terminal as t
    from feedsync import timestamps

    with open_storage(config) as storage:
        feeds = storage.feed_health(week_ago=timestamps.to_iso(timestamps.now() - timedelta(7)))
    failing_after = config.poll.failing_after
    if args.failing:
        feeds = [f for f in feeds if _is_failing(f, failing_after)]
    if args.json:
        print(
            json.dumps(
                [
                    {
                        **f._asdict(),
                        # '' is the database's "none yet"; JSON says none with null
                        "latest_published": f.latest_published or None,
                        "health": feed_health_line(f, failing_after),
                        "articles_in_trouble": f.articles_in_trouble,
                    }
                    for f in feeds
                ],
                ensure_ascii=False,
            )
        )
        return EXIT_OK
    if not feeds:
        print(
            "no feeds in trouble"
            if args.failing
            else "no feeds yet: add one with 'feedsync add URL'"
        )
        return EXIT_OK
    room = t.width()
    for feed in feeds:
        origin = " (config)" if feed.origin == "config" else ""
        folder = f" [{feed.category}]" if feed.category else ""
        print(t.cut(f"[{feed.id}] {feed.title or t.NO_TITLE}{folder}{origin}", room))
        print("    " + t.cut_middle(feed.url, room - 4))
        if feed.moved_from:
            print("    " + t.cut_middle(f"(moved from {feed.moved_from})", room - 4))
        health = feed_health_line(feed, failing_after)
        colour = (
            "green" if health == "ok" else "red" if _is_failing(feed, failing_after) else ("yellow")
        )
        print("    " + t.paint(t.cut(health, room - 4), colour))
        articles = articles_line(feed)
        if articles and not health.startswith("ARTICLES FAILING"):
            print("    " + t.paint(t.cut(f"articles: {articles}", room - 4), "yellow"))
        if feed.last_warning and feed.enabled:
            print("    " + t.cut(f"warning: {feed.last_warning}", room - 4))
        latest = t.short_time(feed.latest_published, "none")
        print(
            t.cut(
                f"    last success {t.short_time(feed.last_success_at)} | latest entry "
                f"{latest} | {t.plural(feed.entries, 'entry')}",
                room,
            )
        )
    if any(articles_line(f) for f in feeds):
        print(t.cut("which articles fail, and why: feedsync news --state failed [--feed ID]", room))
    return EXIT_OK


def cmd_import_opml(args: argparse.Namespace, config: Config) -> int:
    from feedsync import opml, terminal, timestamps

    try:
        data = args.file.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    try:
        found = opml.read(data)
    except opml.OpmlError as exc:
        raise UsageError(f"{args.file}: {exc}") from None
    with open_storage(config) as storage:
        now = timestamps.to_iso(timestamps.now())
        added: list[opml.OpmlFeed] = []
        present: list[opml.OpmlFeed] = []
        for feed in found.feeds:
            new = storage.add_feed(feed.url, now, feed.category, feed.title)
            (added if new else present).append(feed)
    print(
        f"imported {args.file}: {terminal.plural(len(added), 'feed')} added, "
        f"{len(present)} already there"
    )
    for feed in present:
        print(f"  already there: {feed.url}")
    if found.skipped:
        repeats = f", {found.repeats} of them repeats" if found.repeats else ""
        print(f"  {terminal.plural(len(found.skipped), 'outline')} not imported{repeats}:")
    for skipped in found.skipped:  # as the file has it (cleaned: printed to a terminal)
        where = f"line {skipped.line}: " if skipped.line else ""
        what, why = (terminal.clean(text, one_line=True) for text in (skipped.what, skipped.reason))
        print(f"    {where}{what}: {why}")
    if added:
        print("their entries come with the next run (or the daemon's next tick)")
    return EXIT_OK


def cmd_export_opml(args: argparse.Namespace, config: Config) -> int:
    from feedsync import opml

    with open_storage(config) as storage:
        feeds = storage.feed_health()
    text = opml.write(feeds)
    if args.output:
        with atomic_text(args.output) as out:
            out.write(text)
        from feedsync.terminal import plural

        print(f"exported {plural(len(feeds), 'feed')} to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK
