"""The benchmark harness (bench/) keeps working: its quick mode runs every scenario.

No assertion on timings (CI machines are noisy and small): only that each of the eleven
scenarios produced figures for feedsync and for its baseline, and that the report was
written. The first run creates the baseline's own venv (bench/.venv-baseline, with the
PyPI package ``reader``), so it needs pip to reach a package index. Scenarios 8 and 10
need a PostgreSQL server (Debian's ``postgresql``, which CI installs) and psycopg: only where
either is missing may they be skipped, and then the report must say why.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = list(range(1, 12))
ON_POSTGRESQL = (8, 10)


def _postgresql_missing() -> str | None:
    sys.path.insert(0, str(REPO))
    try:
        from bench.scenarios import pg_scale
    finally:
        sys.path.remove(str(REPO))
    return pg_scale.why_not()


@pytest.mark.slow
def test_quick_bench_runs_every_scenario_against_its_baseline(tmp_path: Path) -> None:
    output = tmp_path / "bench"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--quiet", "--output", str(output)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=15 * 60,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"

    data = json.loads((output / "results.json").read_text())
    assert data["mode"] == "quick" and not data["failures"]
    missing = _postgresql_missing()
    expected = [n for n in SCENARIOS if not (missing and n in ON_POSTGRESQL)]
    assert [s["scenario"] for s in data["scenarios"]] == expected
    assert data["skipped"] == ({str(n): missing for n in ON_POSTGRESQL} if missing else {})
    for scenario in data["scenarios"]:
        assert scenario["baseline"] and scenario["rows"], scenario
        for row in scenario["rows"]:
            for side in ("feedsync", "baseline"):
                figures = row[side]
                assert figures["n"] >= 1 and len(figures["runs"]) == figures["n"], row
                for key in ("min", "median", "max"):
                    assert isinstance(figures[key], int | float), row
                assert figures["min"] <= figures["median"] <= figures["max"], row

    report = (output / "RESULTS.md").read_text()
    # scenario 9 draws its days (matplotlib in the bench's own venv) and shows them
    assert "![the year, day by day](year-on-a-pi.png)" in report
    assert (output / "year-on-a-pi.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| # | scenario | metric | feedsync | baseline | ratio | machine | date |" in report
    for number in SCENARIOS:
        assert f"\n## {number}. " in report  # 8 and 10 skipped: "## 8. SKIPPED"

    # --render writes the same report again from results.json, measuring nothing
    (output / "RESULTS.md").unlink()
    again = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--render", "--output", str(output)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    assert (output / "RESULTS.md").read_text() == report
