"""Scenario 11's archive: a card database of ``articles`` articles over ``days`` days,
written through the storage layer as a daemon writes it (each day: every feed's poll
recorded, the staged entries' articles saved, a save to the card on that day's clock), so
that the articles live in the card's month tables and the live database holds the last
days, as on a Pi after months of running. Then the storage reads that ``feedsync serve``
makes for a feed's page, timed in this process: the walk a quiet or small feed costs.

    python bench/drivers/serve_card.py CONFIG END_ISO DAYS ARTICLES OUT.json

The feeds are the config's (their URLs; a category each, given here), dealt the articles
in turn except two: feed 0 is QUIET (its articles only in the first tenth of the days,
nothing since: months ago) and feed 1 is SMALL (1% of the articles). Every seventh
article is also carried by the next feed (one story in two category feeds). Texts are the
year scenario's (bench/drivers/year_on_a_pi.py ``Texts``: the corpus's extracted articles,
words shuffled per article, one in ten Japanese). Prints nothing; writes OUT.json: the
feeds' ids, an article id, a deep page's ``before`` id and the read timings.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from year_on_a_pi import english_texts, japanese_sentences

from feedsync import config as config_module
from feedsync.records import NO_HOST_NOTE, Article, Entry, PollIntent
from feedsync.storage import Keep, sql_reading
from feedsync.storage.sqlite import SQLiteStorage
from feedsync.timestamps import from_iso, to_iso

CATEGORIES = ("News/World", "News/Local", "Tech", "Sport", "Culture")
LEASE = "2099-01-01T00:00:00Z"
QUIET, SMALL = 0, 1  # feed indexes
READS = 9  # timed news_window calls per feed
DEEP = 40  # pages back for the deep page


class Texts:
    """A distinct text per article id, of the sizes of real extracted articles (one in
    ten Japanese): year_on_a_pi's texts, each English one's words shuffled once and then
    rotated per article (a shuffle per article was a third of the build's time)."""

    def __init__(self) -> None:
        rng = random.Random(11)
        self.english = []
        for text in english_texts():
            words = text.split()
            rng.shuffle(words)
            self.english.append(words)
        self.japanese = japanese_sentences()

    def __call__(self, article: int) -> str:
        rng = random.Random(article)
        if article % 10 == 3:
            return "".join(rng.choice(self.japanese) for _ in range(rng.randint(15, 45)))
        words = self.english[article % len(self.english)]
        k = rng.randrange(len(words))
        return " ".join(words[k:] + words[:k])


def _feed_of(n: int, feeds: int, days: int, day: int) -> int:
    """The feed that carries article ``n`` (published on ``day``)."""
    if n % 100 == 0:
        return SMALL
    if n % 100 == 1 and day < max(1, days // 10):
        return QUIET
    return 2 + n % (feeds - 2)


class Archive:
    """Writes articles as a daemon does: a stretch of time's entries dealt to the feeds,
    every feed's poll recorded in one transaction, the articles saved, then a save."""

    def __init__(self, storage: SQLiteStorage, order: list[int], days: int) -> None:
        self.storage = storage
        self.order = order  # the feeds' ids, config order
        self.days = days  # the archive's length: the quiet feed's articles are in its first tenth
        self.texts = Texts()
        self.rng = random.Random(11)

    def stretch(self, first: int, upto: int, begin: datetime, end: datetime, day: int) -> None:
        """Articles ``first``..``upto``-1 published evenly from ``begin`` to ``end``, on
        the archive's day ``day``; polled and fetched at ``end`` (the clock's now)."""
        feeds = len(self.order)
        carried: dict[int, list[Entry]] = {}
        for k in range(first, upto):
            when = begin + (end - begin) * ((k - first) / max(1, upto - first))
            entry = Entry(
                url=f"https://news.example/{day}/story-{k}",
                title=f"Story {k}",
                published=None if k % 11 == 0 else to_iso(when),
            )
            f = _feed_of(k, feeds, self.days, day)
            carried.setdefault(f, []).append(entry)
            if k % 7 == 0 and f not in (QUIET, SMALL):
                carried.setdefault(2 + (f - 1) % (feeds - 2), []).append(entry)
        at = to_iso(end)
        self.storage.record_polls(
            [
                (
                    PollIntent(
                        feed_id=self.order[f],
                        polled_at=at,
                        entries=tuple(entries),
                        newest_published="",
                        warning=None,
                        feed_title=f"Feed {f}",
                        etag=None,
                        last_modified=None,
                        next_poll_at=at,
                        owner="bench",
                        lease_until=LEASE,
                    ),
                    NO_HOST_NOTE,
                )
                for f, entries in sorted(carried.items())
            ]
        )
        while jobs := self.storage.claim_articles("bench", 0, LEASE, at, LEASE, 500):
            for job in jobs:
                text = self.texts(job.id)
                article = Article(text=text, author="Ann", fingerprint=self.rng.getrandbits(62))
                self.storage.save_article(job.id, article, job.published, at)
        self.storage.save()


def main() -> int:
    config_path, end, days_text, articles_text, out = sys.argv[1:6]
    days, articles = int(days_text), int(articles_text)
    config = config_module.load(config_path)
    start = from_iso(end) - timedelta(days=days)
    now = [start]
    storage = SQLiteStorage.open(config.storage, keep=Keep.of(config), clock=lambda: now[0])
    urls = list(config_module.config_feeds(config))
    if len(urls) < 3:
        raise SystemExit("serve_card.py: at least 3 feeds")
    for i, url in enumerate(urls):
        storage.add_feed(url, to_iso(start), category=CATEGORIES[i % len(CATEGORIES)])
    ids = {f.url: f.id for f in storage.feeds_to_poll()}
    order = [ids[u] for u in urls]
    archive = Archive(storage, order, days)
    per_day = articles / days
    n = 0
    built = time.perf_counter()
    for day in range(days):
        upto = round(per_day * (day + 1))
        now[0] = start + timedelta(days=day + 1) - timedelta(minutes=5)
        archive.stretch(n, upto, start + timedelta(days=day), now[0], day)
        n = upto
    built = time.perf_counter() - built

    def timed(**kwargs: int | str) -> tuple[float, int]:
        runs = []
        found = 0
        for _ in range(READS):
            t = time.perf_counter()
            found = len(storage.news_window(limit=50, **kwargs))  # type: ignore[arg-type]
            runs.append(time.perf_counter() - t)
        return statistics.median(runs), found

    first = storage.news_window(limit=50, bodies=False)
    deep = first[-1].id
    depth = min(DEEP, articles // 100)  # 40 pages deep (2,000 articles back), or halfway
    for _ in range(depth):
        deep = storage.news_window(before=deep, limit=50, bodies=False)[-1].id
    plans = (("busy", 2), ("quiet", QUIET), ("small", SMALL))
    reads = {name: timed(feed_id=order[index]) for name, index in plans}
    reads["all"] = timed()
    reads["category"] = timed(category=CATEGORIES[2])
    sql_reading.PLAN = "walk"  # every feed walked: the only plan before version 11
    reads.update({f"{name}_walk": timed(feed_id=order[index]) for name, index in plans})
    sql_reading.PLAN = "links"  # every feed read by its own links
    reads.update({f"{name}_links": timed(feed_id=order[index]) for name, index in plans})
    sql_reading.PLAN = None
    counts = storage.counts()
    storage.close()
    Path(out).write_text(
        json.dumps(
            {
                "feeds": {"busy": order[2], "quiet": order[QUIET], "small": order[SMALL]},
                "all_feeds": order,
                "next_article": n,
                "card_bytes": config.storage.card_path.stat().st_size,
                "category": CATEGORIES[2],
                "article": first[0].id,
                "deep_before": deep,
                "deep_pages": depth,
                "build_s": built,
                "counts": counts,
                "window_ms": {k: round(1000 * v[0], 2) for k, v in reads.items()},
                "window_found": {k: v[1] for k, v in reads.items()},
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
