"""The snapshot (the card database) is a plain SQLite file: read with the ``sqlite3``
command-line tool and with ``datasette serve -i`` (read-only, its full-text search), as
README ("Reading the data with other tools") and docs/schema.md say."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import FeedsyncEnv, Site, cli_env
from sitegen import Item

# the next day's save, as feedsync itself runs it: a month's new articles go into its
# search index once 500 wait or the oldest has waited 20 hours (feedsync/storage/card.py)
NEXT_DAY = (
    "import sys, datetime; from feedsync import timestamps; real = timestamps.now; "
    "timestamps.now = lambda: real() + datetime.timedelta(hours=21); "
    "from feedsync.cli import main; sys.exit(main(sys.argv[1:]))"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def get_json(url: str) -> object:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{url}: {exc.code} {exc.read()[:300]!r}") from None


def test_sqlite3_and_datasette_read_a_snapshot(fs_card: FeedsyncEnv, site: Site) -> None:
    sqlite3_cli = shutil.which("sqlite3")
    # its own venv (tests/run.sh), as a user installs it with pipx: not feedsync's
    datasette = Path(__file__).resolve().parent.parent / ".venv" / "datasette" / "bin" / "datasette"
    if sqlite3_cli is None:
        pytest.skip("the sqlite3 command is not installed (tests/run.sh installs it)")
    if not datasette.exists():
        pytest.skip("datasette is not installed (tests/run.sh installs it in .venv/datasette)")
    # words of the titles that no article text has (the texts are made of sitegen.WORDS)
    titles = ["Zanzibar Ferry Returns", "Quokka Library Opens", "Xylophone Storm Warning"]
    pages = [site.page(f"story-{n}", title) for n, title in enumerate(titles)]
    feed = site.feed("news.xml", [Item(t, url) for t, url in zip(titles, pages, strict=True)])
    fs_card.configure([feed])
    fs_card.run("run")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            NEXT_DAY,
            "--config",
            str(fs_card.config_path),
            "save",
            "--force",
        ],
        capture_output=True,
        text=True,
        env=cli_env(fs_card.root / "home"),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(fs_card.run("status", "--json").stdout)
    snapshot = Path(report["storage"]["snapshot"])
    assert snapshot == fs_card.snapshot_path and report["storage"]["unsaved_changes"] == 0

    counted = subprocess.run(
        [sqlite3_cli, "-readonly", str(snapshot), "select count(*) from news"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert counted.returncode == 0 and counted.stdout.strip() == "3", counted

    # the month's search index (one FTS5 table per month of articles)
    months = subprocess.run(
        [
            sqlite3_cli,
            "-readonly",
            str(snapshot),
            "select name from sqlite_master "
            "where name glob 'news_fts_[0-9][0-9][0-9][0-9]_[0-9][0-9]'",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.split()
    assert len(months) == 1, months
    fts = months[0]  # news_fts_YYYY_MM, beside the month's table news_YYYY_MM
    table = fts.replace("news_fts_", "news_")

    before = sha256(snapshot)
    port = free_port()
    server = subprocess.Popen(
        [str(datasette), "serve", "-i", str(snapshot), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}/{snapshot.stem}"
        deadline = time.monotonic() + 30
        while True:
            try:
                get_json(f"{base}.json")
                break
            except (urllib.error.URLError, ConnectionError, AssertionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"datasette did not answer: {server.poll()}") from None
                time.sleep(0.1)
        found = get_json(
            f"{base}/{table}.json?_search=zanzibar&_fts_table={fts}&_fts_pk=id&_shape=array"
        )
        assert isinstance(found, list)
        assert [row["title"] for row in found] == ["Zanzibar Ferry Returns"]
        # the same through the `news` view (every article; this month's index)
        found = get_json(
            f"{base}/news.json?_search=xylophone&_fts_table={fts}&_fts_pk=id&_shape=array"
        )
        assert isinstance(found, list)
        assert [row["title"] for row in found] == ["Xylophone Storm Warning"]
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
    assert sha256(snapshot) == before  # -i: immutable, nothing written
