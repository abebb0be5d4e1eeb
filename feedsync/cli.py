"""The ``feedsync`` command line.

Exit codes (a contract for cron and scripts, documented in README):

- 0: the command did its work (for ``run``: the pass completed; a feed or an article
  that failed is recorded and reported, not fatal),
- 1: an unexpected internal error (``--debug`` shows the traceback),
- 2: a usage or configuration error, with a one-line message naming what is wrong,
- 3: a storage failure (the database cannot be opened, read or written),
- 4: refused: doing it would lose data (``restore`` over unsaved changes, a save to the
  card of another database); the message says what ``--force`` would do,
- 130: interrupted (Ctrl-C); 141: the output pipe closed early (``| head``).

Imports stay light: what a command needs is imported when it runs, so ``feedsync run``
from cron with nothing new never loads trafilatura or rich.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from feedsync import __version__
from feedsync import config as config_module

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.records import FeedHealth, NewsItem, StagedEntry, StorageStatus
    from feedsync.storage import Storage

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_STORAGE = 3
EXIT_REFUSED = 4
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for cat | head


class UsageError(Exception):
    """A bad argument; printed as one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage dump: cron mails and scripts read this.
        self.exit(EXIT_USAGE, f"feedsync: error: {message} (see 'feedsync --help')\n")


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def _since(text: str) -> str:
    """A duration back from now ("24h") or a date ("2026-11-01"): a stored timestamp."""
    from datetime import UTC, datetime

    from feedsync import timestamps
    from feedsync.config import parse_duration

    try:
        return timestamps.to_iso(timestamps.now() - parse_duration(text))
    except ValueError:
        pass
    try:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'expected a duration like "24h" or a date like "2026-11-01", got {text!r}'
        ) from None
    return timestamps.to_iso(day)


def _global_options(parser: argparse.ArgumentParser, *, main: bool) -> None:
    """``--config`` and ``--debug``, on the main parser and on every command's, so that
    ``feedsync status --config X`` works as ``feedsync --config X status`` does. On a
    command's parser they default to SUPPRESS: given there, they set the value; not given,
    they leave the main parser's alone."""
    default: dict[str, Any] = {} if main else {"default": argparse.SUPPRESS}
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="config file (default: $FEEDSYNC_CONFIG, "
        "/etc/feedsync/feedsync.toml, ~/.config/feedsync/feedsync.toml)",
        **default,
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show tracebacks of internal errors, and every failed article of a run",
        **default,
    )


# news --state: the user's names of news_summary.state (records.STATE_NAMES)
ENTRY_STATES = {"pending": "new", "failed": "failed", "given-up": "gone"}

