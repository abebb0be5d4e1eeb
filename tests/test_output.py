"""Output that tells the whole truth (issue 43, items 5-10), through the real CLI, and
the README's command reference held to the program's grammar for every command."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

import sitegen
from conftest import FeedsyncEnv, RunningDaemon, Site, cli_env, on_a_terminal, wait_until
from sitegen import Item

from feedsync.cli.parser import build_parser
from feedsync.records import RunStats

README = Path(__file__).resolve().parent.parent / "README.md"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def at_terminal(command: list[str], environment: dict[str, str], columns: int) -> tuple[int, str]:
    """``command`` on a pseudo-terminal ``columns`` wide; its exit code and what it
    printed, without colours."""
    code, output = on_a_terminal(command, environment, timeout=180, columns=columns)
    return code, ANSI.sub("", output).replace("\r\n", "\n")


def _without_columns(fs: FeedsyncEnv) -> dict[str, str]:
    env = cli_env(fs.root / "home")
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    return env


# ---------------------------------------------------------------- 5: widths


def test_piped_output_is_whole_and_a_terminal_keeps_host_port_and_the_last_segment(
    fs: FeedsyncEnv, site: Site
) -> None:
    slug = "2026/11/23/regional-news/council-approves-harbour-wall-repairs"
    url = site.page(slug, "Council approves harbour wall repairs")
    feed = site.feed("a-regional-news-feed-with-a-rather-long-name-indeed.xml", [Item("Wall", url)])
    fs.configure([feed])
    fs.run("run")
    host_port = url.split("/")[2]
    last = url.rsplit("/", 1)[1]

    # piped (no COLUMNS): every value whole, however long the line
    env = _without_columns(fs)
    piped = subprocess.run(fs.command("news"), capture_output=True, text=True, env=env)
    assert url in piped.stdout, piped.stdout
    assert (
        feed in subprocess.run(fs.command("feeds"), capture_output=True, text=True, env=env).stdout
    )

    # piped with COLUMNS: that width, the URL shortened by whole segments in its middle
    narrow = subprocess.run(
        fs.command("news"), capture_output=True, text=True, env={**env, "COLUMNS": "90"}
    )
    url_line = next(line for line in narrow.stdout.splitlines() if host_port in line)
    assert url not in narrow.stdout and "/…/" in url_line
    assert f"http://{host_port}/…/" in url_line and url_line.endswith(last)
    assert all(len(line) <= 90 for line in narrow.stdout.splitlines()), narrow.stdout

    # on a terminal 80 columns wide: the host and its port always, the end whole
    code, text = at_terminal(fs.command("news"), env, columns=80)
    assert code == 0, text
    url_line = next(line for line in text.splitlines() if host_port in line)
    assert f"http://{host_port}/" in url_line, text
    assert url_line.endswith(last), text
    titles = [line for line in text.splitlines() if line.startswith("[")]
    assert titles and all(len(line) <= 80 for line in titles), text
    code, text = at_terminal(fs.command("feeds"), env, columns=80)
    assert code == 0 and f"http://{host_port}/" in text, text


# ---------------------------------------------------------------- 6: lists cut short


def test_lists_say_when_they_are_cut_and_all_shows_every_one(fs: FeedsyncEnv, site: Site) -> None:
    good = [Item(f"Harbour story {n}", site.page(f"good-{n}")) for n in range(22)]
    bad = [
        Item(f"Missing story {n}", site.server.set(f"/articles/bad-{n}", "gone", status=404))
        for n in range(21)
    ]
    fs.configure([site.feed("f.xml", good + bad)])
    fs.run("run")

    shown = fs.run("news")
    assert shown.stdout.count("\n[") + shown.stdout.startswith("[") == 20
    assert shown.stderr == "feedsync: 20 of 22 shown (--limit N, or --all)\n"
    for every in (["--all"], ["--limit", "0"]):
        done = fs.run("news", *every)
        assert done.stdout.count("Harbour story") == 22 and done.stderr == "", every
    assert len(json.loads(fs.run("news", "--all", "--json").stdout)) == 22
    assert fs.run("news", "--limit", "22").stderr == ""  # all of them: nothing to say

    failed = fs.run("news", "--state", "failed")
    assert failed.stdout.count("Missing story") == 20
    assert failed.stderr == "feedsync: 20 of 21 shown (--limit N, or --all)\n"
    assert fs.run("news", "--state", "failed", "--all").stdout.count("Missing story") == 21

    hits = fs.run("search", "harbour")
    assert hits.stdout.count("Harbour story") == 20
    assert hits.stderr == "feedsync: the first 20, more found, shown (--limit N, or --all)\n"
    assert fs.run("search", "harbour", "--all").stdout.count("Harbour story") == 22
    assert len(json.loads(fs.run("search", "harbour", "--limit", "0", "--json").stdout)) == 22

    refused = fs.run("news", "--limit", "3", "--all", expect=2)
    assert "not allowed with" in refused.stderr
    assert "at most N" in fs.run("news", "--help").stdout  # and "0: all of them"
    assert "0: all of them" in fs.run("search", "--help").stdout


# ---------------------------------------------------------------- 7: help, README, program


def test_help_readme_and_program_agree_on_accents_formats_and_messages(
    fs: FeedsyncEnv, site: Site
) -> None:
    """The accents themselves, on both engines: tests/test_search.py."""
    fs.configure([site.feed("f.xml", [Item("Neue Gebühren im Hafen", site.page("fees"))])])
    fs.run("run")
    for query in ("gebuhren", "Gebühren", "GEBUHREN"):
        found = json.loads(fs.run("search", query, "--json").stdout)
        assert [h["title"] for h in found] == ["Neue Gebühren im Hafen"], query
    readme = README.read_text(encoding="utf-8")
    assert "accents do not matter" in fs.run("search", "--help").stdout
    assert "Neither case\nnor accents matter" in readme

    assert "RSS, Atom and JSON feeds" in fs.run("--help").stdout
    pyproject = (README.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert "RSS, Atom and JSON feeds" in pyproject and "RSS/Atom" not in pyproject

    # the error README quotes for a page that names no feed is the one printed
    quoted = re.search(r"\$ feedsync add (\S+/about)\n(feedsync: error: .*)\n", readme)
    assert quoted is not None
    page = site.server.set("/about", "<html><head><title>About</title></head></html>")
    done = fs.run("add", page, expect=2)
    assert done.stderr == quoted.group(2).replace(quoted.group(1), page) + "\n"


# ---------------------------------------------------------------- 8, and 10's two runs: the summary


def test_readme_lists_every_key_of_run_json(fs: FeedsyncEnv) -> None:
    readme = README.read_text(encoding="utf-8")
    listed = re.search(r"`--json` prints the counters as one JSON object\n\(`([^`]*)`", readme)
    assert listed is not None
    documented = {k.strip() for k in listed.group(1).split(",")}
    printed = set(fs.run_json())
    assert documented == printed, documented ^ printed
    assert {f.name for f in fields(RunStats)} <= documented


def test_the_summary_says_duplicates_were_fetched_but_not_stored_twice(
    fs: FeedsyncEnv, site: Site
) -> None:
    canonical = site.url("/articles/harbour-wall")
    copies = [
        site.server.set(
            path, sitegen.article_page("Harbour wall repaired", "wall", canonical=canonical)
        )
        for path in ("/wire/harbour-wall", "/partner/harbour-wall-story")
    ]
    wire = site.feed("wire.xml", [Item("Harbour wall repaired", copies[0])])
    fs.configure([wire])
    fs.run("run")
    partner = site.feed("partner.xml", [Item("Harbour wall repaired", copies[1])])
    fs.configure([wire, partner])
    summary = fs.run("run").stdout
    assert site.hits("/partner/harbour-wall-story") == 1  # its page was fetched...
    assert "; 1 duplicate linked, not stored twice" in summary  # ...then found a copy
    assert "not fetched twice" not in summary
    assert fs.scalar("SELECT count(*) FROM news") == 1


def test_a_run_beside_another_says_what_the_other_one_holds(fs: FeedsyncEnv, site: Site) -> None:
    slow = site.page("slow", "Slow story", delay=60)  # the first run holds it a while
    fs.configure([site.feed("f.xml", [Item("Slow story", slow)])])
    first = fs.start("run")
    try:

        def held() -> bool:
            try:
                rows = fs.query("SELECT 1 FROM news_summary WHERE lease_owner IS NOT NULL")
            except sqlite3.OperationalError:  # no database yet
                return False
            return bool(rows) and site.article_hits().get("/articles/slow", 0) > 0

        wait_until(held, "the first run fetching the slow page", timeout=120)
        second = fs.run("run")
        assert "0 articles extracted" in second.stdout
        assert "1 article left to another run working on them" in second.stdout
        assert json.loads(fs.run("run", "--json").stdout)["articles_busy"] == 1
    finally:
        os.killpg(first.pid, signal.SIGTERM)
        first.communicate(timeout=120)


# ---------------------------------------------------------------- 9: demo --keep


def _demo(tmp_path: Path, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    (tmp_path / "home").mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "feedsync", "demo", *args],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path / "home"),
        timeout=300,
    )
    assert done.returncode == expect, done.stdout + done.stderr
    return done


def test_demo_keep_twice_into_one_folder_leaves_a_true_database(tmp_path: Path) -> None:
    keep = tmp_path / "kept"
    for _ in range(2):
        done = _demo(tmp_path, "--keep", str(keep))
        assert "3 feeds polled, 9 entries read, 6 distinct articles staged." in done.stdout
        assert "3 entries repeated an article" in done.stdout
    assert "in place of the one an earlier demo kept there" in done.stdout

    config = ["--config", str(keep / "feedsync.toml")]
    read = subprocess.run(
        [sys.executable, "-m", "feedsync", *config, "feeds", "--json"],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path / "home"),
        check=True,
    )
    feeds = json.loads(read.stdout)
    assert len(feeds) == 3  # not six: the first demo's are gone with its database
    assert {f["health"] for f in feeds} == {
        "DISABLED: the demo's sample site, served only while the demo ran"
    }
    with sqlite3.connect(keep / "feedsync.db") as conn:
        assert conn.execute("SELECT count(*) FROM news").fetchone() == (6,)

    # a folder with a database no demo wrote: refused, untouched
    other = tmp_path / "other"
    other.mkdir()
    (other / "feedsync.db").write_bytes(b"mine")
    refused = _demo(tmp_path, "--keep", str(other), expect=2)
    assert "no demo wrote" in refused.stderr
    assert (other / "feedsync.db").read_bytes() == b"mine"


# ---------------------------------------------------------------- 10: the smaller ones


def test_status_after_a_reboot_says_when_the_daemon_was_last_seen(
    fs_card: FeedsyncEnv, site: Site, start_daemon: Callable[..., RunningDaemon]
) -> None:
    fs = fs_card
    fs.configure([site.feed("f.xml", [Item("Story", site.page("story"))])])
    fs.run("run")  # the databases exist, the card is current: the daemon adds nothing
    assert "never started here" in fs.run("status").stdout
    daemon = start_daemon()
    wait_until(
        lambda: bool(fs.query("SELECT 1 FROM meta WHERE key = 'daemon_seen_at'")),
        "the daemon's first heartbeat",
        timeout=120,
    )
    assert daemon.stop(timeout=120) == 0, daemon.output()
    with sqlite3.connect(fs.card_path) as card:  # its last heartbeat went to the card
        assert card.execute("SELECT value FROM meta WHERE key = 'daemon_seen_at'").fetchone()

    for path in fs.live_path.parent.glob(fs.live_path.name + "*"):  # the RAM disk, rebooted
        path.unlink()
    status = fs.run("status")
    assert "never started here" not in status.stdout
    assert re.search(r"daemon +not running \(last seen \d{4}-\d\d-\d\d \d\d:\d\dZ\)", status.stdout)


def test_status_and_its_json_name_given_up_articles_alike(fs: FeedsyncEnv, site: Site) -> None:
    missing = site.server.set("/articles/missing", "gone", status=404)
    fs.configure([site.feed("f.xml", [Item("Missing", missing)])], extract={"max_attempts": 1})
    fs.run("run")
    assert "0 failed (waiting to retry), 1 given up" in fs.run("status").stdout
    queue = json.loads(fs.run("status", "--json").stdout)["queue"]
    assert queue["given_up"] == queue["gone"] == 1


def test_an_opml_title_with_quotes_and_an_ampersand_is_kept_whole(
    fs: FeedsyncEnv, tmp_path: Path
) -> None:
    opml = tmp_path / "subscriptions.opml"
    opml.write_text(
        '<?xml version="1.0"?>\n<opml version="2.0"><body>\n'
        '<outline text="AT&T "quoted" blog" type="rss" xmlUrl="https://att.example/feed"/>\n'
        "</body></opml>\n",
        encoding="utf-8",
    )
    fs.run("import-opml", str(opml))
    [feed] = json.loads(fs.run("feeds", "--json").stdout)
    assert feed["title"] == 'AT&T "quoted" blog'


def test_add_takes_a_feed_link_as_import_opml_does(fs: FeedsyncEnv, site: Site) -> None:
    url = site.feed("news.xml", [Item("One", site.page("one"))])
    done = fs.run("add", url.replace("http://", "feed://"))
    assert done.stdout.startswith(f"added {url}: ")
    again = fs.run("add", "feed:" + url).stdout
    assert again.startswith(f"already there: [1] {url}; not fetched again"), again


# ---------------------------------------------------------------- README and --help


def _code(text: str) -> list[str]:
    """The code in a piece of README: each `span`, and each line of a ``` block."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.DOTALL)
    rest = re.sub(r"```[^\n]*\n.*?```", "", text, flags=re.DOTALL)
    return re.findall(r"`([^`\n]+)`", rest) + [line for b in blocks for line in b.splitlines()]


# --long, or -x (one letter: "-plumber" is a search's excluded word, not an option)
_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*|-[A-Za-z](?![\w-]))")


def _own_words(text: str) -> list[str]:
    """The words of a command line up to where another program's begin (a pipe, ``;``,
    ``&&``, a redirection), outside ``[...]``: ``[--limit N | --all]`` is one usage."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth <= 0 and char in "|;&>)":
            return text[:i].split()
    return text.split()


def _commands_in(code: str, names: set[str]) -> list[tuple[str, list[str]]]:
    """Each ``feedsync [global options] CMD args`` in a line of code, with the flags
    it gives CMD (up to a pipe or the like: ``| logger -t`` is another program's)."""
    found = []
    for match in re.finditer(r"(?<![\w./-])feedsync((?: +\S+)+)", code):
        words = _own_words(match.group(1))
        while words and words[0].startswith("-"):  # --config FILE, --debug before it
            words = words[2:] if words[0] == "--config" else words[1:]
        if words and words[0] in names:
            found.append((words[0], _FLAG.findall(" ".join(words[1:]))))
    return found


def test_readme_command_reference_and_argparse_agree_for_every_command() -> None:
    """Every command has a "### `feedsync CMD ...`" section in the README; every option
    of it (but the ones every command takes: --config, --debug, --help) is named in its
    section; and every flag the README gives a command, anywhere, is one it has. Read
    from the parser itself, so an option added to the program and not to the README (or
    the other way round) fails here."""
    parser = build_parser()
    commands = parser.commands
    names = set(commands)
    everywhere = {s for strings in parser.options() for s in strings} | {"--config", "--debug"}
    readme = README.read_text(encoding="utf-8")

    sections: dict[str, list[str]] = {name: [] for name in names}  # command -> its text
    for section in re.split(r"\n(?=#{2,3} )", readme):
        heading = section.split("\n", 1)[0]
        if not heading.startswith("### "):
            continue
        for span in re.findall(r"`([^`]+)`", heading):
            for name, _ in _commands_in(span, names):
                sections[name].append(section)
    assert not [n for n, s in sections.items() if not s], "commands without a README section"

    wrong = []
    for code in _code(readme):  # every flag given to a command exists for it
        for name, flags in _commands_in(code, names):
            known = {s for strings in commands[name].options() for s in strings}
            wrong += [f"{name} {flag}" for flag in flags if flag not in known | everywhere]
    assert not wrong, f"the README gives commands flags they do not have: {wrong}"

    missing = []
    for name, parts in sections.items():
        named: set[str] = set()
        for part in parts:
            for code in _code(part):
                if code.lstrip().startswith("--"):  # `--json`, `--limit N`: this command's
                    named.update(f for f in _FLAG.findall(code) if f.startswith("--"))
                named.update(f for cmd, flags in _commands_in(code, names) if cmd == name
                             for f in flags)  # fmt: skip
        for strings in commands[name].options():
            if set(strings) & {"-h", "--help", "--config", "--debug"}:
                continue
            if not set(strings) & named:
                missing.append(f"{name} {'/'.join(strings)}")
        # what the section names as this command's own options, it has
        own = {s for strings in commands[name].options() for s in strings} | everywhere
        others = {s for n in sections if n != name for strings in commands[n].options()
                  for s in strings}  # fmt: skip
        stale = named - own - others
        assert not stale, f"README's section of {name} names options nothing has: {stale}"
    assert not missing, f"options the README's command reference does not name: {missing}"
