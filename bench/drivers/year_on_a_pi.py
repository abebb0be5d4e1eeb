"""Scenario 9's daemon: feedsync through a simulated year, as ``feedsync daemon`` runs it.

    year_on_a_pi.py CONFIG START MARKS

One long-lived process, like the daemon, on a simulated clock that starts at START (ISO).
The bench (bench/scenarios/year.py) publishes each hour's articles on its loopback site,
then sends one JSON line per step on stdin; this process answers one JSON line each:

- ``{"hour": ISO}``: the daemon's poll job at that time (the feeds due, conditional GETs,
  parsing, staging: a real ``Pass`` over HTTP), then the articles staged stored through
  the storage layer with realistic text (instead of fetching and extracting pages, which
  would take days), then the daemon's snapshot job (the save to the card).
- ``{"day": N, "at": ISO}``: the daemon's retention job, then a marker written to MARKS
  (the bench splits the card's writes per day at these markers), then the day's figures:
  the live database's size, a pass with nothing new (every feed answers 304), this
  process's RSS (the daemon's, its day done), then three searches (an English word, two
  and three Japanese characters) in a process of their own, as ``feedsync search`` is
  (bench/drivers/year_search.py, started while this one waits): their times and hits,
  and that process's peak RSS. The daemon never searches, so none of it stays in this
  process's RSS on the days after.
- ``{"stop": true}``: close and exit.

Article texts: the gold texts of the real news pages in ``../shared/corpus`` (the sizes of
extracted articles; read in place), one in ten Japanese (from the corpus's Japanese feeds
and pages), words shuffled per article so that each is distinct; generated prose when the
corpus is absent.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from feedsync import config as config_module  # noqa: E402
from feedsync.pass_plan import PassPlan, PassRuntime  # noqa: E402
from feedsync.pipeline import Pass  # noqa: E402
from feedsync.progress import PlainProgress  # noqa: E402
from feedsync.records import Article  # noqa: E402
from feedsync.storage import Keep  # noqa: E402
from feedsync.storage.sqlite import SQLiteStorage  # noqa: E402
from feedsync.timestamps import from_iso, to_iso  # noqa: E402

CORPUS = Path(os.environ.get("FEEDSYNC_CORPUS") or REPO.parent / "shared" / "corpus")
SEARCHER = Path(__file__).resolve().with_name("year_search.py")
_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]{2,}")


def english_texts() -> list[str]:
    gold = CORPUS / "articles" / "scrapinghub-aeb" / "ground-truth.json"
    if gold.is_file():
        return [str(v["articleBody"]) for v in json.loads(gold.read_text()).values()]
    import sitegen

    return [" ".join(sitegen.prose(f"year:{n}", paragraphs=6, sentences=8)) for n in range(50)]


def japanese_sentences() -> list[str]:
    found: list[str] = []
    for path in sorted((CORPUS / "feeds" / "chardet").glob("*JP*/*")) + sorted(
        (CORPUS / "feeds" / "chardet").glob("SHIFT_JIS/*")
    ):
        encoding = path.parent.name.lower().replace("_", "-")
        try:
            text = path.read_bytes().decode(encoding)
        except (LookupError, UnicodeDecodeError):
            continue
        found += [s for s in re.split(r"[。\n]", re.sub(r"<[^>]+>", " ", text)) if _CJK.search(s)]
    if not found:  # no corpus: a few sentences of our own
        found = ["東京都の天気は晴れ", "京都と大阪で祭りが開かれた", "新しい列車が東京と京都を結ぶ"]
    return [s.strip() + "。" for s in found if s.strip()]


class Texts:
    """A distinct article text per id, of the sizes of real extracted articles."""

    def __init__(self) -> None:
        self.english = english_texts()
        self.japanese = japanese_sentences()

    def __call__(self, article: int) -> str:
        rng = random.Random(article)
        if rng.random() < 0.1:
            return "".join(rng.choice(self.japanese) for _ in range(rng.randint(15, 45)))
        words = rng.choice(self.english).split()
        rng.shuffle(words)
        return " ".join(words)

    def search_terms(self) -> dict[str, str]:
        """An English word found in many articles, two and three Japanese characters."""
        counts: dict[str, int] = {}
        for sentence in self.japanese:
            for run in _CJK.findall(sentence):
                for i in range(len(run) - 2):
                    counts[run[i : i + 3]] = counts.get(run[i : i + 3], 0) + 1
        three = max(counts, key=lambda k: counts[k]) if counts else "東京都"
        return {"english": "government", "japanese_2": three[:2], "japanese_3": three}


def vm_rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def search_apart(config_path: str, terms: dict[str, str]) -> dict[str, Any]:
    """The day's searches in a process of their own (bench/drivers/year_search.py), as
    ``feedsync search`` runs: what it prints (each term's time and hits, its peak RSS)."""
    done = subprocess.run(
        [sys.executable, str(SEARCHER), config_path, json.dumps(terms)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )  # its stderr is this process's (the bench keeps it)
    if done.returncode != 0:
        raise RuntimeError(f"the searches exited {done.returncode}")
    return dict(json.loads(done.stdout))


def main() -> int:
    config_path, start, marks = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    config = config_module.load(config_path)
    now = [from_iso(start)]

    def clock() -> datetime:
        return now[0]

    keep = Keep.of(config)
    # the simulated clock from the start: the card's first month is the simulated one
    storage = SQLiteStorage.open(config.storage, keep=keep, clock=clock)
    storage.sync_config_feeds(config_module.config_feeds(config), to_iso(clock()))
    texts = Texts()
    terms = texts.search_terms()
    quiet = PlainProgress(out=io.StringIO(), err=sys.stderr, summary=False)
    runtime = PassRuntime(config, storage, quiet, clock=clock)
    owner = "year-on-a-pi"
    mark = marks.open("a")
    for line in sys.stdin:
        step = json.loads(line)
        if step.get("stop"):
            break
        if "hour" in step:
            now[0] = from_iso(step["hour"])
            stats = Pass(PassPlan(due_only=True, extract=False), runtime).run()
            stored = 0
            moment = to_iso(clock())
            until = to_iso(clock() + timedelta(minutes=15))
            while jobs := storage.claim_articles(owner, 0, moment, moment, until, 500):
                for job in jobs:
                    article = Article(text=texts(job.id), fingerprint=random.getrandbits(62))
                    storage.save_article(job.id, article, job.published, moment)
                    stored += 1
            storage.save()  # the daemon's snapshot job, every hour
            print(json.dumps({"polled": stats.polled, "staged": stats.staged, "stored": stored}))
        else:
            now[0] = from_iso(step["at"])
            day_of = clock()
            storage.prune(
                to_iso(day_of - timedelta(days=keep.news_days)) if keep.news_days else None,
                to_iso(day_of - timedelta(days=keep.tombstone_days))
                if keep.tombstone_days
                else None,
            )
            mark.write(f"day {step['day']}\n")  # what the card got today ends here
            mark.flush()
            live = config.storage.live_path
            live_bytes = sum(
                p.stat().st_size
                for p in (live, *(live.with_name(live.name + s) for s in ("-wal", "-shm")))
                if p.exists()
            )
            # the feeds not polled since the last articles were published: polled now, so
            # that the pass measured next finds nothing new (what they bring is stored)
            Pass(PassPlan(extract=False), runtime).run()
            while jobs := storage.claim_articles(
                owner,
                0,
                to_iso(day_of),
                to_iso(day_of),
                to_iso(day_of + timedelta(minutes=15)),
                500,
            ):
                for job in jobs:
                    article = Article(text=texts(job.id), fingerprint=random.getrandbits(62))
                    storage.save_article(job.id, article, job.published, to_iso(day_of))
            cpu = time.process_time()
            wall = time.perf_counter()
            idle = Pass(PassPlan(extract=False), runtime).run()
            noop = (time.process_time() - cpu, time.perf_counter() - wall)
            daemon_rss = vm_rss_kb()  # the daemon's day done
            searched = search_apart(config_path, terms)
            counts = storage.counts()
            print(
                json.dumps(
                    {
                        "day": step["day"],
                        "live_bytes": live_bytes,
                        "card_bytes": config.storage.card_path.stat().st_size,
                        "daemon_rss_kb": daemon_rss,
                        "search_peak_rss_kb": searched["peak_rss_kb"],
                        "noop_cpu_s": noop[0],
                        "noop_wall_s": noop[1],
                        "noop_not_modified": idle.not_modified,
                        "noop_polled": idle.polled,
                        "search": searched["search"],
                        "terms": terms,
                        "articles": counts["articles"],
                        "entries": counts["entries"],
                    }
                )
            )
        sys.stdout.flush()
    storage.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
