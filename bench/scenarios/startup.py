"""Scenario 7: start-up, what cron pays every few minutes.

feedsync: ``python -m feedsync --help``, a no-op ``feedsync run`` (one feed that
answers 304, nothing to extract; the live database on tmpfs with a snapshot folder, as
the per-user default), and cron's usual run, ``feedsync run --due`` with nothing due
(the feed polled a moment ago, its next poll minutes away), all as the CLI. Baseline:
the interpreter alone (``python -c pass``). One more run of each kind under
``PYTHONPROFILEIMPORTTIME=1`` tells what was imported (trafilatura, rich, lxml, httpx).
"""

from __future__ import annotations

import subprocess

from bench.common import Bench, Result
from bench.measure import BenchError, clean_env, last_json, measure
from bench.world import World, corpus_pages


def imported_modules(stderr: str) -> set[str]:
    return {
        line.split("|")[-1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:")
    }


def run(bench: Bench) -> Result:
    p = bench.params
    world = World(bench.server, "startup", 1, 5, pages=corpus_pages(), distinct_pages=True)
    live = bench.folder("startup", "live")
    card = bench.folder("startup", "card", disk=True)
    config = bench.config(
        live / "feedsync.toml", world.feed_urls, db=live / "feedsync.db",
        card=card / "feedsync.db",
    )  # fmt: skip
    run_command = bench.feedsync_command(config, "run", "--json")
    first = last_json(measure(run_command).stdout)  # the feed's entries, extracted
    if not first["extracted"]:
        raise BenchError(f"the start-up scenario's first run extracted nothing: {first}")

    due_command = bench.feedsync_command(config, "run", "--due", "--json")
    commands = {
        "help": bench.feedsync_command(config, "--help"),
        "noop": run_command,
        "due": due_command,
        "python": [bench.python, "-c", "pass"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    n = max(p.repeat, p.startup_repeat)
    for _ in range(n):
        for name, command in commands.items():
            done = measure(command)
            if name == "noop":
                stats = last_json(done.stdout)
                if stats["not_modified"] != 1 or stats["extracted"] or stats["staged"]:
                    raise BenchError(f"the no-op run did some work: {stats}")
            elif name == "due":
                stats = last_json(done.stdout)
                if stats["feeds"] or stats["extracted"] or stats["extract_failed"]:
                    raise BenchError(f"the run with nothing due did some work: {stats}")
            times[name].append(done.cost.wall)
            cpu[name].append(done.cost.cpu)

    heavy: dict[str, dict[str, bool]] = {}
    counts: dict[str, int] = {}
    for name, command in (("noop", run_command), ("due", due_command)):
        profiled = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=clean_env(PYTHONPROFILEIMPORTTIME="1"),
            timeout=120,
        )
        modules = imported_modules(profiled.stderr)
        heavy[name] = {m: m in modules for m in ("trafilatura", "rich", "lxml", "httpx")}
        counts[name] = len(modules)

    result = Result(
        7,
        "Start-up: `feedsync --help` and a `feedsync run` with nothing new",
        "the feedsync CLI",
        "`python -c pass` (the interpreter alone)",
    )
    result.row("`--help` wall time", "s", times["help"], times["python"], digits=3)
    result.row("no-op `run` wall time (1 feed, 304)", "s", times["noop"], times["python"], digits=3)
    result.row("no-op `run` CPU time", "s", cpu["noop"], cpu["python"], digits=3)
    result.row(
        "`run --due` with nothing due (cron's usual run), CPU time",
        "s",
        cpu["due"],
        cpu["python"],
        digits=3,
    )
    result.details = {
        "imported_by_noop_run": heavy["noop"],
        "modules_imported_by_noop_run": counts["noop"],
        "imported_by_due_run": heavy["due"],
        "modules_imported_by_due_run": counts["due"],
        "runs": n,
    }
    verdict = "was NOT" if not heavy["noop"]["trafilatura"] else "WAS"
    result.notes.append(
        f"trafilatura {verdict} imported by the no-op run (rich: "
        f"{'imported' if heavy['noop']['rich'] else 'not imported'}; "
        f"{counts['noop']} modules in all). The run with nothing due imported "
        f"{counts['due']} modules, httpx {'among them' if heavy['due']['httpx'] else 'not'}."
    )
    return result
