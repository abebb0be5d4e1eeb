"""What a pass tells the person (or cron) that started it.

On a terminal: live progress bars (rich, imported only then) for feeds polled, entries
staged and articles extracted, problems printed above them. Without a terminal (cron):
problems on stderr as they happen, one summary line on stdout at the end, nothing else.
``--json``: the counters as one JSON object on stdout. ``--quiet``: problems only.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Protocol, TextIO

from feedsync import logs, terminal
from feedsync.records import RunStats


class Progress(Protocol):
    def start_feeds(self, total: int) -> None: ...
    def feed_done(self, staged: int) -> None: ...
    def start_articles(self) -> None: ...
    def articles_claimed(self, count: int) -> None: ...
    def article_done(self) -> None: ...
    def problem(self, message: str, url: str | None = None) -> None: ...
    def finish(self, stats: RunStats, seconds: float) -> None: ...


def summary_line(stats: RunStats, seconds: float) -> str:
    plural = terminal.plural
    line = (
        f"feedsync: {plural(stats.polled, 'feed')} polled ({stats.not_modified} not modified, "
        f"{stats.feed_errors} failed), {plural(stats.staged, 'new entry')} staged, "
        f"{plural(stats.extracted, 'article')} extracted ({stats.extract_failed} failed, "
        f"{stats.gone} given up) in {seconds:.1f}s"
    )
    if stats.revisions or stats.duplicates:
        line += (
            f"; {plural(stats.revisions, 'revision')} and "
            f"{plural(stats.duplicates, 'duplicate')} linked, not fetched twice"
        )
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

    def __init__(self, out: TextIO = sys.stdout, err: TextIO = sys.stderr, summary: bool = True):
        self._out, self._err, self._summary = out, err, summary

    def start_feeds(self, total: int) -> None:
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

    def finish(self, stats: RunStats, seconds: float) -> None:
        if self._summary:
            print(summary_line(stats, seconds), file=self._out, flush=True)


class JsonProgress(PlainProgress):
    """``--json``: problems on stderr, the counters as one JSON object on stdout."""

    def finish(self, stats: RunStats, seconds: float) -> None:
        data: dict[str, Any] = asdict(stats)
        data["seconds"] = round(seconds, 3)
        # a flag to test and the detail to show ("snapshot" keeps the detail, as before)
        data["snapshot_written"] = stats.snapshot == "written"
        data["snapshot_detail"] = stats.snapshot
        print(json.dumps(data), file=self._out, flush=True)


class TerminalProgress:
    """Live bars on a terminal."""

    def __init__(self) -> None:
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

    def start_feeds(self, total: int) -> None:
        self._bars.start()
        self._feeds = self._bars.add_task("polling feeds", total=total, note="")

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

    def finish(self, stats: RunStats, seconds: float) -> None:
        self._bars.stop()
        print(summary_line(stats, seconds), flush=True)


class LogProgress:
    """For the daemon: problems to the log (with the URL as a journal field), a summary
    line per pass when it did something, and every step of progress feeds the watchdog."""

    def __init__(self, alive: Callable[[], None] = lambda: None, room: set[str] | None = None):
        self._alive = alive
        self._room = room  # room problems already logged (the daemon's, across passes)

    def start_feeds(self, total: int) -> None:
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

    def finish(self, stats: RunStats, seconds: float) -> None:
        """A pass that found nothing (every feed 304) is not news: debug level only."""
        self._alive()
        line = summary_line(stats, seconds).removeprefix("feedsync: ")
        eventful = stats.staged or stats.extracted or stats.extract_failed or stats.gone
        eventful = eventful or stats.feed_errors
        logs.LOGGER.log(logging.INFO if eventful else logging.DEBUG, line)


def choose(json_output: bool, quiet: bool) -> Progress:
    if json_output:
        return JsonProgress()
    if quiet:
        return PlainProgress(summary=False)
    if sys.stderr.isatty() and sys.stdout.isatty():
        return TerminalProgress()
    return PlainProgress()
