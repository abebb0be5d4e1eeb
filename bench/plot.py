"""Pictures of the bench's figures, drawn by matplotlib in a venv of its own.

matplotlib is never a dependency of feedsync, not even a test one: the bench creates
``bench/.venv-plot`` on first use (with the interpreter the bench runs on) and draws in
a subprocess with it. Scenario 9's curves go to ``year-on-a-pi.png`` beside RESULTS.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.measure import BenchError

if TYPE_CHECKING:
    from bench.common import Bench

BENCH = Path(__file__).resolve().parent
VENV = Path(os.environ.get("BENCH_PLOT_VENV") or BENCH / ".venv-plot")
YEAR_PNG = "year-on-a-pi.png"

_DRAW_YEAR = r"""
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

details = json.load(open(sys.argv[1]))
days = details["per_day"]
x = [d["day"] for d in days]
budget = details["ram_budget_bytes"] / 1e6
fig, axes = plt.subplots(3, 2, figsize=(11, 10), sharex=True)
(a, b), (c, d), (e, f) = axes
a.plot(x, [v["card_written"] / 1e6 for v in days], color="tab:red")
a.set_title("bytes written to the card per day (MB)")
a.set_ylim(bottom=0)
b.plot(x, [v["card_bytes"] / 1e6 for v in days], color="tab:brown")
b.set_title("card database (MB)")
b.set_ylim(bottom=0)
c.plot(x, [v["live_bytes"] / 1e6 for v in days], label="live database")
c.axhline(budget, color="tab:red", linestyle="--", label=f"RAM budget ({budget:.0f} MB)")
c.set_title("live database on the RAM disk, end of day (MB)")
c.set_ylim(0, budget * 1.1)
c.legend(loc="center right")
d.plot(x, [v["daemon_rss_kb" if "daemon_rss_kb" in v else "rss_kb"] / 1e3 for v in days],
       color="tab:green")
d.set_title("RSS of the daemon (MB)")
d.set_ylim(bottom=0)
e.plot(x, [v["noop_cpu_s"] * 1e3 for v in days], color="tab:purple")
e.set_title("CPU of a pass with nothing new, 100 feeds (ms)")
e.set_ylim(bottom=0)
for key, label in (("english", "English word"), ("japanese_2", "2 Japanese chars"),
                   ("japanese_3", "3 Japanese chars")):
    f.plot(x, [v["search"][key][0] * 1e3 for v in days], label=label)
f.set_title("search (ms)")
f.set_ylim(bottom=0)
f.legend(loc="upper left")
for ax in (e, f):
    ax.set_xlabel("simulated day")
fig.suptitle(
    f"A year on a Pi, time-compressed: {details['feeds']} feeds, "
    f"{details['articles_per_day']} articles a day, retention 90 days"
)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=90)
"""


def python() -> Path:
    return VENV / "bin" / "python"


def ensure(say: Any = print) -> Path:
    """The plotting venv with matplotlib, created when missing; its interpreter."""
    if python().exists():
        check = subprocess.run([str(python()), "-c", "import matplotlib"], capture_output=True)
        if check.returncode == 0:
            return python()
    say(f"bench: creating {VENV} with matplotlib (once)")
    base = getattr(sys, "_base_executable", sys.executable)
    for step in (
        [base, "-m", "venv", "--clear", str(VENV)],
        [str(python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "matplotlib"],
    ):  # fmt: skip
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            raise BenchError(f"{' '.join(step)} failed: {done.stderr.strip()[-500:]}")
    return python()


def year(details: dict[str, Any], bench: Bench) -> Path | None:
    """Scenario 9's curves as a PNG in the bench's output folder."""
    output = getattr(bench, "output", None)
    if output is None:
        return None
    interpreter = ensure(bench.log)
    target = Path(output) / YEAR_PNG
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as data:
        json.dump(details, data)
    try:
        done = subprocess.run(
            [str(interpreter), "-c", _DRAW_YEAR, data.name, str(target)],
            capture_output=True,
            text=True,
        )
    finally:
        Path(data.name).unlink()
    if done.returncode != 0:
        raise BenchError(f"drawing {target} failed: {done.stderr.strip()[-500:]}")
    return target
