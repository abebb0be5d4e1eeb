"""``python -m bench``: run every scenario, write RESULTS.md and results.json.

    .venv/bin/python -m bench                      # full sizes, 5 runs: bench/RESULTS.md
    .venv/bin/python -m bench --quick --output DIR # tiny sizes, 1 run (CI)
    .venv/bin/python -m bench --only 1,2,7 --output DIR  # some scenarios (4 also runs 1-3)
    .venv/bin/python -m bench --render             # RESULTS.md again from results.json
    .venv/bin/python -m bench --only 8 --merge     # run 8, put it into the existing results

Exit status: 0 when every scenario ran, 1 when one failed (the others still run and the
report says which failed and why), 2 for bad arguments. A scenario that cannot run on
this machine (8 and 10 without PostgreSQL) is reported as skipped, with the reason: not a failure.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import baseline
from bench.common import BENCH, Bench, Params, Result
from bench.measure import BenchError, machine
from bench.report import merge, render, write
from bench.scenarios import (
    extract,
    ingest,
    latency,
    memory,
    pg_scale,
    scale,
    serve,
    startup,
    writes,
    year,
)

SCENARIOS = set(range(1, 12))

QUICK_OUTPUT = BENCH / "quick-results"


def _scenarios(text: str) -> set[int]:
    try:
        chosen = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,3,7, got {text!r}") from None
    if not chosen or not chosen <= SCENARIOS:
        raise argparse.ArgumentTypeError(f"scenarios are 1 to {max(SCENARIOS)}, got {text!r}")
    return chosen


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 1 run (CI)")
    parser.add_argument(
        "--output",
        type=Path,
        help=f"folder for RESULTS.md and results.json (default: bench/, or {QUICK_OUTPUT.name}/"
        " under bench/ with --quick)",
    )
    parser.add_argument("--only", type=_scenarios, help="scenarios to run, e.g. 1,3,7")
    parser.add_argument("--repeat", type=int, help="runs per side (default 5; quick: 1)")
    parser.add_argument("--feeds", type=int, help="N feeds (default 200)")
    parser.add_argument("--entries", type=int, help="M entries per feed (default 50)")
    parser.add_argument("--articles", type=int, help="K articles to extract (default 100)")
    parser.add_argument("--pg-feeds", type=int, help="feeds polled in scenario 8 (default 2000)")
    parser.add_argument(
        "--latency-feeds", type=int, help="feeds polled in scenario 10 (default 400)"
    )
    parser.add_argument(
        "--serve-articles", type=int, help="articles scenario 11 serves (default 100000)"
    )
    parser.add_argument("--serve-days", type=int, help="days of fetching they span (default 120)")
    parser.add_argument(
        "--latency-sqlite",
        action="store_true",
        help="scenario 10 also on SQLite (1, 2 and 4 daemons on one file; twice the time)",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="put the scenarios run (--only) into the existing results.json instead of"
        " replacing it, then write RESULTS.md again from the whole",
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="measure nothing: write RESULTS.md again from results.json (after editing"
        " analysis.md)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch folders")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return parser.parse_args(argv)


def compile_feedsync() -> None:
    """feedsync's modules compiled to bytecode before anything is measured, as pip does
    when it installs a package (install.sh), so that every measured run loads them as a
    user's install does. The measured commands do not write bytecode (clean_env), and a
    checkout that never had it (a fresh clone, a shell with PYTHONDONTWRITEBYTECODE) would
    otherwise compile every module in every run: ~0.1 s of a no-op `feedsync run` here."""
    import compileall

    import feedsync

    compileall.compile_dir(Path(feedsync.__file__).parent, quiet=1)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    params = Params.quick_mode() if args.quick else Params()
    overrides = {
        name: getattr(args, name)
        for name in (
            "repeat",
            "feeds",
            "entries",
            "articles",
            "pg_feeds",
            "latency_feeds",
            "serve_articles",
            "serve_days",
        )
        if getattr(args, name) is not None
    }
    if any(v < 1 for v in overrides.values()):
        print("python -m bench: sizes and --repeat must be at least 1", file=sys.stderr)
        return 2
    params = replace(params, **overrides)
    if args.latency_sqlite:
        params = replace(params, latency_sqlite=True)
    output = args.output or (QUICK_OUTPUT if args.quick else BENCH)
    if args.render:
        try:
            print(f"python -m bench: wrote {render(output)}", file=sys.stderr)
        except (OSError, ValueError, KeyError) as exc:
            where = output / "results.json"
            print(f"python -m bench: cannot render {where}: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.merge and not (output / "results.json").exists():
        print(f"python -m bench: --merge needs {output / 'results.json'}", file=sys.stderr)
        return 2
    if (
        args.only
        and not args.merge
        and output.resolve() == BENCH.resolve()
        and (output / "results.json").exists()
    ):
        # the committed figures of every scenario would be replaced by these few
        print(
            "python -m bench: --only would replace bench/results.json (every scenario's "
            "figures) with these alone: add --merge, or --output DIR",
            file=sys.stderr,
        )
        return 2
    chosen = args.only or set(SCENARIOS)
    if 4 in chosen:
        chosen |= {1, 2, 3}  # scenario 4 reports the memory of 1 and 3's runs

    started = time.monotonic()
    compile_feedsync()
    bench = Bench(params, keep=args.keep, verbose=not args.quiet)
    output.mkdir(parents=True, exist_ok=True)
    bench.output = output
    results: list[Result] = []
    failures: dict[int, str] = {}
    skipped: dict[int, str] = {}
    reader: str | None = None
    sides: dict[str, Any] = {}  # the raw runs of 1-2 and 3, for scenario 4

    def attempt(numbers: tuple[int, ...], step: Callable[[], list[Result]]) -> None:
        begun = time.monotonic()
        try:
            made = step()
        except pg_scale.Skipped as exc:
            bench.log(f"scenario {numbers} SKIPPED: {exc}")
            for number in numbers:
                skipped[number] = str(exc)
            return
        except (BenchError, OSError, ValueError, KeyError, AssertionError) as exc:
            detail = str(exc) if isinstance(exc, BenchError) else traceback.format_exc()
            bench.log(f"scenario {numbers} FAILED: {detail or exc!r}", always=True)
            for number in numbers:
                failures[number] = detail or repr(exc)
            return
        for result in made:
            result.seconds = round(time.monotonic() - begun, 1)  # as results.json has it
            results.append(result)

    try:
        bench.log(f"bench: scratch space {bench.ram} (RAM) and {bench.disk} (disk)")
        if chosen & {1, 2}:

            def step_ingest() -> list[Result]:
                cold, steady, ours, theirs = ingest.run(bench)
                sides["ingest"] = (ours, theirs)
                return [r for r in (cold, steady) if r.number in chosen]

            attempt((1, 2), step_ingest)
            with contextlib.suppress(BenchError):
                reader = baseline.ensure(bench.log)
        if 3 in chosen:

            def step_extract() -> list[Result]:
                result, ours, theirs = extract.run(bench)
                sides["extract"] = (ours, theirs)
                return [result]

            attempt((3,), step_extract)
        if 4 in chosen:
            if "ingest" in sides and "extract" in sides:
                attempt((4,), lambda: [memory.run(bench, sides["ingest"], sides["extract"])])
            else:
                failures[4] = "needs the runs of scenarios 1 and 3, which failed"
        if 5 in chosen:
            attempt((5,), lambda: [writes.run(bench)])
        if 6 in chosen:
            attempt((6,), lambda: [scale.run(bench)])
        if 7 in chosen:
            attempt((7,), lambda: [startup.run(bench)])
        if 8 in chosen:
            attempt((8,), lambda: [pg_scale.run(bench)])
        if 9 in chosen:
            attempt((9,), lambda: [year.run(bench)])
        if 10 in chosen:
            attempt((10,), lambda: [latency.run(bench)])
        if 11 in chosen:
            attempt((11,), lambda: [serve.run(bench)])
    finally:
        bench.close()

    command = "python -m bench " + shlex.join(argv if argv is not None else sys.argv[1:])
    if args.merge:
        md, js = merge(
            output,
            results,
            failures,
            chosen=chosen,
            params=params,
            command=command.strip(),
            seconds=time.monotonic() - started,
            machine=machine(),
            skipped=skipped,
        )
    else:
        md, js = write(
            output,
            results,
            failures,
            params=params,
            machine=machine(),
            reader=reader,
            command=command.strip(),
            seconds=time.monotonic() - started,
            skipped=skipped,
        )
    bench.log(
        f"bench: wrote {md} and {js} ({len(results)} scenarios, {len(failures)} failed, "
        f"{len(skipped)} skipped)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
