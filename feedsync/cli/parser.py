"""The command line's grammar: every command, its options and their help (``feedsync
--help``), and the few rules argparse has no word for (a query word that starts with a
dash, text that is not UTF-8)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from feedsync import __version__

if TYPE_CHECKING:
    pass
from feedsync.cli.common import EXIT_USAGE
from feedsync.config import NO_PROXY_NOTE
from feedsync.health import ENTRY_STATES


class _Parser(argparse.ArgumentParser):
    """argparse's parser, with a one-line error, and what it was built with kept where
    it can be read (argparse keeps it private): ``commands``, each command's parser by
    name, and :meth:`options`, the option strings of each option. The tests hold the
    README's command reference to them (tests/test_output.py)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.recorded: list[argparse.Action] = []  # before argparse adds -h through it
        self.commands: dict[str, _Parser] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.recorded.append(action)
        return action

    def add_mutually_exclusive_group(self, **kwargs: Any) -> Any:
        return _Group(self, super().add_mutually_exclusive_group(**kwargs))

    def options(self) -> list[tuple[str, ...]]:
        """Each option's strings (``("-q", "--quiet")``), in the order added."""
        return [tuple(a.option_strings) for a in self.recorded if a.option_strings]

    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage dump: cron mails and scripts read this.
        self.exit(EXIT_USAGE, f"feedsync: error: {message} (see 'feedsync --help')\n")


def _limit(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number (0: all of them), got {text!r}")
    return int(text)


def _listen(text: str) -> tuple[str, int]:
    from feedsync.values import listen_address

    try:
        return listen_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _limit_options(parser: _Parser, what: str) -> None:
    """``--limit N`` and ``--all`` (the same as ``--limit 0``), the same on every
    command that lists: a list that is cut says so, and how to see it all."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--limit",
        type=_limit,
        default=20,
        metavar="N",
        help=f"at most N {what} (default 20; 0: all of them)",
    )
    group.add_argument(
        "--all", dest="limit", action="store_const", const=0, help=f"every one of the {what}"
    )


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


class _Group:
    """A mutually exclusive group whose options the parser records too."""

    def __init__(self, parser: _Parser, group: Any) -> None:
        self._parser, self._group = parser, group

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action: argparse.Action = self._group.add_argument(*args, **kwargs)
        self._parser.recorded.append(action)
        return action


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
        "~/.config/feedsync/feedsync.toml, /etc/feedsync/feedsync.toml)",
        **default,
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show tracebacks of internal errors, and every failed article of a run",
        **default,
    )


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


def build_parser() -> _Parser:
    parser = _Parser(
        prog="feedsync",
        description="Poll RSS, Atom and JSON feeds and keep every news article exactly once, "
        "with its full text. --config and --debug may also follow the command's name.",
        epilog=NO_PROXY_NOTE,
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
        parser.commands[name] = sub
        return sub

    run = command(
        "run",
        "poll every feed once, extract what is new, exit",
        "Poll every feed once (or only the due ones, or only those named with --feed), "
        "fetch and extract the new articles, save to the card database, exit. Safe "
        "beside the daemon and other runs.",
    )
    run.add_argument("--json", action="store_true", help="print the pass's counters as JSON")
    run.add_argument(
        "-q", "--quiet", action="store_true", help="print problems only, no summary line"
    )
    only = run.add_mutually_exclusive_group()
    only.add_argument(
        "--due",
        action="store_true",
        help="poll only the feeds whose next poll time has come (for cron)",
    )
    only.add_argument(
        "--feed",
        action="append",
        metavar="URL|ID",
        help="poll only this feed (its URL or id in 'feeds'), now, due or not, and "
        "extract its new articles; may be given again for more feeds",
    )
    command(
        "daemon",
        "run as a service: poll on schedule, save, retention (systemd)",
        "Run until stopped (SIGTERM): poll each feed when it is due, extract the new "
        "articles, save to the card database every save_interval and at the stop, "
        "prune daily. For systemd (Type=notify, watchdog) or a terminal.",
    )
    serve = command(
        "serve",
        "serve the articles: full-text feeds (Atom, JSON, OPML) and read-only pages",
        "Serve what feedsync keeps over HTTP, reading only: full-text Atom and JSON "
        "feeds of every feed, category and all of them, an OPML for a reader app, and "
        "read-only pages (news, search, feeds, status). On 127.0.0.1:8470 unless "
        "[serve] listen says otherwise; the LAN needs [serve] lan = true and a token. "
        "Runs until stopped (SIGTERM, Ctrl-C); started by systemd's socket, until idle.",
    )
    serve.add_argument(
        "--listen",
        type=_listen,
        metavar="ADDR",
        help='where to listen, "127.0.0.1:8470" or "[::1]:8470" (port 0: any free one); '
        "default: [serve] listen",
    )

    add = command(
        "add",
        "add a feed (or the feed a web page names) and poll it once",
        "Add the feed at URL, or the feed a web page at URL names, and poll it once: its "
        "entries are staged, their articles come with the next run or daemon tick. A feed "
        "already there is not fetched again.",
    )
    add.add_argument("url", help="the feed's URL, or a web page's that names its feed")
    add.add_argument(
        "--category",
        metavar="PATH",
        help='a folder for it, e.g. "News/World" (a "/" with a space beside it, as in '
        '"UI / UX", is part of a name; "\\/" also)',
    )
    add.add_argument(
        "--title",
        metavar="TEXT",
        help="your name for it, shown instead of the feed's own title",
    )
    add.add_argument(
        "--no-fetch",
        action="store_true",
        help="add it without fetching it (a feed that is down today): URL must be the "
        "feed's own; the next run or daemon tick polls it",
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
    _limit_options(news, "articles (or entries)")
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
    _limit_options(search, "hits")
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
    save = command(
        "save",
        "save to the card database now what changed in the live one",
        "Save to the card database now what changed in the live one. `feedsync snapshot`, "
        "its name before, still works.",
        aliases=["snapshot"],
    )
    save.add_argument(
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


def dashed_words_as_query(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``feedsync search -plumber``: words of a search that begin with "-" (an excluded
    word) are query words, not options argparse does not know. Every other word of the
    command line is left as it is. The mark put on them (``\\0``) is taken off after
    parsing (:func:`unmark`)."""
    position = _command_position(argv)
    if position is None or argv[position] != "search":
        return argv
    search = parser.commands["search"] if isinstance(parser, _Parser) else None
    known = {o for strings in search.options() for o in strings} if search else set()
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


def unmark(args: argparse.Namespace) -> None:
    if isinstance(getattr(args, "query", None), list):
        args.query = [w[1:] if w.startswith("\0") else w for w in args.query]


def not_utf8(args: argparse.Namespace) -> str | None:
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
