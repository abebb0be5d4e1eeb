"""The verdict of tests/pi/run.sh: the guest's checks, the world server's counters, figures.

    python3 tests/pi/check.py WORK_DIR

Prints PASS/FAIL per check (those the guest phases wrote to phaseN/results.txt, and those
decided here from the server's request log: every article page fetched exactly once,
except what a power cut lost since the last snapshot) and every figure with how it was
measured. Exit status 1 if anything failed or a phase left no results.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpubench import loop

PHASES = {1: "install", 2: "reboot", 3: "clock", 4: "powercut", 5: "after"}


def mark(work: Path, name: str) -> float | None:
    """When the guest said NAME (GET /control/mark/NAME), by the host's clock."""
    path = work / "world" / f"mark-{name}"
    return float(path.read_text()) if path.exists() else None


def main() -> int:
    work = Path(sys.argv[1])
    checks: list[tuple[str, str, str]] = []  # verdict, name, detail
    figures: list[tuple[str, str, str, str]] = []  # name, value, unit, how

    def verdict(ok: bool, name: str, detail: str) -> None:
        checks.append(("PASS" if ok else "FAIL", name, detail))

    # ------------------------------------------------------------ the phases
    spans: dict[int, list[float]] = {}
    codes: dict[int, str] = {}
    for line in (work / "phases.txt").read_text().splitlines():
        number, _name, what, stamp, *rest = line.split()
        spans.setdefault(int(number), [0.0, 0.0])[0 if what == "start" else 1] = float(stamp)
        if rest:
            codes[int(number)] = rest[0]
    for number, name in PHASES.items():
        results = work / f"phase{number}" / "results.txt"
        if not results.exists():
            verdict(False, f"{number}-{name}/results", "the phase left no results")
            continue
        for line in results.read_text().splitlines():
            kind, rest = line.split(" ", 1)
            if kind == "CHECK":
                word, name_detail = rest.split(" ", 1)
                check_name, _, detail = name_detail.partition(" ")
                checks.append((word, f"{number}-{name}/{check_name}", detail))
            elif kind == "FIGURE":
                fig, value, unit, *how = rest.split(" ", 3)
                figures.append((f"{number}/{fig}", value, unit, how[0] if how else ""))
        run = work / f"phase{number}" / "run.txt"
        if run.exists():
            wall = [x for x in run.read_text().splitlines() if x.startswith("wall")]
            if wall:
                figures.append(
                    (
                        f"{number}/phase_wall_seconds",
                        wall[0].split()[-1],
                        "s",
                        "boot + job + power-off",
                    )
                )
    cut = work / "phase4" / "run.txt"
    cut_line = [x for x in cut.read_text().splitlines() if "power cut" in x] if cut.exists() else []
    verdict(
        bool(cut_line),
        "4-powercut/plug-pulled",
        cut_line[0] if cut_line else "no power cut happened",
    )
    state = work / "phase4" / "state.log"
    if state.exists() and state.read_text().strip():
        last = state.read_text().strip().splitlines()[-1]
        figures.append(
            (
                "4/state_at_cut",
                "'" + last.replace(" ", ";") + "'",
                "-",
                "the guest's last record before the plug was pulled (every 3 s)",
            )
        )

    # ------------------------------------------------------------ the server's counters
    world = json.loads((work / "world" / "world.json").read_text())
    requests = [json.loads(x) for x in (work / "world" / "requests.jsonl").read_text().splitlines()]

    def hits(start: float = 0.0, end: float = float("inf")) -> Counter[str]:
        return Counter(r["path"] for r in requests if start <= r["t"] <= end)

    wave = {int(w): pages for w, pages in world["pages"].items()}
    total = hits()
    if 2 in spans:
        through_reboot = hits(spans[1][0], spans[2][1])
        counts = Counter(through_reboot[p] for p in wave[1])
        verdict(
            set(counts) == {1},
            "server/each-article-fetched-once-through-stop-and-reboot",
            f"(wave 1, {len(wave[1])} pages, phases 1-2: fetched n times -> pages {dict(counts)})",
        )
        feed_hits = [
            r
            for r in requests
            if r["path"].startswith("/feeds/") and spans[2][0] <= r["t"] <= spans[2][1]
        ]
        figures.append(
            (
                "2/feed_requests",
                str(len(feed_hits)),
                "-",
                f"feed GETs during phase 2, of which "
                f"{sum(r['status'] == 304 for r in feed_hits)} answered 304",
            )
        )
    # the SD-card window of phase 2: the polls in it, from the guest's marks
    start, end = mark(work, "sd-window-start"), mark(work, "sd-window-end")
    if start and end:
        window = [r for r in requests if r["path"].startswith("/feeds/") and start <= r["t"] <= end]
        feeds = len(world["feeds"])
        verdict(
            len(window) >= feeds * int((end - start) // 120),
            "server/sd-window-holds-polls",
            f"({len(window)} feed GETs in the {end - start:.0f} s window, "
            f"{sum(r['status'] == 304 for r in window)} answered 304; {feeds} feeds polled "
            "once a minute at most)",
        )
        figures.append(
            (
                "server/sd_window_feed_requests",
                str(len(window)),
                "-",
                "feed GETs between the guest's marks around phase 2's SD-card window",
            )
        )
    counts = Counter(total[p] for p in wave[1])
    verdict(set(counts) == {1}, "server/wave1-never-fetched-again", f"(whole run: {dict(counts)})")
    if 3 in spans:
        counts2 = Counter(total[p] for p in wave[2])
        verdict(
            set(counts2) == {1},
            "server/clock-wave-fetched-once",
            f"(wave 2, fetched while the clock was behind: {dict(counts2)})",
        )
        corrected = mark(work, "clock-corrected")
        feed_times = (r["t"] for r in requests if r["path"].startswith("/feeds/"))
        after = sorted(t for t in feed_times if t > (corrected or 0))
        delay = after[0] - corrected if corrected and after else None
        # the daemon's tick is 15 s and each feed is due at most a minute after its last
        # poll: polls go on within one poll interval of the correction, not 200 days later
        verdict(
            delay is not None and delay <= 75,
            "server/polling-goes-on-after-correction",
            f"(first feed GET {delay:.1f} s after the clock was corrected)"
            if delay is not None
            else "(no feed GET after the correction)",
        )
        if delay is not None:
            figures.append(
                (
                    "3/first_poll_after_correction_seconds",
                    f"{delay:.1f}",
                    "s",
                    "from the guest's clock-corrected mark to the next feed GET (server log)",
                )
            )
    if 4 in spans:
        counts3 = Counter(total[p] for p in wave[3])
        again = [p for p in wave[3] if total[p] > 1]
        verdict(
            min(counts3) >= 1 and max(counts3) <= 2,
            "server/powercut-loss-bounded",
            f"(wave 3, {len(wave[3])} pages: fetched n times -> pages {dict(counts3)}; "
            f"{len(again)} fetched again after the cut: extracted after the last snapshot)",
        )
        figures.append(
            (
                "5/articles_fetched_again_after_cut",
                str(len(again)),
                "-",
                "wave-3 pages the server served twice",
            )
        )
    if 5 in spans:
        counts4 = Counter(total[p] for p in wave[4])
        verdict(set(counts4) == {1}, "server/cron-wave-fetched-once", f"(wave 4: {dict(counts4)})")
    not_modified = sum(1 for r in requests if r["status"] == 304)
    figures.append(
        ("server/requests", str(len(requests)), "-", f"all requests; {not_modified} answered 304")
    )

    # ------------------------------------------------------------ CPU
    bench = work / "phase1" / "cpubench.json"
    if bench.exists() and bench.read_text().strip():
        data = json.loads(bench.read_text())
        host = loop()
        figures += [
            (
                "1/parse_cpu_ms_per_feed",
                f"{data['parse_cpu_seconds_median'] * 1000:.0f}",
                "ms",
                f"feedsync.parse.parse_feed, median of {data['feeds']} feeds x3 "
                f"({data['entries_per_feed']} entries each), process_time",
            ),
            (
                "1/extract_cpu_ms_per_article",
                f"{data['extract_cpu_seconds_median'] * 1000:.0f}",
                "ms",
                f"feedsync.extract.extract_html (trafilatura), median of {data['pages'] - 1} "
                f"pages of {data['page_bytes_mean']} B, process_time",
            ),
            (
                "1/extract_cpu_ms_first",
                f"{data['extract_first_cpu_seconds'] * 1000:.0f}",
                "ms",
                "the first extraction in a process (warm-up)",
            ),
            (
                "1/import_trafilatura_cpu_s",
                str(data["import_trafilatura_cpu_seconds"]),
                "s",
                "CPU to import trafilatura (each extraction worker pays it)",
            ),
            (
                "1/loop_seconds_guest",
                str(data["loop_seconds"]),
                "s",
                "cpubench.loop() in the guest",
            ),
            ("host/loop_seconds", f"{host:.4f}", "s", "cpubench.loop() on this host, one core"),
            (
                "emulation_slowdown_vs_host",
                f"{data['loop_seconds'] / host:.0f}",
                "x",
                "guest loop / host loop (pure Python)",
            ),
        ]

    # ------------------------------------------------------------ report
    print("== checks")
    for word, name, detail in checks:
        print(f"{word} {name} {detail}")
    print("\n== figures")
    for name, value, unit, how in figures:
        print(f"{name} = {value} {unit}    # {how}")
    seconds = work / "run-seconds"
    if seconds.exists():
        print(f"\ntotal wall time of run.sh: {seconds.read_text().strip()} s")
    failed = [c for c in checks if c[0] != "PASS"]
    print(
        f"\n{len(checks) - len(failed)} passed, {len(failed)} failed"
        + (f"; phase exit codes {codes}" if codes else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
