"""RESULTS.md and results.json from the scenarios' results.

The Markdown has the summary table (scenario, metric, feedsync and baseline as
min / median / max, the ratio of the medians, machine, date), then one section per
scenario with what ran on each side, the measured facts, and the analysis paragraph kept
in bench/analysis.md (written by hand from a full run; not included in quick mode).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bench.common import BENCH, Params, Result, Row
from bench.measure import machine_short

ANALYSIS = BENCH / "analysis.md"


def versions(reader: str | None) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in ("feedsync", "trafilatura", "feedparser", "httpx", "lxml"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "?"
    if reader:
        found["reader (baseline venv)"] = reader
    return found


def _number(value: float, digits: int) -> str:
    if digits == 0:
        return f"{value:,.0f}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def _cell(row: Row, side: str) -> str:
    s = row.feedsync if side == "feedsync" else row.baseline
    unit = f" {row.unit}" if row.unit else ""
    if s.min == s.max:
        return f"{_number(s.median, row.digits)}{unit}"
    return (
        f"{_number(s.min, row.digits)} / **{_number(s.median, row.digits)}** / "
        f"{_number(s.max, row.digits)}{unit}"
    )


def verdict(row: Row) -> str:
    ratio = row.ratio
    if ratio is None:
        return "–" if row.feedsync.median == 0 else "∞"
    text = f"{ratio:.2f}×"
    if row.lower_is_better is None:  # growth: 1.00 is the goal
        change = (ratio - 1) * 100
        return f"{text} (flat)" if abs(change) < 2 else f"{text} ({change:+.0f}%)"
    better = ratio < 1 if row.lower_is_better else ratio > 1
    if abs(ratio - 1) < 0.05:
        return f"{text} (≈ same)"
    return f"{text} ({'better' if better else 'worse'})"


def analysis_sections() -> dict[int, str]:
    """Scenario number -> its hand-written paragraph(s), from bench/analysis.md; 0 -> the
    text before the first scenario (about the whole run), without the file's title. A
    section whose heading is not a scenario's number (a choice measured by a driver of its
    own, such as feedsync serve's HTTP server) is not a scenario's: left out."""
    if not ANALYSIS.exists():
        return {}
    sections: dict[int, str] = {}
    current = 0
    lines: list[str] = []
    for line in ANALYSIS.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^## (\d+)?", line)
        if heading:
            sections[current] = "\n".join(lines).strip()
            current, lines = int(heading.group(1) or -1), []
        elif not line.startswith("# "):
            lines.append(line)
    sections[current] = "\n".join(lines).strip()
    return {number: text for number, text in sections.items() if text and number >= 0}


def write(
    output: Path,
    results: list[Result],
    failures: dict[int, str],
    *,
    params: Params,
    machine: dict[str, Any],
    reader: str | None,
    command: str,
    seconds: float,
    skipped: dict[int, str] | None = None,
) -> tuple[Path, Path]:
    output.mkdir(parents=True, exist_ok=True)
    seconds = round(seconds, 1)  # as results.json keeps it, so that render() agrees
    stamp = datetime.now(UTC)
    skipped = skipped or {}
    data = {
        "mode": "quick" if params.quick else "full",
        "date": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine,
        "versions": versions(reader),
        "params": params.__dict__,
        "command": command,
        "seconds": round(seconds, 1),
        "scenarios": [r.as_dict() for r in sorted(results, key=lambda r: r.number)],
        "failures": {str(k): v for k, v in failures.items()},
        "skipped": {str(k): v for k, v in skipped.items()},
    }
    return _save(output, data)


def _save(output: Path, data: dict[str, Any]) -> tuple[Path, Path]:
    json_path = output / "results.json"
    json_path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return render(output), json_path


def merge(
    output: Path,
    results: list[Result],
    failures: dict[int, str],
    *,
    chosen: set[int],
    params: Params,
    command: str,
    seconds: float,
    machine: dict[str, Any],
    skipped: dict[int, str] | None = None,
) -> tuple[Path, Path]:
    """Put the scenarios just run into an existing results.json (``--merge``): their
    entries replace those of the same numbers (results, failures, skips), the others stay
    as they were measured; each merged scenario keeps its own date, and the run is listed
    under "merged". Then RESULTS.md is written again from the whole."""
    path = output / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if data["mode"] != ("quick" if params.quick else "full"):
        raise ValueError(f"{path} is a {data['mode']} run: merge runs of the same mode")
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for result in results:
        result.date = stamp
    kept = [s for s in data["scenarios"] if s["scenario"] not in chosen]
    data["scenarios"] = sorted(
        kept + [r.as_dict() for r in results], key=lambda s: int(s["scenario"])
    )
    for key, new in (("failures", failures), ("skipped", skipped or {})):
        old = {k: v for k, v in data.get(key, {}).items() if int(k) not in chosen}
        data[key] = dict(sorted({**old, **{str(k): v for k, v in new.items()}}.items()))
    for name, value in params.__dict__.items():  # sizes of the new scenarios, if new
        data["params"].setdefault(name, value)
    data.setdefault("merged", []).append(
        {
            "scenarios": sorted(chosen),
            "date": stamp,
            "command": command,
            "seconds": round(seconds, 1),
            "machine": machine,
        }
    )
    return _save(output, data)


def render(output: Path) -> Path:
    """Write RESULTS.md again from results.json, e.g. after editing analysis.md: the
    figures stay those of the run."""
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    results = [Result.from_dict(s) for s in data["scenarios"]]
    failures = {int(k): v for k, v in data["failures"].items()}
    skipped = {int(k): v for k, v in data.get("skipped", {}).items()}
    params = Params(**data["params"])
    md_path = output / "RESULTS.md"
    md_path.write_text(
        _markdown(data, results, failures, params, data["seconds"], skipped), encoding="utf-8"
    )
    return md_path


def _markdown(
    data: dict[str, Any],
    results: list[Result],
    failures: dict[int, str],
    params: Params,
    seconds: float,
    skipped: dict[int, str] | None = None,
) -> str:
    skipped = skipped or {}
    machine = data["machine"]
    short = machine_short(machine)
    day = data["date"][:10]
    mode = (
        "quick mode (tiny sizes, 1 run: checks the harness, not the speed)"
        if params.quick
        else (f"full run, {params.repeat} runs per side")
    )
    out = [
        "# feedsync benchmark results",
        "",
        f"Measured {data['date'].replace('T', ' ')} ({mode}), in {seconds / 60:.0f} minutes.",
        "",
        f"**Machine**: {machine['cpu']}, {machine['cores']} cores, {machine['ram_gb']:g} GB RAM, "
        f"Linux {machine['kernel']} ({machine['arch']}), Python {machine['python']}, "
        f"SQLite {machine['sqlite']}. A shared virtual machine: other work runs beside the "
        "bench and absolute times move from run to run; compare the ratios (both sides are "
        "measured in the same run, interleaved) and the medians.",
        "",
        "**Versions**: " + ", ".join(f"{name} {ver}" for name, ver in data["versions"].items()),
        "",
        "**Reproduce** (from the repository root, in the dev venv): `.venv/bin/python -m bench`"
        " (writes bench/RESULTS.md and bench/results.json). `.venv/bin/python -m bench --quick"
        " --output /tmp/bench-quick` runs every scenario at tiny sizes (what CI does).",
        "",
        f"Sizes: N = {params.feeds} feeds x M = {params.entries} entries, K = {params.articles}"
        f" articles, feedsync `[poll] concurrency = per_host = {params.concurrency}`, "
        f'`[extract] workers = {params.workers}`, `[fetch] host_delay = "0s"` (one loopback '
        "host). Cells are min / **median** / max over the runs; the ratio is feedsync's median "
        "over the baseline's (for times and sizes below 1 is better for feedsync). "
        f"Scenario 8: {params.pg_feeds:,} feeds x {params.pg_entries} entries. Scenario 10: "
        f"{params.latency_feeds:,} feeds x {params.latency_entries} entries, each answered "
        f"after {params.latency_delay * 1000:.0f} ms.",
        "",
    ]
    for merged in data.get("merged", []):
        numbers = ", ".join(str(n) for n in merged["scenarios"])
        other = merged.get("machine")
        where = (
            "on the same machine"
            if not other or machine_short(other) == short
            else f"on {machine_short(other)}"
        )
        out += [
            f"Scenario{'s' if len(merged['scenarios']) > 1 else ''} {numbers} measured later, "
            f"{merged['date'].replace('T', ' ')}, {where} (`{merged['command']}`, "
            f"{merged['seconds'] / 60:.0f} minutes), merged into this run's results.",
            "",
        ]
    analysis = {} if params.quick else analysis_sections()
    if 0 in analysis:
        out += [analysis[0], ""]
    out += [
        "| # | scenario | metric | feedsync | baseline | ratio | machine | date |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for result in sorted(results, key=lambda r: r.number):
        for index, row in enumerate(result.rows):
            title = result.title if index == 0 else ""
            out.append(
                f"| {result.number if index == 0 else ''} | {title} | {row.metric} | "
                f"{_cell(row, 'feedsync')} | {_cell(row, 'baseline')} | {verdict(row)} | "
                f"{short} | {result.date[:10] or day} |"
            )
    for number, reason in sorted(failures.items()):
        out.append(
            f"| {number} | FAILED | {reason.splitlines()[0][:120]} | | | | {short} | {day} |"
        )
    for number, reason in sorted(skipped.items()):
        out.append(f"| {number} | SKIPPED | {reason} | | | | {short} | {day} |")
    out.append("")

    for result in sorted(results, key=lambda r: r.number):
        out += [
            f"## {result.number}. {result.title}",
            "",
            f"- feedsync: {result.feedsync}",
            f"- baseline: {result.baseline}",
        ]
        out += [f"- {note}" for note in result.notes]
        out += _per_day(result.details)
        runs = result.rows[0].feedsync.runs if result.rows else ()
        when = f"; measured {result.date.replace('T', ' ')}" if result.date else ""
        out += [
            f"- runs per side: {len(runs)}; scenario time {result.seconds:.0f} s{when}",
            "",
        ]
        text = analysis.get(result.number)
        if text:
            out += [text, ""]
    for number, reason in sorted(failures.items()):
        out += [f"## {number}. FAILED", "", "```", reason[-3000:], "```", ""]
    for number, reason in sorted(skipped.items()):
        out += [f"## {number}. SKIPPED", "", f"Not run on this machine: {reason}.", ""]
    return "\n".join(out).rstrip() + "\n"


def _per_day(details: dict[str, Any]) -> list[str]:
    """A scenario's day-by-day figures (scenario 9): its picture and a table of every
    tenth day, so the curves can be read without opening results.json."""
    days = details.get("per_day")
    if not days:
        return []
    out = [""]
    if details.get("plot"):
        out += [f"![the year, day by day]({details['plot']})", ""]
    out += [
        "| day | articles on the card | live database | card database | card written that"
        " day | RSS of the daemon | pass with nothing new (CPU) | search: English / 2 / 3"
        " Japanese chars |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    step = 10 if len(days) >= 20 else 1
    for d in days:
        if d["day"] % step and d["day"] not in (1, len(days)):
            continue
        searches = " / ".join(
            f"{d['search'][k][0] * 1e3:.0f} ms" for k in ("english", "japanese_2", "japanese_3")
        )
        out.append(
            f"| {d['day']} | {d['articles']:,} | {_mb(d['live_bytes'])} | "
            f"{_mb(d['card_bytes'])} | {_mb(d['card_written'])} | "
            f"{_daemon_rss_kb(d) / 1e3:.0f} MB | "
            f"{d['noop_cpu_s'] * 1e3:.0f} ms | {searches} |"
        )
    return [*out, ""]


def _daemon_rss_kb(day: dict[str, Any]) -> float:
    """The daemon's RSS that day; in runs before it was read apart from the searches', the
    driver's RSS after them (``rss_kb``), which newer runs no longer have."""
    return float(day["daemon_rss_kb"] if "daemon_rss_kb" in day else day["rss_kb"])


def _mb(size: float) -> str:
    """Megabytes with three significant figures or more."""
    mb = size / 1e6
    return f"{mb:.2f} MB" if mb < 10 else f"{mb:.1f} MB" if mb < 100 else f"{mb:.0f} MB"
