"""Scenario 9: a year on a Pi, time-compressed.

100 feeds, 1,000 new articles a day, 120 simulated days at the default retention (90
days of articles, 365 of entries), the live database on tmpfs with a Pi's RAM budget
(``[storage] ram_budget = "50MB"``: half of a 1 GB Pi's /run), the card database on
disk. ``bench/drivers/year_on_a_pi.py`` lives through it as the daemon would, on a
simulated clock: every hour the feeds that are due are polled over HTTP (this process
publishes the hour's articles on the loopback site first), what is staged is stored
through the storage layer with realistic text (fetching and extracting 120,000 pages
would take days), and the live database is saved to the card; every day, retention.

Per simulated day: the bytes written to the card (strace, only the card database and its
journal: ``-P``), the live database's size, a pass with nothing new (every feed 304), the
driver's RSS once its day is done (the daemon's), and three searches in a process of their
own, as ``feedsync search`` runs (``bench/drivers/year_search.py``, started by the driver
while it waits): each search's time inside that process (``storage.search`` alone) and
the process's peak RSS. The daemon never searches: none of the searches' memory is in its
RSS (they ran in the driver before the row "RSS after the three searches" became the
search process's peak, and the driver's later days' RSS held what they left). The rows
compare the week around day ``year_late`` (120: about 100,000 articles on the card) with
the week around day ``year_early`` (10: 10,000): the "baseline" is the same run, ninety
days younger. At the end, the search index against the trigram index it replaced, on the
same articles: bytes per article and the time of the same searches.

The curves go to ``year-on-a-pi.png`` beside RESULTS.md (matplotlib, in a venv of its own:
bench/plot.py).
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import plot
from bench.common import Bench, Result
from bench.measure import BenchError, clean_env
from bench.world import sitegen
from feedsync.localserver import LocalServer
from feedsync.timestamps import to_iso

TRACED = "trace=write,pwrite64,writev,pwritev,pwritev2"
_CALL = re.compile(r"^\d+\s+\w+\(\d+<([^>]*)>.*\)\s+=\s+(\d+)\s*$")
ENTRIES_PER_FEED = 20
# what results.json keeps of each simulated day (the plot draws them)
PER_DAY = (
    "day", "live_bytes", "card_bytes", "card_written", "daemon_rss_kb", "search_peak_rss_kb",
    "noop_cpu_s", "articles", "search",
)  # fmt: skip


@dataclass(frozen=True)
class YearArticle:
    title: str
    link: str
    guid: str
    published: datetime
    summary: str


class YearWorld:
    """Feeds only: each holds its newest ENTRIES_PER_FEED entries; an article is in one
    feed, one in five in two. The pages are never fetched (the driver stores the text)."""

    def __init__(self, server: LocalServer, feeds: int, seed: int = 9):
        self.server = server
        self.rng = random.Random(seed)
        self.paths = [f"/year/feeds/news-{i:03d}.xml" for i in range(feeds)]
        self.items: list[list[YearArticle]] = [[] for _ in range(feeds)]
        self.published = 0
        for f in range(feeds):
            self._render(f)

    @property
    def feed_urls(self) -> list[str]:
        return [self.server.url(p) for p in self.paths]

    def _render(self, f: int) -> None:
        items = [
            sitegen.Item(a.title, a.link, a.published, guid=a.guid, summary=a.summary)
            for a in self.items[f]
        ]
        title = f"Year Gazette {f:03d}"
        self.server.set(
            self.paths[f], sitegen.rss2(title, self.server.url(self.paths[f]), items),
            "application/rss+xml",
        )  # fmt: skip

    def publish(self, count: int, when: datetime) -> None:
        touched = set()
        for _ in range(count):
            self.published += 1
            n = self.published
            words = [self.rng.choice(sitegen.WORDS) for _ in range(self.rng.randint(6, 10))]
            article = YearArticle(
                title=f"{' '.join(words).capitalize()} ({n})",
                link=self.server.url(f"/year/{when:%Y/%m/%d}/story-{n:07d}.html"),
                guid=f"tag:year.invalid,2026:{n}",
                published=when,
                summary=" ".join(sitegen.prose(f"year:{n}", paragraphs=1, sentences=2)),
            )
            for f in self.rng.sample(range(len(self.paths)), 2 if self.rng.random() < 0.2 else 1):
                self.items[f].insert(0, article)
                del self.items[f][ENTRIES_PER_FEED:]
                touched.add(f)
        for f in sorted(touched):
            self._render(f)


def card_bytes_per_day(trace: Path, card: Path, marks: Path) -> list[int]:
    """Bytes of every write to the card database and its journal, split at the driver's
    day markers (the N-th marker ends day N)."""
    days: list[int] = []
    current = 0
    for line in trace.read_text(errors="replace").splitlines():
        match = _CALL.match(line)
        if not match:
            continue
        path, written = match.group(1), int(match.group(2))
        if path == str(marks):
            days.append(current)
            current = 0
        elif path.startswith(str(card)):
            current += written
    return days


def run(bench: Bench) -> Result:
    p = bench.params
    days, per_day = p.year_days, p.year_per_day
    early, late = p.year_early, p.year_late
    world = YearWorld(bench.server, p.year_feeds)
    live = bench.folder("year", "live")
    card = bench.folder("year", "card", disk=True)
    marks = bench.folder("year", "marks", disk=True) / "days.log"
    config = bench.config(
        live / "feedsync.toml",
        world.feed_urls,
        db=live / "feedsync.db",
        card=card / "feedsync.db",
        storage={"ram_budget": p.year_ram_budget},
    )
    start = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start -= timedelta(days=days)
    trace = bench.disk / "year" / "strace.log"
    command = [
        "strace", "--seccomp-bpf", "-f", "-qq", "-y", "-e", TRACED, "-e", "signal=none",
        "-o", str(trace),
        "-P", str(card / "feedsync.db"), "-P", str(card / "feedsync.db-journal"),
        "-P", str(marks),
        *bench.driver("year_on_a_pi.py", str(config), to_iso(start), str(marks)),
    ]  # fmt: skip
    errors = bench.disk / "year" / "driver.stderr"
    figures: list[dict[str, Any]] = []
    began = time.monotonic()
    with errors.open("w") as err:
        driver = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
            env=clean_env(),
        )  # fmt: skip
        assert driver.stdin is not None and driver.stdout is not None

        def ask(step: dict[str, Any]) -> dict[str, Any]:
            assert driver.stdin is not None and driver.stdout is not None
            driver.stdin.write(json.dumps(step) + "\n")
            driver.stdin.flush()
            answer = driver.stdout.readline()
            if not answer:
                raise BenchError(
                    "the year's driver stopped:\n" + errors.read_text(errors="replace")[-3000:]
                )
            return dict(json.loads(answer))

        try:
            for day in range(1, days + 1):
                base = start + timedelta(days=day - 1)
                for hour in range(24):
                    count = per_day // 24 + (1 if hour < per_day % 24 else 0)
                    world.publish(count, base + timedelta(hours=hour, minutes=5))
                    ask({"hour": to_iso(base + timedelta(hours=hour, minutes=30))})
                figures.append(
                    ask({"day": day, "at": to_iso(base + timedelta(hours=23, minutes=59))})
                )
                if day % 10 == 0 or day == days:
                    f = figures[-1]
                    bench.log(
                        f"scenario 9: day {day}/{days}: {f['articles']} articles, live "
                        f"{f['live_bytes'] / 1e6:.1f} MB, card {f['card_bytes'] / 1e6:.0f} MB"
                    )
            driver.stdin.write(json.dumps({"stop": True}) + "\n")
            driver.stdin.flush()
            driver.wait(timeout=300)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
    if driver.returncode != 0:
        raise BenchError(
            f"the year's driver exited {driver.returncode}: {errors.read_text()[-3000:]}"
        )
    written = card_bytes_per_day(trace, card, marks)
    trace.unlink()
    if len(written) != days:
        raise BenchError(f"{len(written)} day markers in the trace, expected {days}")
    for f, w in zip(figures, written, strict=True):
        f["card_written"] = w
    before_after = search_before_after(card / "feedsync.db", figures[-1]["terms"])
    return _result(bench, figures, before_after, time.monotonic() - began, early, late)


def _week(figures: list[dict[str, Any]], day: int) -> list[dict[str, Any]]:
    """The days around ``day`` (a week, or what the run has)."""
    low, high = max(1, day - 3), min(len(figures), day + 3)
    return figures[low - 1 : high]


def _result(
    bench: Bench,
    figures: list[dict[str, Any]],
    before_after: dict[str, Any],
    seconds: float,
    early: int,
    late: int,
) -> Result:
    p = bench.params
    result = Result(
        9,
        "A year on a Pi (time-compressed)",
        f"the week around simulated day {late}",
        f"the same run, the week around day {early}",
    )
    old, new = _week(figures, early), _week(figures, late)
    articles = p.year_per_day

    def series(key: str, days: list[dict[str, Any]], scale: float = 1.0) -> list[float]:
        return [float(d[key]) * scale for d in days]

    result.row("card bytes written per day", "MB", series("card_written", new, 1e-6),
               series("card_written", old, 1e-6), lower_is_better=None)  # fmt: skip
    result.row(
        "card bytes written per new article", "KB",
        [d["card_written"] / articles / 1e3 for d in new],
        [d["card_written"] / articles / 1e3 for d in old], lower_is_better=None,
    )  # fmt: skip
    result.row("live database at the end of the day", "MB", series("live_bytes", new, 1e-6),
               series("live_bytes", old, 1e-6), lower_is_better=None)  # fmt: skip
    result.row("RSS of the daemon (its day done, before the searches)", "MB",
               series("daemon_rss_kb", new, 1e-3), series("daemon_rss_kb", old, 1e-3),
               lower_is_better=None)  # fmt: skip
    result.row("peak RSS of the search process (three searches, a process of its own)", "MB",
               series("search_peak_rss_kb", new, 1e-3), series("search_peak_rss_kb", old, 1e-3),
               lower_is_better=None)  # fmt: skip
    result.row("CPU of a pass with nothing new (all 304)", "ms", series("noop_cpu_s", new, 1e3),
               series("noop_cpu_s", old, 1e3), lower_is_better=None)  # fmt: skip
    for name, label in (
        ("english", "an English word"),
        ("japanese_2", "two Japanese characters"),
        ("japanese_3", "three Japanese characters"),
    ):
        result.row(
            f"search, {label}", "ms", [d["search"][name][0] * 1e3 for d in new],
            [d["search"][name][0] * 1e3 for d in old], lower_is_better=None,
        )  # fmt: skip
    result.row("card database", "MB", series("card_bytes", new, 1e-6),
               series("card_bytes", old, 1e-6), lower_is_better=None)  # fmt: skip
    budget = _budget_bytes(p.year_ram_budget)
    most = max(f["live_bytes"] for f in figures)
    result.details = {
        "feeds": p.year_feeds,
        "articles_per_day": p.year_per_day,
        "days": len(figures),
        "ram_budget_bytes": budget,
        "live_bytes_max": most,
        "articles_on_the_card_at_the_end": figures[-1]["articles"],
        "search_terms": figures[-1]["terms"],
        "search_index": before_after,
        "per_day": [{k: f[k] for k in PER_DAY} for f in figures],
        "seconds": round(seconds, 1),
    }
    result.notes.append(
        f"{p.year_feeds} feeds, {p.year_per_day} new articles a day, {len(figures)} simulated "
        f"days; {figures[-1]['articles']} articles on the card at the end (retention: 90 days "
        f"of articles, pruned a month at a time). The live database stayed within its RAM "
        f"budget: at most {most / 1e6:.1f} MB of {budget / 1e6:.0f} MB."
    )
    result.notes.append(
        "The daemon's RSS is read once its day is done; the three searches run afterwards in "
        "a process of their own, as `feedsync search` runs: their times are taken in that "
        "process, around the search alone, and its peak RSS is a row of its own. (Earlier "
        'runs, whose row was "RSS after the three searches", searched in the daemon\'s '
        "process: what the searches left was in its later days' RSS.)"
    )
    if before_after:
        result.notes.append(
            "Search index on the same articles: "
            f"{before_after['new_bytes_per_article']:.0f} B per article (trigram index it "
            f"replaced: {before_after['old_bytes_per_article']:.0f} B)."
        )
    try:
        picture = plot.year(result.details, bench)
        if picture is not None:
            result.details["plot"] = picture.name
    except (BenchError, OSError) as exc:
        result.notes.append(f"(the plot was not drawn: {exc})")
    return result


def _budget_bytes(text: str) -> int:
    from feedsync.values import size

    return int(size(text))


def search_before_after(card: Path, terms: dict[str, str]) -> dict[str, Any]:
    """The search index of the card (per month, words and CJK pairs, detail=column)
    against the trigram index of version 6 (2.5x the text), built here on the same
    articles: bytes per article, and the time of the same searches as each answers them
    (version 6: trigram MATCH for 3 characters or more, a LIKE scan below)."""
    source = sqlite3.connect(f"file:{card}?mode=ro", uri=True)
    try:
        articles = source.execute("SELECT count(*) FROM (SELECT id FROM news)").fetchone()[0]
        new_bytes = source.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name GLOB 'news_fts_*'"
        ).fetchone()[0]
        rows = source.execute("SELECT id, title, body FROM news").fetchall()
    finally:
        source.close()
    if not articles:
        return {}
    old = sqlite3.connect(":memory:")
    old.execute("CREATE TABLE news (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
    old.execute(
        "CREATE VIRTUAL TABLE news_fts USING fts5(title, body, content = 'news', "
        "content_rowid = 'id', tokenize = 'trigram')"
    )
    with old:
        old.executemany("INSERT INTO news VALUES (?, ?, ?)", rows)
        old.execute("INSERT INTO news_fts (news_fts) VALUES ('rebuild')")
    old_bytes = old.execute(
        "SELECT sum(pgsize) FROM dbstat WHERE name GLOB 'news_fts*'"
    ).fetchone()[0]
    timings: dict[str, float] = {}
    for name, term in terms.items():
        started = time.perf_counter()
        if len(term) >= 3:
            old.execute(
                "SELECT n.id, n.title, snippet(news_fts, -1, '[', ']', '…', 64) "
                "FROM news_fts JOIN news AS n ON n.id = news_fts.rowid "
                "WHERE news_fts MATCH ? ORDER BY bm25(news_fts), n.id DESC LIMIT 20",
                ('"' + term + '"',),
            ).fetchall()
        else:
            # As version 6 answered it: every match found, titles first.
            old.execute(
                "SELECT id, title, body FROM news WHERE (title || ' ' || body) LIKE ?1 "
                "ORDER BY title LIKE ?1 DESC, id DESC LIMIT 20",
                (f"%{term}%",),
            ).fetchall()
        timings[name] = time.perf_counter() - started
    old.close()
    return {
        "articles": articles,
        "new_bytes_per_article": new_bytes / articles,
        "old_bytes_per_article": old_bytes / articles,
        "old_search_seconds": timings,
    }
