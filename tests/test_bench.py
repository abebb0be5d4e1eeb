"""The benchmark harness (bench/) keeps working: its quick mode runs every scenario.

No assertion on timings (CI machines are noisy and small): only that each of the seven
scenarios produced figures for feedsync and for its baseline, and that the report was
written. The first run creates the baseline's own venv (bench/.venv-baseline, with the
PyPI package ``reader``), so it needs pip to reach a package index.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
    assert [s["scenario"] for s in data["scenarios"]] == [1, 2, 3, 4, 5, 6, 7]
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
    assert "| # | scenario | metric | feedsync | baseline | ratio | machine | date |" in report
    for number in range(1, 8):
        assert f"\n## {number}. " in report

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