SEARCH_SYNTAX = """\
query syntax:
  harbour ferry       articles with both words (a word also finds the words it
                      starts: "harb" finds "harbour"; case and accents do not matter)
  ferry OR bridge     either word (OR binds tighter than the space between words:
                      "storm ferry OR bridge" is storm, and ferry or bridge)
  "winter storm"      the words one after the other
  -plumber, NOT word  articles without it (a query needs one word to find)
  harb*               the same as harb: a word always finds the words it starts
AND, OR and NOT are operators in capitals only: "and", "or", "not" are words.
Japanese, Chinese and Korean words are found inside longer runs of text."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="feedsync",
        description="Poll RSS/Atom feeds and keep every news article exactly once, "
        "with its full text. --config and --debug may also follow the command's name.",
    )
    _global_options(parser, main=True)
    parser.add_argument("--version", action="version", version=f"feedsync {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    def command(name: str, summary: str, description: str | None = None, **kw: Any) -> Any:
        """A command: its line in ``feedsync --help``, and a description for its own
        ``--help`` (the summary, and more where there is more to say)."""
        sub = commands.add_parser(
            name,
            help=summary,
            description=description or summary[0].upper() + summary[1:],
            **kw,
        )
        _global_options(sub, main=False)
        return sub

    run = command(
        "run",
        "poll every feed once, extract what is new, exit",
        "Poll every feed once (or only the due ones), fetch and extract the new articles, "
        "save to the card database, exit. Safe beside the daemon and other runs.",
    )
    run.add_argument("--json", action="store_true", help="print the pass's counters as JSON")
    run.add_argument(
        "-q", "--quiet", action="store_true", help="print problems only, no summary line"
    )
    run.add_argument(
        "--due",
        action="store_true",
        help="poll only the feeds whose next poll time has come (for cron)",
    )
    command(
        "daemon",
        "run as a service: poll on schedule, snapshot, retention (systemd)",
        "Run until stopped (SIGTERM): poll each feed when it is due, extract the new "
        "articles, save to the card database every snapshot_interval and at the stop, "
        "prune daily. For systemd (Type=notify, watchdog) or a terminal.",
    )

    add = command(
        "add",
        "add a feed (or the feed a web page names) and poll it once",
        "Add the feed at URL, or the feed a web page at URL names, and poll it once: its "
        "entries are staged, their articles come with the next run or daemon tick.",
    )
    add.add_argument("url", help="the feed's URL, or a web page's that names its feed")
    add.add_argument(
        "--category",
        metavar="PATH",
        help='a folder for it, e.g. "News/World" (a "/" with a space beside it, as in '
        '"UI / UX", is part of a name; "\\/" also)',
    )
    remove = command(
        "remove",
        "remove a feed (its articles are kept)",
        "Remove a feed, named by its URL or by the id 'feedsync feeds' shows; its articles "
        "are kept. A feed of the config file is removed by deleting it there.",
    )
    remove.add_argument("feed", metavar="URL|ID", help="the feed's URL, or its id in 'feeds'")
    feeds = command("feeds", "list the feeds and their health")
    feeds.add_argument("--failing", action="store_true", help="only the feeds in trouble")
    feeds.add_argument("--json", action="store_true", help="print them as JSON")

    status = command("status", "is it working? daemon, feeds, queue, data")
    status.add_argument("--json", action="store_true", help="print it as JSON")

    news = command(
        "news",
        "the newest articles; --state: those pending, failed or given up, and why",
        "The newest articles. With --state, the entries whose article is not there: "
        "pending (not fetched yet), failed (tried again later) or given-up, each with "
        "its reason, attempts and next try.",
    )
    news.add_argument(
        "--since",
        type=_since,
        default=None,
        metavar="WHEN",
        help='"24h", "7d" or a date "2026-11-01" (default: all)',
    )
    news.add_argument("--feed", metavar="URL|ID", help="only from this feed (its URL or id)")
    news.add_argument("--limit", type=_count, default=20, metavar="N", help="at most N (20)")
    news.add_argument(
        "--state",
        choices=("extracted", *ENTRY_STATES),
        default="extracted",
        help="extracted: the articles (default); pending, failed, given-up: the entries "
        "whose article is not there, and why",
    )
    news.add_argument("--json", action="store_true", help="print them as JSON")
    show = command(
        "show",
        "one article: its details and its text",
        "One article, by its id or URL: its details and its text (through $PAGER, or "
        "less, on a terminal). The URL of an entry whose article is not there (pending, "
        "failed, given up): where it stands, attempts, last error, next try, its feeds.",
    )
    show.add_argument("article", metavar="ID|URL", help="its id (news, search) or its URL")
    show.add_argument("--json", action="store_true", help="print it as JSON")
    search = command(
        "search",
        "full-text search of titles and texts",
        "Full-text search of titles and texts, best first, the matches marked.",
        epilog=SEARCH_SYNTAX,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    search.add_argument("query", nargs="+", help="words to find (see the syntax below)")
    search.add_argument("--limit", type=_count, default=20, metavar="N", help="at most N (20)")
    search.add_argument("--json", action="store_true", help="print the hits as JSON")
    export = command(
        "export",
        "every article, as JSON lines or CSV",
        "Every article, oldest first, as JSON lines or CSV with a header row (the fields: "
        "README, 'feedsync export').",
    )
    export.add_argument(
        "--since",
        type=_since,
        default=None,
        metavar="WHEN",
        help='"24h", "7d" or a date "2026-11-01" (default: all)',
    )
    export.add_argument(
        "--format",
        choices=("jsonl", "csv"),
        default="jsonl",
        help="jsonl: one JSON object per line (default); csv: a header row, then one "
        "row per article",
    )
    export.add_argument("--output", metavar="FILE", type=Path, help="write here (default: stdout)")
    import_opml = command(
        "import-opml",
        "add the feeds of an OPML file",
        "Add the feeds of an OPML subscription list (folders become categories); every "
        "outline not imported is listed with its reason.",
    )
    import_opml.add_argument("file", type=Path, help="the OPML file")
    export_opml = command(
        "export-opml",
        "the feeds as an OPML file",
        "The feeds as an OPML subscription list, categories as folders.",
    )
    export_opml.add_argument(
        "--output", metavar="FILE", type=Path, help="write here (default: stdout)"
    )
    snapshot = command("snapshot", "save to the card database now what changed in the live one")
    snapshot.add_argument(
        "--force",
        action="store_true",
        help="save even when unchanged; set aside a card database of another database "
        "(or start one anew when it is missing)",
    )
    restore = command(
        "restore",
        "build the live database again from the card database",
        "Build the live database again from the card database. Refused (exit 4) while "
        "the live database holds changes the card lacks, or is another database.",
    )
    restore.add_argument(
        "--force",
        action="store_true",
        help="replace a live database that is newer (it is kept aside)",
    )

    migrate = command("migrate", "copy the SQLite database into PostgreSQL (resumable, idempotent)")
    migrate.add_argument(
        "--to", required=True, metavar="URL", help='the target, "postgresql://user@host/db"'
    )
    migrate.add_argument(
        "--from",
        dest="source",
        metavar="FILE",
        type=Path,
        help="an SQLite card database, or a copy of one (default: the card database, "
        "after saving the live database to it)",
    )

    demo = command(
        "demo",
        "ingest bundled sample feeds from a local server into a throwaway database",
        "Serve the bundled sample feeds on a loopback port, run two real passes into a "
        "throwaway database, and say what happened. No network needed.",
    )
    demo.add_argument(
        "--keep",
        metavar="DIR",
        type=Path,
        help="write the demo database into DIR and keep it (with a config to read it by)",
    )
    return parser


def _dashed_words_as_query(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``feedsync search -plumber``: words of a search that begin with "-" (an excluded
    word) are query words, not options argparse does not know. Every other word of the
    command line is left as it is. The mark put on them (``\\0``) is taken off after
    parsing (:func:`_unmark`)."""
    position = _command_position(argv)
    if position is None or argv[position] != "search":
        return argv
    known: set[str] = set()
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        choices = getattr(action, "choices", None) or {}
        if "search" in choices:
            known = set(choices["search"]._option_string_actions)
    words = argv[: position + 1]
    for word in argv[position + 1 :]:
        if word == "--" or not word.startswith("-") or len(word) == 1:
            words.append(word)
        elif word.startswith("--") and any(k.startswith(word.split("=")[0]) for k in known):
            words.append(word)  # an option, or an abbreviation of one (argparse's)
        elif word in known:
            words.append(word)
        else:
            words.append("\0" + word)
    return words


