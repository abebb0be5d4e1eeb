"""What every scenario shares: sizes, the server, scratch folders, configs, results."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.measure import Summary, summary
from feedsync.localserver import LocalServer

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DRIVERS = BENCH / "drivers"
SHM = Path("/dev/shm")


@dataclass(frozen=True)
class Params:
    """The sizes of one bench run (``--quick`` shrinks all of them)."""

    quick: bool = False
    repeat: int = 5  # runs per side of every measurement
    feeds: int = 200  # N, scenarios 1-2
    entries: int = 50  # M per feed
    articles: int = 100  # K, scenario 3
    concurrency: int = 8  # [poll] concurrency = per_host; reader's update workers
    workers: int | str = "auto"  # [extract] workers: feedsync's default, sized to the machine
    daemons: int = 5  # scenario 4: daemons run side by side, one "run" each
    daemon_feeds: int = 10
    daemon_polls: int = 96  # polls per feed: a day at one poll every 15 minutes
    day_feeds: int = 20  # scenario 5
    day_entries: int = 20
    day_passes: int = 96  # a day of cron runs every 15 minutes
    day_news_every: int = 8  # every 8th pass brings new articles (12 a day)
    day_news: int = 4  # articles per such pass
    scale_small: int = 10_000  # scenario 6: rows in news_summary
    scale_large: int = 1_000_000
    scale_polls: int = 50  # stage() calls timed per run
    startup_repeat: int = 10  # scenario 7 is cheap: more runs
    pg_feeds: int = 2_000  # scenario 8: feeds polled by 1, 2, 4 daemons on PostgreSQL
    pg_entries: int = 10  # entries per feed: polling and staging, not parsing
    latency_feeds: int = 400  # scenario 10: feeds answered after latency_delay, 1/2/4 pollers
    latency_entries: int = 10
    latency_delay: float = 0.2  # s before the feed server answers (a server far away)
    latency_sqlite: bool = False  # also 1/2/4 daemons on SQLite (doubles scenario 10's time)
    year_feeds: int = 100  # scenario 9: a year on a Pi, time-compressed
    year_per_day: int = 1_000  # new articles a simulated day
    year_days: int = 120
    year_early: int = 10  # the week compared: around this day (10,000 articles)...
    year_late: int = 120  # ...against around this one (about 100,000)
    year_ram_budget: str = "50MB"  # half of a 1 GB Pi's /run
    serve_articles: int = 100_000  # scenario 11: the archive feedsync serve reads (year's size)
    serve_days: int = 120
    serve_feeds: int = 100
    serve_requests: int = 30  # timed requests per page, after 3 warm-ups

    @classmethod
    def quick_mode(cls) -> Params:
        return cls(
            quick=True,
            repeat=1,
            feeds=10,
            entries=5,
            articles=5,
            daemons=1,
            daemon_feeds=3,
            daemon_polls=6,
            day_feeds=4,
            day_entries=5,
            day_passes=8,
            day_news_every=4,
            day_news=2,
            scale_small=1_000,
            scale_large=10_000,
            scale_polls=5,
            startup_repeat=2,
            pg_feeds=20,
            pg_entries=5,
            latency_feeds=24,
            latency_entries=5,
            year_feeds=10,
            year_per_day=48,
            year_days=8,
            year_early=2,
            year_late=7,
            serve_articles=1_500,
            serve_days=12,
            serve_feeds=10,
            serve_requests=3,
        )


@dataclass
class Row:
    """One metric of one scenario: feedsync against its baseline, over the runs."""

    metric: str
    unit: str
    feedsync: Summary
    baseline: Summary
    lower_is_better: bool | None = True  # None: 1.0 is the goal (growth, scale)
    digits: int = 2

    @property
    def ratio(self) -> float | None:
        base = self.baseline.median
        return None if base == 0 else self.feedsync.median / base

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "unit": self.unit,
            "feedsync": self.feedsync.as_dict(),
            "baseline": self.baseline.as_dict(),
            "ratio": self.ratio,
            "lower_is_better": self.lower_is_better,
            "digits": self.digits,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        return cls(
            data["metric"],
            data["unit"],
            summary(data["feedsync"]["runs"]),
            summary(data["baseline"]["runs"]),
            data["lower_is_better"],
            data.get("digits", 2),
        )


@dataclass
class Result:
    """A scenario's outcome: its rows, what the baseline was, and facts worth telling."""

    number: int
    title: str
    feedsync: str  # what ran on feedsync's side
    baseline: str  # what ran on the baseline's side
    rows: list[Row] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    date: str = ""  # when measured, if not with the rest of the run (python -m bench --merge)

    def row(
        self,
        metric: str,
        unit: str,
        feedsync: Sequence[float],
        baseline: Sequence[float],
        *,
        lower_is_better: bool | None = True,
        digits: int = 2,
    ) -> Row:
        made = Row(metric, unit, summary(feedsync), summary(baseline), lower_is_better, digits)
        self.rows.append(made)
        return made

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.number,
            "title": self.title,
            "feedsync": self.feedsync,
            "baseline": self.baseline,
            "rows": [r.as_dict() for r in self.rows],
            "details": self.details,
            "notes": self.notes,
            "seconds": round(self.seconds, 1),
            **({"date": self.date} if self.date else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        return cls(
            number=data["scenario"],
            title=data["title"],
            feedsync=data["feedsync"],
            baseline=data["baseline"],
            rows=[Row.from_dict(r) for r in data["rows"]],
            details=data["details"],
            notes=data["notes"],
            seconds=data["seconds"],
            date=data.get("date", ""),
        )


class Bench:
    """The shared state of a bench run: the loopback server, scratch folders, logging."""

    def __init__(self, params: Params, *, keep: bool = False, verbose: bool = True):
        self.params = params
        self.keep = keep
        self.verbose = verbose
        self.python = sys.executable  # feedsync's interpreter (the dev venv)
        # the live databases on tmpfs, as feedsync keeps them; the "SD card" on disk
        self.ram = Path(
            tempfile.mkdtemp(prefix="feedsync-bench-", dir=SHM if SHM.is_dir() else None)
        )
        self.disk = Path(tempfile.mkdtemp(prefix="feedsync-bench-", dir="/var/tmp"))
        self.server = LocalServer().start()
        self._started = time.monotonic()
        self.output: Path | None = None  # where RESULTS.md goes (and the pictures)

    def close(self) -> None:
        self.server.stop()
        if not self.keep:
            shutil.rmtree(self.ram, ignore_errors=True)
            shutil.rmtree(self.disk, ignore_errors=True)

    def log(self, message: str, *, always: bool = False) -> None:
        """Progress on stderr, unless quiet; ``always``: a failure, said even then."""
        if self.verbose or always:
            elapsed = time.monotonic() - self._started
            print(f"[{elapsed:6.0f}s] {message}", file=sys.stderr, flush=True)

    def folder(self, *parts: str, disk: bool = False) -> Path:
        """A new empty folder under the scratch space (tmpfs unless ``disk``)."""
        path = (self.disk if disk else self.ram).joinpath(*parts)
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def feedsync_command(self, config: Path, *args: str) -> list[str]:
        return [self.python, "-m", "feedsync", "--config", str(config), *args]

    def driver(self, name: str, *args: str, python: str | Path | None = None) -> list[str]:
        return [str(python or self.python), str(DRIVERS / name), *args]

    def config(
        self,
        path: Path,
        feeds: Sequence[str],
        *,
        db: Path | None = None,
        card: Path | None = None,
        url: str | None = None,
        **sections: dict[str, Any],
    ) -> Path:
        """A feedsync config file: everything on one loopback host, so no politeness delay,
        per_host = concurrency, [extract] workers as the params say. ``url``: a PostgreSQL
        database instead of the SQLite file ``db``."""
        storage: dict[str, Any] = {"url": url} if url else {"db": str(db)}
        if card is not None:
            storage["card"] = str(card)
        settings: dict[str, dict[str, Any]] = {
            "storage": storage,
            "poll": {"concurrency": self.params.concurrency, "per_host": self.params.concurrency},
            "fetch": {"host_delay": "0s"},
            "extract": {"workers": self.params.workers},
        }
        for name, values in sections.items():
            settings.setdefault(name, {}).update(values)
        lines: list[str] = []
        for name, values in settings.items():
            lines.append(f"[{name}]")
            lines += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
        for url in feeds:
            lines += ["[[feeds]]", f"url = {json.dumps(url)}"]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


def copy_database(source: Path, target: Path) -> None:
    """A closed SQLite database (and its -wal, if any) to another place; with it, the
    working file feedsync keeps beside a database on a disk (``<stem>-live.db``,
    feedsync.config.StorageConfig.live_path), when there is one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    pairs = [(source, target)]
    live = source.with_name(f"{source.stem}-live{source.suffix}")
    if live.exists():
        pairs.append((live, target.with_name(f"{target.stem}-live{target.suffix}")))
    for src_db, dst_db in pairs:
        for suffix in ("", "-wal"):
            src = src_db.with_name(src_db.name + suffix)
            if src.exists():
                shutil.copyfile(src, dst_db.with_name(dst_db.name + suffix))


def mb(kb: float) -> float:
    return kb / 1024
