"""What a pass tells the person (or cron) that started it.

On a terminal: live progress bars (rich, imported only then) for feeds polled, entries
staged and articles extracted, problems printed above them. Without a terminal (cron):
problems on stderr as they happen, one summary line on stdout at the end, nothing else.
``--json``: the counters as one JSON object on stdout. ``--quiet``: problems only.

Failed articles are grouped: a first run with 109 unreachable articles printed 109
lines, which said one thing. At the end of the pass, one line per host and reason
(``10e.org: cannot connect: ... (30 articles; next try 2026-11-23 13:05Z)``; a group of
one names its article), and where to find them one by one (``feedsync news --state
failed``). ``--debug`` prints every one as it happens as well; ``run --json`` keeps
every one in ``errors``; the daemon logs every one at debug level with its URL.
Feed failures stay one line per feed, as they happen.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol, TextIO
from urllib.parse import urlsplit

from feedsync import logs, terminal
from feedsync.records import FailureOutcome, RunStats


class Progress(Protocol):
    def start_feeds(self, total: int) -> None: ...
    def feed_done(self, staged: int) -> None: ...
    def working(self) -> None:
        """A long step under way and bounded (a big document's parse): progress still."""

    def start_articles(self) -> None: ...
    def articles_claimed(self, count: int) -> None: ...
    def article_done(self) -> None: ...
    def problem(self, message: str, url: str | None = None) -> None: ...
    def article_failed(self, url: str, error: str, outcome: FailureOutcome) -> None: ...
    def finish(self, stats: RunStats, seconds: float) -> None: ...


def article_line(url: str, error: str, outcome: FailureOutcome) -> str:
    """One failed article, as ``--debug`` prints it and a group of one says it."""
    if outcome.state == "gone":
        return f"article {url}: {error} (attempt {outcome.attempts}, given up)"
    when = terminal.short_time(outcome.next_attempt_at, "with the next run")
    return f"article {url}: {error} (attempt {outcome.attempts}, next try {when})"


# "(not tried: 10e.org:443 could not be reached earlier in this pass)": the same reason
# as the first article's, for the articles after it
_NOT_TRIED = re.compile(r"\s*\(not tried: [^()]* earlier in this pass\)$")


@dataclass
class _Group:
    first: str  # the first article's line (a group of one is said as that)
    articles: int = 0
    given_up: int = 0
    next_try: str | None = None  # the earliest, of those tried again


class ArticleFailures:
    """The failed articles of one pass, by host (and port) and reason."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], _Group] = {}

    def add(self, url: str, error: str, outcome: FailureOutcome) -> None:
        parts = urlsplit(url)
        host = (parts.hostname or "?") + (f":{parts.port}" if parts.port else "")
        reason = _NOT_TRIED.sub("", error)
        group = self._groups.setdefault((host, reason), _Group(article_line(url, error, outcome)))
        group.articles += 1
        if outcome.state == "gone":
            group.given_up += 1
        elif outcome.next_attempt_at and (
            group.next_try is None or outcome.next_attempt_at < group.next_try
        ):
            group.next_try = outcome.next_attempt_at

    def __len__(self) -> int:
        return sum(g.articles for g in self._groups.values())

    def lines(self, singles: bool = True) -> list[str]:
        """One line per host and reason, the biggest groups first; then where the
        whole list is. ``singles``: a group of one as its article's line (False: it was
        printed as it happened, under --debug)."""
        out = []
        ordered = sorted(self._groups.items(), key=lambda kv: (-kv[1].articles, kv[0]))
        for (host, reason), group in ordered:
            if group.articles == 1:
                if singles:
                    out.append(group.first)
                continue
            when = terminal.short_time(group.next_try, "with the next run")
            if group.given_up == group.articles:
                fate = "given up"
            elif group.given_up:
                fate = f"{group.given_up} given up, the others: next try {when}"
            else:
                fate = f"next try {when}"
            out.append(f"{host}: {reason} ({terminal.plural(group.articles, 'article')}; {fate})")
        if self._groups:
            states = (
                "failed|given-up" if any(g.given_up for g in self._groups.values()) else "failed"
            )
            out.append(f"every failed article and why: feedsync news --state {states}")
        return out


def summary_line(stats: RunStats, seconds: float) -> str:
    plural = terminal.plural
    line = (
        f"feedsync: {plural(stats.polled, 'feed')} polled ({stats.not_modified} not modified, "
        f"{stats.feed_errors} failed), {plural(stats.staged, 'new entry')} staged, "
        f"{plural(stats.extracted, 'article')} extracted ({stats.extract_failed} failed, "
        f"{stats.gone} given up) in {seconds:.1f}s"
    )
    # a revision is linked before its page is fetched; a duplicate is found to be one
    # only once its page was fetched and extracted: linked, not stored twice
    if stats.revisions:
        line += f"; {plural(stats.revisions, 'revision')} linked, not fetched twice"
    if stats.duplicates:
        line += f"; {plural(stats.duplicates, 'duplicate')} linked, not stored twice"
    if stats.busy or stats.articles_busy:
        held = [
            plural(n, word)
            for n, word in ((stats.busy, "feed"), (stats.articles_busy, "article"))
            if n
        ]
        line += f"; {' and '.join(held)} left to another run working on them"
    if stats.not_taking:
        line += "; new entries put off (no room, see above)"
    if stats.snapshot == "written":
        line += "; snapshot written"
    return line


# Problems that last (no room on the RAM disk or the card): the daemon logs each once
# while it lasts, not at every tick.
ROOM_PROBLEMS = ("not taking new entries", "not saved to the card")


class PlainProgress:
    """For cron and pipes: problems as they happen, one summary line at the end."""

    def __init__(
        self,
        out: TextIO = sys.stdout,
        err: TextIO = sys.stderr,
        summary: bool = True,
        debug: bool = False,
    ):
        self._out, self._err, self._summary = out, err, summary
        self._debug = debug
        self._failures = ArticleFailures()

    def start_feeds(self, total: int) -> None:
        pass

    def working(self) -> None:
        pass

    def feed_done(self, staged: int) -> None:
        pass

    def start_articles(self) -> None:
        pass

    def articles_claimed(self, count: int) -> None:
        pass

    def article_done(self) -> None:
        pass

    def problem(self, message: str, url: str | None = None) -> None:
        print(f"feedsync: {terminal.clean(message, one_line=True)}", file=self._err, flush=True)

    def article_failed(self, url: str, error: str, outcome: FailureOutcome) -> None:
        self._failures.add(url, error, outcome)
        if self._debug:
            self.problem(article_line(url, error, outcome), url)

    def finish(self, stats: RunStats, seconds: float) -> None:
        for line in self._failures.lines(singles=not self._debug):
            self.problem(line)
        if self._summary:
            print(summary_line(stats, seconds), file=self._out, flush=True)


class JsonProgress(PlainProgress):
    """``--json``: problems on stderr, the counters as one JSON object on stdout."""

    def finish(self, stats: RunStats, seconds: float) -> None:
        for line in self._failures.lines(singles=not self._debug):  # all in "errors"
            self.problem(line)
        data: dict[str, Any] = asdict(stats)
        data["seconds"] = round(seconds, 3)
        # a flag to test and the detail to show ("snapshot" keeps the detail, as before)
        data["snapshot_written"] = stats.snapshot == "written"
        data["snapshot_detail"] = stats.snapshot
        print(json.dumps(data), file=self._out, flush=True)


class TerminalProgress:
    """Live bars on a terminal."""

    def __init__(self, debug: bool = False) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._console = Console(stderr=True)
        self._bars = Progress(
            TextColumn("{task.description:<22}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[note]}"),
            console=self._console,
            transient=False,
        )
        self._feeds: Any = None
        self._articles: Any = None
        self._staged = 0
        self._debug = debug
        self._failures = ArticleFailures()

    def start_feeds(self, total: int) -> None:
        self._bars.start()
        self._feeds = self._bars.add_task("polling feeds", total=total, note="")

    def working(self) -> None:
        pass

    def feed_done(self, staged: int) -> None:
        self._staged += staged
        self._bars.update(self._feeds, advance=1, note=f"{self._staged} new entries")

    def start_articles(self) -> None:
        self._articles = self._bars.add_task("extracting articles", total=0, note="")

    def articles_claimed(self, count: int) -> None:
        total = self._bars.tasks[self._articles].total or 0
        self._bars.update(self._articles, total=total + count)

    def article_done(self) -> None:
        self._bars.update(self._articles, advance=1)

    def problem(self, message: str, url: str | None = None) -> None:
        line = terminal.clean(message, one_line=True)
        self._console.print(line, style="yellow", markup=False, highlight=False)

    def article_failed(self, url: str, error: str, outcome: FailureOutcome) -> None:
        """Counted on the bar as they happen; said by host and reason at the end."""
        self._failures.add(url, error, outcome)
        if self._articles is not None:
            self._bars.update(self._articles, note=f"{len(self._failures)} failed")
        if self._debug:
            self.problem(article_line(url, error, outcome), url)

    def finish(self, stats: RunStats, seconds: float) -> None:
        self._bars.stop()
        for line in self._failures.lines(singles=not self._debug):
            self.problem(line)
        print(summary_line(stats, seconds), flush=True)


class LogProgress:
    """For the daemon: problems to the log (with the URL as a journal field), a summary
    line per pass when it did something, and every step of progress feeds the watchdog."""

    def __init__(self, alive: Callable[[], None] = lambda: None, room: set[str] | None = None):
        self._alive = alive
        self._room = room  # room problems already logged (the daemon's, across passes)
        self._failures = ArticleFailures()

    def start_feeds(self, total: int) -> None:
        self._alive()

    def working(self) -> None:
        self._alive()

    def feed_done(self, staged: int) -> None:
        self._alive()

    def start_articles(self) -> None:
        self._alive()

    def articles_claimed(self, count: int) -> None:
        self._alive()

    def article_done(self) -> None:
        self._alive()

    def problem(self, message: str, url: str | None = None) -> None:
        kind = next((k for k in ROOM_PROBLEMS if message.startswith(k)), None)
        if kind is not None and self._room is not None:
            if kind in self._room:
                logs.LOGGER.debug(message)
                return
            self._room.add(kind)
        logs.LOGGER.warning(terminal.clean(message, one_line=True), extra=logs.url_field(url))

    def article_failed(self, url: str, error: str, outcome: FailureOutcome) -> None:
        """Each one at debug level with its URL (``journalctl FEED_URL=...``), grouped
        by host and reason at the end of the pass."""
        self._alive()
        self._failures.add(url, error, outcome)
        line = terminal.clean(article_line(url, error, outcome), one_line=True)
        logs.LOGGER.debug(line, extra=logs.url_field(url))

    def finish(self, stats: RunStats, seconds: float) -> None:
        """A pass that found nothing (every feed 304) is not news: debug level only."""
        self._alive()
        for problem in self._failures.lines():
            logs.LOGGER.warning(terminal.clean(problem, one_line=True))
        line = summary_line(stats, seconds).removeprefix("feedsync: ")
        eventful = stats.staged or stats.extracted or stats.extract_failed or stats.gone
        eventful = eventful or stats.feed_errors
        logs.LOGGER.log(logging.INFO if eventful else logging.DEBUG, line)


def choose(json_output: bool, quiet: bool, debug: bool = False) -> Progress:
    """``debug``: every failed article as it happens, besides the grouped lines."""
    if json_output:
        return JsonProgress(debug=debug)
    if quiet:
        return PlainProgress(summary=False, debug=debug)
    if sys.stderr.isatty() and sys.stdout.isatty():
        return TerminalProgress(debug=debug)
    return PlainProgress(debug=debug)
