"""The `feedsync` command as users and cron meet it: output, exit codes, start-up cost."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import sitegen
from conftest import FeedsyncEnv, Site, cli_env, on_a_terminal, wait_until
from sitegen import Item


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "feedsync"
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and re.fullmatch(r"feedsync \d+\.\d+\.\d+\n", done.stdout)


def test_add_list_and_remove_feeds(fs: FeedsyncEnv, site: Site) -> None:
    url = site.feed("news.xml", [Item("One", site.page("one"))])
    assert fs.run("add", url + "#top").stdout == (
        f"added {url}: news.xml, 1 entry staged; their articles come with the next run\n"
    )
    assert fs.run("add", url).stdout == f"already there: [1] {url}; not fetched again\n"
    listing = fs.run("feeds").stdout
    assert url in listing and "    ok\n" in listing  # polled once by add

    fs.run("run")
    listing = fs.run("feeds").stdout
    assert "[1] news.xml" in listing and "    ok\n" in listing and "| 1 entry\n" in listing

    assert fs.run("remove", url).stdout == f"removed {url} (its articles are kept)\n"
    assert fs.run("feeds").stdout.startswith("no feeds yet")
    assert fs.scalar("SELECT count(*) FROM news") == 1


def test_feeds_shows_failures_and_disabled_feeds(fs: FeedsyncEnv, site: Site) -> None:
    broken = site.server.set("/broken.xml", "x", status=500)
    kept = site.feed("kept.xml", [])
    fs.configure([broken, kept], poll={"failing_after": 2})
    fs.run("run")
    assert "retrying (1 failed in a row): HTTP 500" in fs.run("feeds").stdout
    fs.configure([kept])  # broken leaves the config file
    listing = fs.run("feeds").stdout
    assert "DISABLED: not in the config file any more" in listing
    fs.configure([broken, kept])
    fs.run("run")
    listing = fs.run("feeds", env={"COLUMNS": "80"}).stdout
    assert "FAILING (2 in a row): HTTP 500 Internal Server Error" in listing
    assert all(len(line) <= 80 for line in listing.splitlines()), listing


def test_bad_arguments_get_one_line_and_exit_2(fs: FeedsyncEnv, site: Site) -> None:
    cases = {
        ("add", "ftp://example.com/feed"): "not an http:// or https:// URL",
        ("add", "not a url"): "not an http:// or https:// URL",
        ("remove", "https://example.com/never-added"): "no such feed",
        ("frobnicate",): "invalid choice",
        ("add",): "the following arguments are required: url",
        ("run", "--verbose"): "unrecognized arguments: --verbose",
    }
    for args, message in cases.items():
        done = fs.run(*args, expect=2)
        assert message in done.stderr, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and done.stdout == "", (args, done.stderr)
    configured = site.feed("c.xml", [])
    fs.configure([configured])
    done = fs.run("remove", configured, expect=2)
    assert "is listed in" in done.stderr and str(fs.config_path) in done.stderr


def test_arguments_that_are_not_utf8_get_one_line_and_exit_2(fs: FeedsyncEnv, site: Site) -> None:
    """Bytes that are not UTF-8 in argv (a Latin-1 terminal, a script): the search and
    --feed ended in an internal error (exit 1)."""
    fs.configure([site.feed("f.xml", [Item("Café opens", site.page("cafe"))])])
    fs.run("run")
    cases: dict[tuple[str | bytes, ...], str] = {
        ("search", b"\xff\xfe"): "the search query is not valid UTF-8 (b'\\xff\\xfe')",
        ("search", "opens", b"caf\xe9"): "the search query is not valid UTF-8 (b'opens caf\\xe9')",
        ("news", "--feed", b"\xff"): "the feed argument is not valid UTF-8",
        ("show", b"\xff"): "the article argument is not valid UTF-8",
    }
    for args, message in cases.items():
        done = subprocess.run(
            [*fs.command(), *args], capture_output=True, env=cli_env(fs.root / "home")
        )
        err = done.stderr.decode()
        assert done.returncode == 2 and done.stdout == b"", (args, done)
        assert err.startswith("feedsync: error: ") and message in err, (args, err)
        assert err.count("\n") == 1 and "internal error" not in err, (args, err)
    # the same search in UTF-8 finds the article
    assert "Café opens" in fs.run("search", "opens", "café").stdout


def test_storage_failures_exit_3_with_one_line(fs: FeedsyncEnv) -> None:
    fs.db_path.parent.mkdir(parents=True)
    fs.db_path.write_bytes(b"definitely not a database" * 200)
    done = fs.run("run", expect=3)
    assert done.stderr.startswith("feedsync: storage error: ") and done.stderr.count("\n") == 1
    assert "not a database" in done.stderr
    blocker = fs.root / "a-file"
    blocker.write_text("")
    fs.configure(storage={"db": str(blocker / "sub" / "feedsync.db")})
    done = fs.run("feeds", expect=3)
    assert done.stderr == (
        f"feedsync: storage error: cannot create {blocker / 'sub'}: Not a directory\n"
    )


def test_help_says_proxies_are_not_used() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "feedsync", "--help"], capture_output=True, text=True, check=True
    )
    assert (
        "feedsync connects directly: HTTP(S)_PROXY, ALL_PROXY and NO_PROXY are not used (a "
        "proxy would hide the address the LAN rules are decided from)."
    ) in " ".join(done.stdout.split())


def test_a_proxy_in_the_environment_is_named_and_not_used(fs: FeedsyncEnv, site: Site) -> None:
    """A proxy that does not exist changes nothing (the feed is fetched directly), and the
    run says that the variables are not used."""
    fs.configure([site.feed("f.xml", [Item("Story", site.page("story"))])])
    env = cli_env(fs.root / "home")
    env.pop("NO_PROXY")
    env.update(HTTPS_PROXY="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9")
    done = subprocess.run(fs.command("run"), capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        "feedsync: warning: HTTPS_PROXY, http_proxy are set but not used: "
        "feedsync connects directly\n"
    )
    assert "1 new entry staged, 1 article extracted" in done.stdout
    quiet = subprocess.run(fs.command("run", "--quiet"), capture_output=True, text=True, env=env)
    assert (quiet.returncode, quiet.stderr) == (0, "")


def test_cron_output_is_one_summary_line_plus_errors(fs: FeedsyncEnv, site: Site) -> None:
    good = site.feed("good.xml", [Item("Good", site.page("good"))])
    bad = site.server.set("/bad.xml", "x", status=500)
    fs.configure([good, bad])
    done = fs.run("run")
    assert re.fullmatch(
        r"feedsync: 2 feeds polled \(0 not modified, 1 failed\), 1 new entry staged, "
        r"1 article extracted \(0 failed, 0 given up\) in \d+\.\ds; snapshot written\n",
        done.stdout,
    )
    assert done.stderr == f"feedsync: feed {bad}: HTTP 500 Internal Server Error\n"
    quiet = fs.run("run", "--quiet")
    assert quiet.stdout == "" and "HTTP 500" in quiet.stderr


def test_no_feeds_is_a_hint_not_an_error(fs: FeedsyncEnv) -> None:
    done = fs.run("run")
    assert "no feeds to poll" in done.stderr and "feedsync add URL" in done.stderr
    assert "0 feeds polled" in done.stdout


def test_terminal_gets_progress_bars(fs: FeedsyncEnv, site: Site) -> None:
    fs.configure([site.feed("f.xml", [Item("Story", site.page("story"))])])
    code, text = on_a_terminal(
        fs.command("run"), {**cli_env(fs.root / "home"), "TERM": "xterm", "COLUMNS": "100"}
    )
    assert code == 0, text
    assert "polling feeds" in text and "extracting articles" in text
    assert "1 article extracted" in text


def _imported_modules(done: subprocess.CompletedProcess[str]) -> set[str]:
    return {
        line.split("|")[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }


def test_a_run_with_nothing_to_extract_never_loads_trafilatura(fs: FeedsyncEnv, site: Site) -> None:
    """Start-up is what cron pays every few minutes: a run whose feeds all answer 304
    imports neither trafilatura nor the feed parser (nor rich), nor anyio beyond its
    package, which httpcore imports (~20 ms of CPU: the connection pool locks with
    asyncio's lock, and names are resolved by the event loop)."""
    feed = site.feed("f.xml", [Item("Story", site.page("story"))])
    fs.configure([feed])
    env = {**cli_env(fs.root / "home"), "PYTHONPROFILEIMPORTTIME": "1"}

    def run() -> set[str]:
        done = subprocess.run(
            fs.command("run"), capture_output=True, text=True, env=env, timeout=180
        )
        assert done.returncode == 0, done.stderr
        return _imported_modules(done)

    # with a feed to parse and an article to extract, both are loaded (trafilatura by
    # the extraction workers)
    first = run()
    assert "feedsync.parse" in first and "trafilatura" in first
    # the next run (cron, a few minutes later, the feed answers 304) loads neither: the
    # parsers are imported by the first document a process reads (parse_thread.parse_document)
    quiet = run()
    assert "httpx" in quiet  # it did poll
    assert not quiet & {"feedsync.parse", "fastfeedparser", "feedparser"}
    assert "trafilatura" not in quiet and "rich" not in quiet
    assert {m for m in quiet if m.startswith("anyio")} <= {"anyio", "anyio._lazyimport"}


# ---------------------------------------------------------------- rough edges (issue 22)


def test_global_options_work_after_the_command_too(fs: FeedsyncEnv, site: Site) -> None:
    """`feedsync status --config X` is `feedsync --config X status`; --debug likewise."""
    fs.configure([site.feed("f.xml", [])])
    home = cli_env(fs.root / "home")
    after = [sys.executable, "-m", "feedsync", "feeds", "--config", str(fs.config_path)]
    done = subprocess.run([*after, "--debug"], capture_output=True, text=True, env=home)
    assert done.returncode == 0, done.stderr
    assert "f.xml" in done.stdout  # the feed of that config, not of the default one
    assert "--config FILE" in fs.run("status", "--help").stdout
    # given in both places, the one after the command wins (it is the nearer)
    elsewhere = subprocess.run(
        [sys.executable, "-m", "feedsync", "--config", "/nonexistent.toml", *after[3:]],
        capture_output=True,
        text=True,
        env=home,
    )
    assert elsewhere.returncode == 0 and "f.xml" in elsewhere.stdout, elsewhere.stderr


def test_every_command_that_names_a_feed_takes_its_id_or_its_url(
    fs: FeedsyncEnv, site: Site
) -> None:
    one = site.feed("one.xml", [Item("One", site.page("one"))])
    two = site.feed("two.xml", [Item("Two", site.page("two"))])
    fs.configure([])
    fs.run("add", one)
    fs.run("add", two)
    fs.run("run")
    listing = fs.run("feeds").stdout
    assert "[1] one.xml" in listing and "[2] two.xml" in listing
    assert "Two" in fs.run("news", "--feed", "2").stdout
    assert fs.run("remove", "2").stdout == f"removed {two} (its articles are kept)\n"
    assert "two.xml" not in fs.run("feeds").stdout
    assert (
        "no such feed: 2 (see 'feedsync feeds' for the ids)"
        in fs.run("remove", "2", expect=2).stderr
    )
    assert (
        "not a feed's id or an http:// or https:// URL"
        in fs.run("remove", "three", expect=2).stderr
    )
    assert fs.run("remove", one + "#top").stdout == f"removed {one} (its articles are kept)\n"


def test_exported_files_get_the_users_usual_mode(fs: FeedsyncEnv, site: Site) -> None:
    """mkstemp makes 0600 files: an export the user asked for is 0644 under umask 022
    (and follows any other umask), while the databases stay 0600."""
    fs.configure([site.feed("f.xml", [Item("One", site.page("one"))])])
    fs.run("run")
    out = fs.root / "out"
    out.mkdir()

    def export_with(umask: int, *args: str) -> None:
        done = subprocess.run(
            ["sh", "-c", f'umask {umask:03o} && exec "$@"', "sh", *fs.command(*args)],
            capture_output=True,
            text=True,
            env=cli_env(fs.root / "home"),
        )
        assert done.returncode == 0, done.stderr

    export_with(0o022, "export", "--output", str(out / "news.jsonl"))
    export_with(0o022, "export-opml", "--output", str(out / "feeds.opml"))
    export_with(0o027, "export", "--format", "csv", "--output", str(out / "news.csv"))
    assert (out / "news.jsonl").stat().st_mode & 0o777 == 0o644
    assert (out / "feeds.opml").stat().st_mode & 0o777 == 0o644
    assert (out / "news.csv").stat().st_mode & 0o777 == 0o640
    (out / "news.jsonl").chmod(0o600)  # the user's choice for an existing file is kept
    export_with(0o022, "export", "--output", str(out / "news.jsonl"))
    assert (out / "news.jsonl").stat().st_mode & 0o777 == 0o600
    assert fs.card_path.stat().st_mode & 0o777 == 0o600  # the database stays private


def test_feeds_puts_the_consequence_of_a_warning_first(fs: FeedsyncEnv, site: Site) -> None:
    """A feed declared UTF-8 but in ISO-8859-2, one entry without a link: the 80-column
    line says what that did to the feed, before the parser's complaint."""
    body = (
        '<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel>'
        "<title>Gazeta</title><link>http://example.com/</link>"
        f"<item><title>Łódź</title><link>{site.page('lodz')}</link></item>"
        "<item><title>no link here</title></item></channel></rss>"
    ).encode("iso-8859-2")
    feed = site.server.set("/gazeta.xml", body, "application/rss+xml")
    fs.configure([feed])
    fs.run("run")
    listing = fs.run("feeds", env={"COLUMNS": "80"}).stdout
    warning = next(line for line in listing.splitlines() if "warning:" in line)
    assert warning.startswith("    warning: parsed as "), listing
    assert warning.endswith("; 1 entry skipped: no link"), warning
    assert len(warning) <= 80


def test_an_empty_feed_with_a_recoverable_error_is_ok_with_its_warning(
    fs: FeedsyncEnv, site: Site
) -> None:
    """A hand-made feed with no items today and an entity XML does not define in its
    title: an ok poll with a warning, not a failing feed polled once a day."""
    body = (
        b'<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel>'
        b"<title>Noticias de Bogot&aacute;</title><link>http://example.com/</link>"
        b"<description>Hecho a mano</description></channel></rss>\n"
    )
    feed = site.server.set("/bogota.xml", body, "application/rss+xml")
    fs.configure([feed], poll={"failing_after": 2})
    fs.run("run")
    fs.run("run")
    assert site.hits("/bogota.xml") == 2
    (health,) = json.loads(fs.run("feeds", "--json").stdout)
    assert health["health"] == "ok", health
    assert (health["error_count"], health["last_error"]) == (0, None)
    assert health["last_success_at"] == health["last_poll_at"]
    assert health["title"] == "Noticias de Bogotá"
    assert health["last_warning"].startswith("no entries in the feed; malformed: ")
    assert "undefined entity" in health["last_warning"]
    listing = fs.run("feeds").stdout
    assert "    ok\n" in listing
    assert "    warning: no entries in the feed; malformed: " in listing
    assert fs.run("feeds", "--failing").stdout == "no feeds in trouble\n"


def test_status_names_the_command_that_lists_failed_articles(fs: FeedsyncEnv, site: Site) -> None:
    """A count of "1 failed, 1 given up" alone leaves the owner hunting for which ones:
    status names the listing, and the command it names lists them."""
    items = [Item("Fine", site.page("fine"))]
    feed = site.feed("news.xml", items)
    fs.configure([feed], extract={"retry_backoff": "1h"})
    fs.run("run")
    assert "which, and why" not in fs.run("status").stdout  # nothing to point at

    failing, removed = site.page("down", status=500), site.page("removed", status=410)
    site.feed("news.xml", [*items, Item("Down", failing), Item("Removed", removed)])
    fs.run("run", expect=None)
    text = fs.run("status", env={"COLUMNS": "80"}).stdout  # piped: whole, unless COLUMNS
    assert "queue      0 new, 1 failed (waiting to retry), 1 given up\n" in text, text
    hint = "           which, and why: feedsync news --state failed, or --state given-up\n"
    assert hint in text, text
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert failing in fs.run("news", "--state", "failed").stdout
    assert removed in fs.run("news", "--state", "given-up").stdout


def test_json_and_words_agree_with_the_terminal(fs: FeedsyncEnv, site: Site) -> None:
    """One wording for a feed without a title, null for "none yet" in --json, plurals."""
    empty = site.server.set(
        "/untitled.xml", '<rss version="2.0"><channel></channel></rss>', "application/rss+xml"
    )
    fs.configure([])
    added = fs.run("add", empty).stdout
    assert f"added {empty}: (no title yet), 0 entries staged" in added
    assert "[1] (no title yet)" in fs.run("feeds").stdout
    assert "| 0 entries" in fs.run("feeds").stdout
    (health,) = json.loads(fs.run("feeds", "--json").stdout)
    assert health["latest_published"] is None


def test_every_command_has_a_description_and_every_option_help() -> None:
    from feedsync.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        assert sub.description, name
        for action in sub._actions:
            assert action.help, (name, action.dest)
    help_text = subprocess.run(
        [sys.executable, "-m", "feedsync", "export", "--help"], capture_output=True, text=True
    ).stdout
    assert "one JSON object per line" in help_text


def test_run_json_says_whether_the_snapshot_was_written(fs: FeedsyncEnv, site: Site) -> None:
    fs.snapshot_path = fs.root / "card" / "feedsync.db"
    fs.configure([site.feed("f.xml", [Item("One", site.page("one"))])])
    first = fs.run_json()
    assert first["snapshot_written"] is True and first["snapshot_detail"] == "written"
    second = fs.run_json()
    assert second["snapshot_written"] is False
    assert second["snapshot_detail"] == "unchanged since the last save"
    assert second["snapshot"] == second["snapshot_detail"]  # the old key, kept


def test_snapshot_is_still_the_save_command(fs_card: FeedsyncEnv, site: Site) -> None:
    """`feedsync save` was `feedsync snapshot`: the old name, in crontabs and scripts,
    runs the same command with the same options, and the help says so."""
    from feedsync.cli import build_parser

    fs_card.configure([site.feed("f.xml", [Item("One", site.page("one"))])])
    fs_card.run("run")
    assert "nothing written" in fs_card.run("save").stdout
    assert "nothing written" in fs_card.run("snapshot").stdout
    assert "snapshot written: " in fs_card.run("snapshot", "--force").stdout
    parser = build_parser()
    assert parser.parse_args(["snapshot", "--force"]).force is True
    assert "save" in parser.commands and "snapshot" not in parser.commands  # one README section
    assert "save (snapshot)" in fs_card.run("--help").stdout
    assert "`feedsync snapshot`" in " ".join(fs_card.run("save", "--help").stdout.split())


# ---------------------------------------------------------------- a signal mid-extraction


def _queue(fs: FeedsyncEnv) -> dict[int, tuple[str, int, str | None]]:
    """Every staged article: its state, attempts and lease holder."""
    rows = fs.query("SELECT id, state, attempts, lease_owner FROM news_summary")
    return {row[0]: (row[1], row[2], row[3]) for row in rows}


def _stored(fs: FeedsyncEnv) -> int:
    """Articles in ``news``: 0 before the first run has made the database."""
    return int(fs.scalar("SELECT count(*) FROM news")) if fs.live_path.exists() else 0


def test_a_signal_during_extraction_stops_the_run_quietly_and_costs_no_attempt(
    fs: FeedsyncEnv, site: Site
) -> None:
    """Ctrl-C reaches every process of the terminal's foreground group (the extraction
    workers, the forkserver) and systemd's SIGTERM every process of the service: the run
    exits 130 without a traceback from any of them, the articles in flight go back to
    the queue with no attempt spent, and the next run extracts them all. Signals come at
    several points: while the pool starts (the first page request), while a worker is in
    the middle of pages (an article just stored), to the group and to feedsync alone."""
    pages = 14
    items = []
    for n in range(pages):
        # ~0.2 s of extraction each here: the worker is busy whenever the signal comes
        paragraphs = sitegen.prose(f"long-{n}", 1200, 4)
        html = sitegen.article_page(f"Long story {n}", seed=f"long-{n}", paragraphs=paragraphs)
        items.append(Item(f"Long story {n}", site.server.set(f"/articles/long-{n}", html)))
    fs.configure([site.feed("long.xml", items)], poll={"concurrency": 4})

    def hits() -> int:
        return sum(site.article_hits().values())

    rounds = [
        ("SIGINT to the group, as the pool starts", signal.SIGINT, True, "request"),
        ("SIGINT to the group, mid-extraction", signal.SIGINT, True, "stored"),
        ("SIGINT to the group, mid-extraction, again", signal.SIGINT, True, "stored"),
        ("SIGTERM to the group (systemd), mid-extraction", signal.SIGTERM, True, "stored"),
        ("SIGTERM to feedsync alone, as the pool starts", signal.SIGTERM, False, "request"),
    ]
    for what, signum, group, when in rounds:
        before_hits, before_stored = hits(), _stored(fs)
        run = fs.start("run")
        if when == "request":
            wait_until(lambda n=before_hits: hits() > n, f"{what}: a page request")
        else:
            wait_until(lambda n=before_stored: _stored(fs) > n, f"{what}: an article stored")
        if group:
            os.killpg(run.pid, signum)
        else:
            run.send_signal(signum)
        try:
            _, err = run.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            raise AssertionError(f"{what}: still running 60 s after the signal") from None
        assert run.returncode == 130, f"{what}: exit {run.returncode}\n{err}"
        assert "Traceback" not in err and "Error" not in err, f"{what}:\n{err}"
        assert "stopped early by a signal" in err, f"{what}:\n{err}"
        left = {i: row for i, row in _queue(fs).items() if row[0] != "done"}
        # in flight or waiting: back in the queue as they were, free for the next run
        assert all(row == ("new", 0, None) for row in left.values()), f"{what}: {left}"
        assert left, f"{what}: the run finished before the signal; make the pages longer"

    fs.run("run")
    queue = _queue(fs)
    assert len(queue) == pages and _stored(fs) == pages
    assert {row[:2] for row in queue.values()} == {("done", 1)}  # one attempt each, all kept


def test_ctrl_c_typed_at_a_terminal_during_extraction_is_clean(fs: FeedsyncEnv, site: Site) -> None:
    """Issue 22 item 3 as a user meets it: Ctrl-C typed at the terminal (the terminal, not
    the test, signals the foreground process group: feedsync, the forkserver, the
    workers) while articles are being extracted. The run says it stopped early and exits
    130, nothing prints a traceback, and the articles not stored are back in the queue
    with no attempt spent."""
    pages = 10
    items = []
    for n in range(pages):
        paragraphs = sitegen.prose(f"tty-{n}", 1200, 4)  # ~0.2 s of extraction each
        html = sitegen.article_page(f"Story {n}", seed=f"tty-{n}", paragraphs=paragraphs)
        items.append(Item(f"Story {n}", site.server.set(f"/articles/tty-{n}", html)))
    fs.configure([site.feed("tty.xml", items)], poll={"concurrency": 4})
    code, text = on_a_terminal(
        fs.command("run"),
        cli_env(fs.root / "home"),
        timeout=120,
        press=(lambda: _stored(fs) > 0, b"\x03"),
    )
    assert code == 130, text
    assert "Traceback" not in text and "Error" not in text, text
    assert "stopped early by a signal" in text, text
    left = {i: row for i, row in _queue(fs).items() if row[0] != "done"}
    assert left, "the run finished before Ctrl-C; make the pages longer"
    assert all(row == ("new", 0, None) for row in left.values()), left


def _session(sid: int) -> set[int]:
    """The live processes of session ``sid`` (a run started by FeedsyncEnv.start leads
    its own: its forkserver, resource tracker and extraction workers are in it)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # after the ")" that ends the command name: state, ppid, pgrp, session
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def _semaphores_of(pids: set[int]) -> set[Path]:
    """The multiprocessing semaphores in /dev/shm that these processes have mapped:
    this run's own, whatever other processes on the machine create meanwhile (glibc
    maps a semaphore under a temporary name before it links it to its real one, so
    they are matched by inode)."""
    inodes = set()
    for pid in pids:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        for line in maps.splitlines():
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/dev/shm/"):
                inodes.add(int(fields[4]))
    found = set()
    for path in Path("/dev/shm").glob("sem.mp-*"):
        try:
            if path.stat().st_ino in inodes:
                found.add(path)
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm")
def test_a_run_killed_alone_leaves_no_process_and_no_semaphore(fs: FeedsyncEnv, site: Site) -> None:
    """``kill -9`` of feedsync (or the OOM killer choosing it) during extraction: its
    extraction worker, forkserver and resource tracker end too, and the pool's named
    semaphores leave /dev/shm. They stayed until the next boot, the worker with its
    ~40 MB of trafilatura, one set per killed run (a small tmpfs on a Pi)."""
    items = []
    for n in range(8):
        paragraphs = sitegen.prose(f"long-{n}", 1200, 4)
        html = sitegen.article_page(f"Long story {n}", seed=f"long-{n}", paragraphs=paragraphs)
        items.append(Item(f"Long story {n}", site.server.set(f"/articles/long-{n}", html)))
    fs.configure([site.feed("long.xml", items)])
    run = fs.start("run")
    ours: set[Path] = set()
    try:
        wait_until(lambda: _stored(fs) > 0, "an article stored")
        ours = _semaphores_of(_session(run.pid))
        assert ours, "the run's pool has no semaphores in /dev/shm: nothing to check"
        run.kill()  # feedsync alone, not its process group
        run.wait(timeout=60)
        wait_until(lambda: not _session(run.pid), "every process of the run to end")
        left = {path.name for path in ours if path.exists()}
        assert not left, f"semaphores left in /dev/shm: {left}"
        assert _stored(fs) < len(items), "the run finished before the kill"
    finally:
        if _session(run.pid):  # the test failed: its own processes and semaphores go
            os.killpg(run.pid, signal.SIGKILL)
            wait_until(lambda: not _session(run.pid), "the killed run's processes to end")
            for path in ours:
                path.unlink(missing_ok=True)
        run.communicate(timeout=60)