def _command_position(argv: list[str]) -> int | None:
    """Where the command's name is in ``argv`` (after the main parser's options)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--config":
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return i
    return None


def _unmark(args: argparse.Namespace) -> None:
    if isinstance(getattr(args, "query", None), list):
        args.query = [w[1:] if w.startswith("\0") else w for w in args.query]


def _not_utf8(args: argparse.Namespace) -> str | None:
    """What is wrong with the first text argument that is not valid UTF-8, or None.

    Python hands such bytes over as lone surrogates (PEP 383), which no database or
    output stream takes: ``feedsync search`` ended in an internal error. Refused, not
    searched for in part: stored text is all valid Unicode, so those bytes match nothing,
    and a search for what is left ("caf" of a Latin-1 "café") would answer a question not
    asked. The likely cause is a terminal or script not in UTF-8, which the message names.
    File names (``--config``, ``--output``...) may be any bytes and are not checked.
    """
    for name, value in vars(args).items():
        texts = value if isinstance(value, list) else [value]
        if name == "config" or not all(isinstance(t, str) for t in texts):
            continue
        text = " ".join(texts)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            what = "the search query" if name == "query" else f"the {name} argument"
            raw = os.fsencode(text)
            return f"{what} is not valid UTF-8 ({raw!r}): is the terminal or script in UTF-8?"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(_dashed_words_as_query(parser, words))
    _unmark(args)
    problem = _not_utf8(args)
    if problem is not None:
        parser.error(problem)
    from feedsync.config import ConfigError
    from feedsync.storage import StorageError
    from feedsync.storage.card import SnapshotRefused

    try:
        return _dispatch(args)
    except (UsageError, ConfigError) as exc:
        kind = "config error" if isinstance(exc, ConfigError) else "error"
        print(f"feedsync: {kind}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SnapshotRefused as exc:  # not a failure: the state forbids it without --force
        print(f"feedsync: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except StorageError as exc:
        print(f"feedsync: storage error: {exc}", file=sys.stderr)
        return EXIT_STORAGE
    except KeyboardInterrupt:
        print("feedsync: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`feedsync feeds | head`): stop quietly, as cat would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        from feedsync.terminal import clean

        reason = clean(f"{type(exc).__name__}: {exc}".splitlines()[0], one_line=True)
        print(
            f"feedsync: internal error: {reason} (run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from feedsync.demo import run_demo

        return run_demo(sys.stdout, keep=args.keep)

    config = config_module.load(args.config)
    handler = {
        "run": cmd_run,
        "add": cmd_add,
        "remove": cmd_remove,
        "feeds": cmd_feeds,
        "status": cmd_status,
        "snapshot": cmd_snapshot,
        "restore": cmd_restore,
        "daemon": cmd_daemon,
        "news": cmd_news,
        "show": cmd_show,
        "search": cmd_search,
        "export": cmd_export,
        "import-opml": cmd_import_opml,
        "export-opml": cmd_export_opml,
        "migrate": cmd_migrate,
    }
    return handler[args.command](args, config)


# ---------------------------------------------------------------- commands


def _notice(message: str) -> None:
    print(f"feedsync: {message}", file=sys.stderr, flush=True)


def _open(config: Config, *, new_card: bool = False, saving: bool = False) -> Storage:
    """Open the database and bring the config file's feeds into it. A read-only card is
    said here, unless the command is a save (``saving``), whose error says it."""
    from feedsync import storage as storage_module
    from feedsync import timestamps

    feeds = config_module.feed_identities(config)
    storage = storage_module.open_storage(
        config.storage, notice=_notice, keep=storage_module.Keep.of(config), new_card=new_card
    )
    try:
        storage.sync_config_feeds(feeds, timestamps.to_iso(timestamps.now()))
        if config.storage.url is None and not saving:
            # reads work on a read-only card, and the user hears at once that nothing
            # they do is kept; a command that must save exits 3 later
            read_only = storage.status().card_read_only
            if read_only is not None:
                _notice(read_only)
    except BaseException:
        storage.close()
        raise
    return storage


def _write_metrics(config: Config, storage: Storage) -> None:
    """The metrics file ([metrics] textfile), after a pass or a save; a failure to
    write it is one line, and the command's exit code stays what its work says."""
    if config.metrics.textfile is not None:
        from feedsync import metrics

        metrics.update(config, storage, lambda message: _notice(f"warning: {message}"))


