"""``feedsync demo``: a newcomer's first run, with no network and no setup.

Serves the bundled sample site (feedsync/demo_data: three category feeds of an invented
local paper, in RSS 2.0, Atom 1.0 and RSS 1.0, carrying six articles nine times) on a
loopback port, runs two real passes of the pipeline into a throwaway database, and
says what happened: nine entries stored as six articles, each page fetched once, and a
second pass that costs three 304s and nothing else.
"""

from __future__ import annotations

import shlex
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import TextIO

from feedsync.config import Config, ExtractConfig, FetchConfig, StorageConfig
from feedsync.localserver import LocalServer
from feedsync.pass_plan import PassPlan, PassRuntime
from feedsync.pipeline import Pass
from feedsync.progress import PlainProgress
from feedsync.storage import open_storage
from feedsync.terminal import command_name, short_time
from feedsync.timestamps import now, to_iso

DATA = Path(__file__).resolve().parent / "demo_data"
FEED_TYPES = {
    ".xml": "application/rss+xml; charset=utf-8",
    ".atom": "application/atom+xml; charset=utf-8",
    ".rdf": "application/rdf+xml; charset=utf-8",
}


def serve_sample_site(server: LocalServer) -> list[str]:
    """Put the sample feeds and pages on ``server``; returns the feed URLs."""
    base = server.base_url
    for page in sorted((DATA / "articles").glob("*.html")):
        html = page.read_text(encoding="utf-8").replace("@BASE@", base)
        server.set(f"/articles/{page.name}", html, "text/html; charset=utf-8")
    feeds = []
    for feed in sorted((DATA / "feeds").iterdir()):
        if feed.suffix in FEED_TYPES:
            xml = feed.read_text(encoding="utf-8").replace("@BASE@", base)
            feeds.append(server.set(f"/feeds/{feed.name}", xml, FEED_TYPES[feed.suffix]))
    return feeds


def _article_requests(server: LocalServer) -> int:
    return sum(n for path, n in server.hits.items() if path.startswith("/articles/"))


# the first line of the config demo --keep writes: a folder holding it holds the demo's
# own database, which a second demo --keep into it may replace
MARK = "# the database feedsync demo --keep wrote"
# what `feeds` says of the sample site's feeds in a kept database
GONE = "the demo's sample site, served only while the demo ran"


class DemoRefused(Exception):
    """The demo cannot run where it was asked to (a database no demo wrote is there);
    ``str()`` says why in one line. The command line reports it as a usage error."""


def _clear_earlier_demo(folder: Path) -> bool:
    """Make room in ``folder`` for the demo's database: the one an earlier ``demo --keep``
    left there goes (its sample site, on another port then, is gone); any other
    database is refused, never touched. True when an earlier demo's was cleared."""
    if not (folder / "feedsync.db").exists():
        return False
    config = folder / "feedsync.toml"
    try:
        ours = config.read_text(encoding="utf-8").startswith(MARK)
    except (OSError, UnicodeDecodeError):
        ours = False
    if not ours:
        raise DemoRefused(
            f"{folder} already holds a database (feedsync.db) that no demo wrote: keep the "
            "demo in another folder"
        )
    for pattern in ("feedsync.db", "feedsync.db-*", "feedsync.db.*", "feedsync-live.db*"):
        for path in folder.glob(pattern):
            path.unlink()
    return True


def _how_to_read(folder: Path, db: Path, name: str) -> str:
    """A config beside the kept database, and the commands that read it: the demo's
    database is an ordinary feedsync database (no card: ``db`` holds everything)."""
    config = folder / "feedsync.toml"
    config.write_text(
        f"{MARK} (README: Configuration)\n[storage]\ndb = {_toml_string(str(db))}\n",
        encoding="utf-8",
    )
    where = shlex.quote(str(config))
    return (
        f"\nThe database is kept in {folder}. Read it with\n"
        f"  {name} --config {where} news\n"
        f"  {name} --config {where} search harbour\n"
        f"  sqlite3 {shlex.quote(str(db))} 'SELECT id, title FROM news'"
    )


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's for what a path holds)."""
    import json

    return json.dumps(text, ensure_ascii=False)


def run_demo(out: TextIO, keep: Path | None = None) -> int:
    """Run the demo, writing the story to ``out``; returns the exit code."""
    with LocalServer() as server, tempfile.TemporaryDirectory(prefix="feedsync-demo-") as tmp:
        folder = keep or Path(tmp)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
        again = keep is not None and _clear_earlier_demo(keep)
        db = folder / "feedsync.db"
        feed_urls = serve_sample_site(server)
        config = Config(
            storage=StorageConfig(db=db, card=None),
            extract=ExtractConfig(workers=2),
            # the sample site is our own, on loopback: no need to space requests out
            fetch=FetchConfig(host_delay=timedelta(0)),
        )
        storage = open_storage(config.storage)
        try:
            # added as by `feedsync add`, not from a config file: the config written
            # beside a kept database lists none, and would disable them as "not in the
            # config file any more"
            for url in feed_urls:
                storage.add_feed(url, to_iso(now()))
            print("feedsync demo", file=out)
            print(
                f"  sample site: {server.base_url} ({len(feed_urls)} feeds of an invented "
                "local paper, bundled with feedsync)",
                file=out,
            )
            kept = "kept" if keep else "thrown away at the end"
            if again:
                kept += ", in place of the one an earlier demo kept there"
            print(f"  database:    {db} ({kept})", file=out)

            print("\nFirst pass: every feed is new.", file=out)
            first = Pass(
                PassPlan(save=True), PassRuntime(config, storage, PlainProgress(summary=False))
            ).run()
            counts = storage.counts()
            repeats = counts["links"] - counts["entries"]
            print(
                f"  {first.polled} feeds polled, {first.entries_seen} entries read, "
                f"{counts['entries']} distinct articles staged.\n"
                f"  {repeats} entries repeated an article that another feed carries "
                "(category feeds,\n  one with tracking parameters in its URL): linked "
                "to it, not stored twice.",
                file=out,
            )
            print(
                f"  {first.extracted} articles fetched and extracted "
                f"({_article_requests(server)} page requests: each page once):",
                file=out,
            )
            for item in sorted(storage.news_recent(limit=20), key=lambda n: n.published or ""):
                words = len(item.body.split())
                when = short_time(item.published, "no date")
                print(f"    {when:<17}  {item.title} ({words} words)", file=out)

            print("\nSecond pass: nothing new.", file=out)
            before = _article_requests(server)
            second = Pass(
                PassPlan(save=True), PassRuntime(config, storage, PlainProgress(summary=False))
            ).run()
            print(
                f"  {second.not_modified} of {second.polled} feeds answered 304 Not "
                f"Modified, {second.parsed} parsed, "
                f"{_article_requests(server) - before} article pages requested.",
                file=out,
            )

            name = command_name()
            if keep:
                # the sample site goes with the demo: its feeds, kept with their articles,
                # say so rather than fail on a closed port at the next run
                for url in feed_urls:
                    storage.disable_feed(url, GONE)
                storage.save()
                print(_how_to_read(keep, db, name), file=out)
            print(
                f"\nYour own feeds:\n  {name} add https://example.com/feed.xml\n"
                f"  {name} run\n  {name} feeds",
                file=out,
            )
        finally:
            storage.close()
    failed = first.feed_errors + first.extract_failed + first.gone + second.feed_errors
    return 0 if failed == 0 else 1
