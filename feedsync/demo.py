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


def _how_to_read(folder: Path, db: Path, name: str) -> str:
    """A config beside the kept database, and the commands that read it: the demo's
    database is an ordinary feedsync database (no snapshot: ``db`` holds everything)."""
    config = folder / "feedsync.toml"
    config.write_text(
        "# the database feedsync demo --keep wrote (README: Configuration)\n"
        f"[storage]\ndb = {_toml_string(str(db))}\n",
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
        db = folder / "feedsync.db"
        feed_urls = serve_sample_site(server)
        config = Config(
            storage=StorageConfig(db=db, snapshot=None),
            extract=ExtractConfig(workers=2),
            # the sample site is our own, on loopback: no need to space requests out
            fetch=FetchConfig(host_delay=timedelta(0)),
        )
        storage = open_storage(config.storage)
        try:
            storage.sync_config_feeds(feed_urls, to_iso(now()))
            print("feedsync demo", file=out)
            print(
                f"  sample site: {server.base_url} ({len(feed_urls)} feeds of an invented "
                "local paper, bundled with feedsync)",
                file=out,
            )
            kept = "kept" if keep else "thrown away at the end"
            print(f"  database:    {db} ({kept})", file=out)

            print("\nFirst pass: every feed is new.", file=out)
            first = Pass(config, storage, PlainProgress(summary=False), snapshot=True).run()
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
            second = Pass(config, storage, PlainProgress(summary=False), snapshot=True).run()
            print(
                f"  {second.not_modified} of {second.polled} feeds answered 304 Not "
                f"Modified, {second.parsed} parsed, "
                f"{_article_requests(server) - before} article pages requested.",
                file=out,
            )

            name = command_name()
            if keep:
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