def cmd_run(args: argparse.Namespace, config: Config) -> int:
    import signal
    import threading

    from feedsync import progress
    from feedsync.pipeline import run_pass

    # SIGTERM (a timeout, a shutdown) and Ctrl-C: stop taking new work, let the open
    # transaction finish, give back the rows this run holds, print the summary.
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    storage = _open(config)
    try:
        if not storage.feeds_to_poll() and not (args.quiet or args.json):
            where = config.source or "a config file"
            print(
                "feedsync: no feeds to poll: add one with 'feedsync add URL' or a [[feeds]] "
                f"entry in {where}; 'feedsync demo' shows a run on sample feeds",
                file=sys.stderr,
            )
        stats = run_pass(
            config,
            storage,
            progress.choose(args.json, args.quiet, debug=args.debug),
            due_only=args.due,
            stop=stop,
        )
    finally:
        _write_metrics(config, storage)
        storage.close()
    if stats.stopped:
        print("feedsync: stopped early by a signal; the next run carries on", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def cmd_daemon(args: argparse.Namespace, config: Config) -> int:
    from feedsync.daemon import run_daemon

    return run_daemon(config, args.config, debug=args.debug)


def _user_feed_url(url: str) -> str:
    from feedsync.canonical import canonical_url

    canonical = canonical_url(url)
    if canonical is None:
        raise UsageError(f"not an http:// or https:// URL: {url!r}")
    return canonical


def cmd_add(args: argparse.Namespace, config: Config) -> int:
    """Add the feed at URL, or the feed the page at URL names, then poll it once (its
    entries staged; their articles come with the next run or daemon tick)."""
    import asyncio

    from feedsync import progress, terminal, timestamps
    from feedsync.discover import NoFeed, find_feed
    from feedsync.pipeline import Pass

    url = _user_feed_url(args.url)
    try:
        found = asyncio.run(
            find_feed(
                url,
                deadline=config.poll.timeout.total_seconds(),
                max_bytes=config.poll.max_feed_bytes,
                agent=config.fetch.user_agent,
            )
        )
    except NoFeed as exc:
        raise UsageError(str(exc)) from None
    storage = _open(config)
    try:
        added = storage.add_feed(found.url, timestamps.to_iso(timestamps.now()), args.category)
        if not added:
            print(f"already there: {found.url}")
            return EXIT_OK
        feed_id = storage.feed_id(found.url)
        assert feed_id is not None
        stats = Pass(
            config, storage, progress.PlainProgress(summary=False), only={feed_id}, extract=False
        ).run()
    finally:
        storage.close()
    via = "" if found.url == url else f" (found through {url})"
    title = terminal.clean(found.title or terminal.NO_TITLE, one_line=True)
    print(
        f"added {found.url}{via}: {title}, {terminal.plural(stats.staged, 'entry')} staged;"
        " their articles come with the next run"
    )
    return EXIT_OK


def _feed_ref(storage: Storage, ref: str) -> tuple[int, str]:
    """The feed a user names, by the id ``feedsync feeds`` shows or by its URL (any
    spelling of it): its id and URL. Every command that names a feed takes both."""
    from feedsync.canonical import canonical_url

    if ref.isdigit():
        found = next((f for f in storage.feed_health() if f.id == int(ref)), None)
        if found is None:
            raise UsageError(f"no such feed: {ref} (see 'feedsync feeds' for the ids)")
        return found.id, found.url
    url = canonical_url(ref)
    if url is None:
        raise UsageError(f"not a feed's id or an http:// or https:// URL: {ref!r}")
    feed_id = storage.feed_id(url)
    if feed_id is None:
        raise UsageError(f"no such feed: {url} (see 'feedsync feeds')")
    return feed_id, url


def cmd_remove(args: argparse.Namespace, config: Config) -> int:
    storage = _open(config)
    try:
        _, url = _feed_ref(storage, args.feed)
        if url in config_module.feed_urls(config):
            raise UsageError(
                f"{url} is listed in {config.source}: delete it there "
                "(feedsync then stops polling it)"
            )
        removed = storage.remove_feed(url)
    finally:
        storage.close()
    if not removed:
        raise UsageError(f"no such feed: {url} (see 'feedsync feeds')")
    print(f"removed {url} (its articles are kept)")
    return EXIT_OK


def feed_health_line(feed: FeedHealth, failing_after: int) -> str:
    """ok / not polled yet / retrying / FAILING / DISABLED, with the reason; a feed
    that polls fine while none of its articles arrives is not "ok": ARTICLES FAILING."""
    if not feed.enabled:
        return f"DISABLED: {feed.disabled_reason}"
    if feed.error_count >= failing_after:
        return f"FAILING ({feed.error_count} in a row): {feed.last_error}"
    if feed.error_count:
        return f"retrying ({feed.error_count} failed in a row): {feed.last_error}"
    if feed.articles_in_trouble:
        return "ARTICLES FAILING: " + (articles_line(feed) or "")
    if feed.last_poll_at is None:
        return "not polled yet"
    return "ok"


def articles_line(feed: FeedHealth) -> str | None:
    """ "20 failing; this week none extracted: cannot resolve 10e.org", "this week 2
    given up, 14 extracted: ..."; None when none of its articles fails."""
    if not (feed.articles_failing or feed.articles_given_up_week):
        return None
    week = [f"{feed.articles_given_up_week} given up"] if feed.articles_given_up_week else []
    week.append(f"{feed.articles_extracted_week or 'none'} extracted")
    line = f"this week {', '.join(week)}"
    if feed.articles_failing:
        line = f"{feed.articles_failing} failing; {line}"
    if feed.articles_last_error:
        line += f": {feed.articles_last_error}"
    return line


def _is_failing(feed: FeedHealth, failing_after: int) -> bool:
    return not feed.enabled or feed.error_count >= failing_after or feed.articles_in_trouble


def cmd_feeds(args: argparse.Namespace, config: Config) -> int:
    import json
    from dataclasses import asdict
    from datetime import timedelta

    from feedsync import terminal as t
    from feedsync import timestamps

    storage = _open(config)
    try:
        feeds = storage.feed_health(week_ago=timestamps.to_iso(timestamps.now() - timedelta(7)))
    finally:
        storage.close()
    failing_after = config.poll.failing_after
    if args.failing:
        feeds = [f for f in feeds if _is_failing(f, failing_after)]
    if args.json:
        print(
            json.dumps(
                [
                    {
                        **asdict(f),
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


def cmd_status(args: argparse.Namespace, config: Config) -> int:
    import json

    from feedsync import status
    from feedsync import terminal as t
    from feedsync.records import StorageStatus

    storage = _open(config)
    try:
        report = status.report(config, storage)
    finally:
        storage.close()
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return EXIT_OK
    where = StorageStatus(**report["storage"])
    daemon = status.DaemonState(**report["daemon"])
    feeds, queue, articles = report["feeds"], report["queue"], report["articles"]
    room = t.width()
    if daemon.running:
        state = t.paint("running", "green") + (
            f" (pid {daemon.pid} on {daemon.host}, since {t.short_time(daemon.since)})"
        )
    elif daemon.last_seen:
        state = t.paint("not running", "yellow") + (
            f" (last seen {t.short_time(daemon.last_seen)})"
        )
    else:
        state = "not running (never started here; `feedsync run` works without it)"
    lines = [
        f"feedsync {__version__}",
        f"daemon     {state}",
        f"feeds      {feeds['total']}: {feeds['healthy']} ok, {feeds['retrying']} retrying, "
        f"{feeds['failing']} failing, {feeds['disabled']} disabled",
        f"queue      {queue['new']} new, {queue['failed_waiting']} failed (waiting to "
        f"retry), {queue['gone']} given up",
    ]
    # the counts alone send the owner hunting: name the listing that says which and why
    troubled = [
        name for name, n in (("failed", queue["failed_waiting"]), ("given-up", queue["gone"])) if n
    ]
    if troubled:  # commands as typed: "failed|given-up" would be a pipe in a shell
        lines.append(
            "           which, and why: feedsync news "
            + ", or ".join(f"--state {name}" for name in troubled)
        )
    lines += [
        f"articles   {articles['today']} today, {articles['total']} in all",
        f"next poll  {t.short_time(report['next_poll_at'], 'none scheduled')}",
    ]
    if where.engine == "postgresql":  # a server and a database, never a password
        lines += [
            f"database   {t.cut_middle(where.live, room - 24)} ({t.size(where.live_bytes)})",
            "snapshot   none: a PostgreSQL database is backed up with pg_dump",
        ]
    else:
        lines += _storage_lines(where, room)
    for line in lines:
        print(line)
    return EXIT_OK


def _storage_lines(where: StorageStatus, room: int) -> list[str]:
    """The SQLite part of ``feedsync status``: the live database against its RAM budget,
    the card database, what is not saved yet, and whatever is nearly full."""
    from feedsync import terminal as t

    assert where.snapshot is not None
    unsaved = where.unsaved_changes or 0
    changes = t.plural(unsaved, "change")
    if where.snapshot_at is None:  # never saved: nothing is "since" anything
        saved = "never, " + (f"{changes} not on the card yet" if unsaved else "nothing to save yet")
    else:
        saved = f"{t.short_time(where.snapshot_at)}, " + (
            f"{changes} since, not on the card yet"
            if unsaved
            else "nothing since: the card is current"
        )
    ram = (
        f" ({t.size(where.live_bytes)} of {t.size(where.ram_budget or 0)}, "
        f"{t.size(where.ram_disk_free or 0)} free)"
    )
    card = f" ({t.size(where.snapshot_bytes)}, {t.size(where.card_disk_free or 0)} free)"
    lines = [
        f"live       {t.cut_middle(where.live, room - 11 - len(ram))}{ram}",
        f"card       {t.cut_middle(where.snapshot, room - 11 - len(card))}{card}",
        f"saved      {saved}",
    ]
    if where.card_behind:  # the notes said "saved"; the card says otherwise
        lines.append(
            t.paint("CARD BEHIND", "red")
            + " "
            + t.cut(f"{where.card_behind}: the next save fills it", room - 12)
        )
    for problem in where.nearly_full:
        lines.append(t.paint("NEARLY FULL", "red") + f" {problem}")
    if where.not_taking:
        lines.append(t.paint("NOT TAKING", "red") + f" new entries: {where.not_taking}")
    if where.card_read_only:
        lines.append(t.paint("READ-ONLY", "red") + f" {where.card_read_only}")
    return lines


def _article_ref(storage: Storage, ref: str) -> NewsItem:
    from feedsync.canonical import canonical_url

    item = storage.news_get(int(ref)) if ref.isdigit() else None
    if item is None and not ref.isdigit():
        url = canonical_url(ref)
        item = storage.news_get(url) if url else None
    if item is None:
        raise UsageError(f"no article {ref!r} (see 'feedsync news' or 'feedsync search')")
    return item


def cmd_news(args: argparse.Namespace, config: Config) -> int:
    import json
    from dataclasses import asdict

    from feedsync import terminal as t

    storage = _open(config)
    try:
        feed_id = _feed_ref(storage, args.feed)[0] if args.feed else None
        if args.state != "extracted":
            entries = storage.entries_in_state(
                ENTRY_STATES[args.state], args.since or "", feed_id, args.limit
            )
        else:
            items = storage.news_list(args.since or "", feed_id, args.limit)
            others = "" if items or args.json else _not_there(storage, args.since, feed_id)
    finally:
        storage.close()
    if args.state != "extracted":
        return _print_entries(args, config, entries)
    if args.json:
        print(
            json.dumps(
                [{k: v for k, v in asdict(i).items() if k != "body"} for i in items],
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
        print(t.paint(t.cut_middle(f"      {item.feed_title or '-'} · {item.url}", room), "dim"))
    return EXIT_OK


def _not_there(storage: Storage, since: str | None, feed_id: int | None) -> str:
    """Where ``news`` found no article: the entries whose article is not there, so "no
    articles yet" never hides 20 failing ones (", but 20 failed: 'feedsync news --state
    failed'")."""
    found = []
    for name, state in ENTRY_STATES.items():
        count = len(storage.entries_in_state(state, since or "", feed_id, 100))
        if count:
            found.append((f"{count if count < 100 else '100+'} {name}", name))
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


def entry_state_line(entry: StagedEntry, max_attempts: int) -> str:
    """Where an article that is not there stands: "failed 3 times (of 5), next try
    2026-11-23 14:05Z", "given up after 5 attempts", "not fetched yet"."""
    from feedsync import terminal as t

    if entry.state == "gone":
        return f"given up after {t.plural(entry.attempts, 'attempt')}: not tried again"
    if entry.state == "failed":
        return (
            f"failed {t.plural(entry.attempts, 'time')} (of {max_attempts}), next try "
            f"{t.short_time(entry.next_attempt_at, 'with the next run')}"
        )
    return "not fetched yet: with the next run or daemon tick"


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
        print(t.paint(t.cut_middle(f"      {feed} · {entry.url}", room), "dim"))
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
    from dataclasses import asdict

    from feedsync import terminal as t
    from feedsync.canonical import canonical_url

    storage = _open(config)
    try:
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
    finally:
        storage.close()
    if args.json:
        data = {
            **asdict(item),
            "feeds": [{"id": i, "url": u, "title": ti} for i, u, ti in feeds],
            "revisions": [asdict(r) for r in revisions],
            "duplicates": [asdict(d) for d in duplicates],
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
    from dataclasses import asdict

    from feedsync import terminal as t
    from feedsync.search import QueryError, parse

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
    storage = _open(config)
    try:
        hits = storage.search(query, args.limit, marks)
    finally:
        storage.close()
    if args.json:
        print(json.dumps([asdict(h) for h in hits], ensure_ascii=False))
        return EXIT_OK
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
    from dataclasses import astuple

    storage = _open(config)
    try:
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(_atomic_text(args.output)) if args.output else sys.stdout
            count = 0
            if args.format == "csv":
                writer = csv.writer(out)
                writer.writerow(EXPORT_FIELDS)
                for item in storage.export_news(args.since or ""):
                    writer.writerow(astuple(item))
                    count += 1
            else:
                for item in storage.export_news(args.since or ""):
                    out.write(
                        json.dumps(
                            dict(zip(EXPORT_FIELDS, astuple(item), strict=True)), ensure_ascii=False
                        )
                        + "\n"
                    )
                    count += 1
    finally:
        storage.close()
    if args.output:
        from feedsync.terminal import plural

        print(f"exported {plural(count, 'article')} to {args.output}", file=sys.stderr)
    return EXIT_OK


def _atomic_text(path: Path) -> Any:
    """Write to a temporary file beside ``path``, renamed over it at the end: a failed
    export never leaves half a file under the name asked for.

    The file gets the mode any file the user makes gets (0644 under umask 022), or the
    mode of the file it replaces: ``mkstemp`` makes its temporary 0600, which suits the
    databases and the config, not an export the user asked for to share or publish."""
    import contextlib
    import os
    import tempfile

    @contextlib.contextmanager
    def writer() -> Iterator[Any]:
        folder = path.resolve().parent
        if not folder.is_dir():
            raise UsageError(f"cannot write {path}: {folder} is not a folder")
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        try:
            os.fchmod(fd, _mode_for(path))
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                yield handle
            Path(temporary).replace(path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    return writer()


def _mode_for(path: Path) -> int:
    """The mode of the file at ``path``, or what the umask gives a new one."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


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
    storage = _open(config)
    try:
        now = timestamps.to_iso(timestamps.now())
        added: list[opml.OpmlFeed] = []
        present: list[opml.OpmlFeed] = []
        for feed in found.feeds:
            new = storage.add_feed(feed.url, now, feed.category, feed.title)
            (added if new else present).append(feed)
    finally:
        storage.close()
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
        print(f"    {where}{terminal.clean(skipped.what, one_line=True)}: {skipped.reason}")
    if added:
        print("their entries come with the next run (or the daemon's next tick)")
    return EXIT_OK


def cmd_export_opml(args: argparse.Namespace, config: Config) -> int:
    from feedsync import opml

    storage = _open(config)
    try:
        feeds = storage.feed_health()
    finally:
        storage.close()
    text = opml.write(feeds)
    if args.output:
        with _atomic_text(args.output) as out:
            out.write(text)
        from feedsync.terminal import plural

        print(f"exported {plural(len(feeds), 'feed')} to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_snapshot(args: argparse.Namespace, config: Config) -> int:
    from feedsync import terminal
    from feedsync.storage import SNAPSHOTS_DO_NOT_APPLY

    if config.storage.url is not None:
        raise UsageError(SNAPSHOTS_DO_NOT_APPLY)
    storage = _open(config, new_card=args.force, saving=True)
    try:
        result = storage.snapshot(force=args.force)
    finally:
        _write_metrics(config, storage)
        storage.close()
    assert result is not None
    if result.written:
        print(
            f"snapshot written: {result.path} ({terminal.size(result.size)}, {result.seconds:.1f}s)"
        )
    else:
        print(f"{result.detail} ({terminal.short_time(result.taken_at)}): nothing written")
    return EXIT_OK


def cmd_migrate(args: argparse.Namespace, config: Config) -> int:
    """Copy the SQLite card database (everything) into PostgreSQL; the user then sets
    [storage] url. Progress bars on a terminal; the row counts of both sides at the end."""
    import contextlib

    from feedsync import migrate
    from feedsync.config import database_url
    from feedsync.storage import StorageError

    try:
        url = database_url(args.to)
    except ValueError as exc:
        raise UsageError(f"--to: {exc}") from None
    source = args.source
    if source is None:
        if config.storage.url is not None:
            raise UsageError("no SQLite database to copy: name one with --from FILE")
        # everything to the card first: that is the database copied
        storage = _open(config)
        try:
            storage.snapshot()
        finally:
            storage.close()
        source = config.storage.card_path
    with contextlib.ExitStack() as stack:
        progress = (
            stack.enter_context(migrate.TerminalBar())
            if sys.stderr.isatty()
            else (lambda table, done, total: None)
        )
        result = migrate.migrate(source, url, progress=progress)
    migrate.report(result)
    if not result.equal:
        raise StorageError("the row counts differ (above): run feedsync migrate again")
    from feedsync.storage.postgresql import display_url

    print(
        f"copied {source} into {display_url(url)} in {result.seconds:.1f}s; now set "
        f"[storage] url to that URL in {config.source or 'the config file'} and remove db "
        "and snapshot (a password belongs in ~/.pgpass or PGPASSWORD)"
    )
    return EXIT_OK


def cmd_restore(args: argparse.Namespace, config: Config) -> int:
    from feedsync import storage as storage_module

    if config.storage.url is not None:
        raise UsageError(storage_module.SNAPSHOTS_DO_NOT_APPLY)
    source = storage_module.restore_snapshot(
        config.storage, args.force, _notice, storage_module.Keep.of(config)
    )
    print(f"restored {config.storage.live_path} from {source}")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
