"""Timing, CPU and memory of child processes; summaries; the machine.

Every measured command runs under :mod:`bench.probe` (a child subreaper), so its CPU time
includes every process it started, waited for or not (feedsync's extraction workers live
under a forkserver that feedsync never waits for).
"""

from __future__ import annotations

import json
import os
import platform
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PROBE = Path(__file__).resolve().with_name("probe.py")


class BenchError(RuntimeError):
    """A measured command failed: the bench stops with its output."""


@dataclass(frozen=True)
class Cost:
    """What one run of a command cost (see bench/probe.py)."""

    wall: float  # seconds
    cpu: float  # user + system seconds, every descendant included
    user: float
    sys: float
    main_maxrss_kb: int  # peak RSS of the command's own process
    peak_tree_pss_kb: int  # sampled peak of the whole tree's PSS
    peak_tree_rss_kb: int
    oublock: int  # 512-byte blocks written to block devices

    @property
    def main_maxrss_mb(self) -> float:
        return self.main_maxrss_kb / 1024

    @property
    def tree_pss_mb(self) -> float:
        return self.peak_tree_pss_kb / 1024


@dataclass(frozen=True)
class Run:
    cost: Cost
    stdout: str
    stderr: str


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for measured commands: no proxy for loopback, no bytecode writes
    (they would count as disk writes and vary between the first run and the rest)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in {"http_proxy", "https_proxy", "all_proxy", "feedsync_config"}
        and not k.startswith("PYTHONPROFILE")
    }
    env.update(NO_PROXY="127.0.0.1,localhost", PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def measure(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 900,
    cwd: Path | None = None,
    check: bool = True,
) -> Run:
    """Run ``command`` under the probe; its output is captured."""
    with tempfile.NamedTemporaryFile(prefix="bench-probe-", suffix=".json", delete=False) as tmp:
        result = Path(tmp.name)
    full = [sys.executable, str(PROBE), "--result", str(result), "--", *command]
    process = subprocess.Popen(
        full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else clean_env(),
        cwd=cwd,
        start_new_session=True,  # its own process group: a timeout kills the whole tree
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        result.unlink(missing_ok=True)
        raise BenchError(
            f"timed out after {timeout:g}s: {' '.join(command)}\n{stdout[-2000:]}\n{stderr[-4000:]}"
        ) from None
    try:
        data = json.loads(result.read_text())
    except (OSError, ValueError):
        raise BenchError(f"the probe failed on {' '.join(command)}:\n{stderr[-4000:]}") from None
    finally:
        result.unlink(missing_ok=True)
    if check and data["returncode"] != 0:
        raise BenchError(
            f"exit {data['returncode']}: {' '.join(command)}\n"
            f"stdout:\n{stdout[-2000:]}\nstderr:\n{stderr[-4000:]}"
        )
    cost = Cost(
        wall=data["wall"],
        cpu=data["user"] + data["sys"],
        user=data["user"],
        sys=data["sys"],
        main_maxrss_kb=data["main_maxrss_kb"],
        peak_tree_pss_kb=data["peak_tree_pss_kb"],
        peak_tree_rss_kb=data["peak_tree_rss_kb"],
        oublock=data["oublock"],
    )
    return Run(cost, stdout, stderr)


def last_json(text: str) -> dict[str, Any]:
    """The last line of ``text`` that is a JSON object (a driver's or feedsync's report)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    raise BenchError(f"no JSON report in the output:\n{text[-2000:]}")


# ---------------------------------------------------------------- summaries


@dataclass(frozen=True)
class Summary:
    """min / median / max over the runs of one side of one metric."""

    runs: tuple[float, ...]

    @property
    def min(self) -> float:
        return min(self.runs)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def max(self) -> float:
        return max(self.runs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "min": self.min,
            "median": self.median,
            "max": self.max,
            "n": len(self.runs),
            "runs": list(self.runs),
        }


def summary(values: Sequence[float]) -> Summary:
    if not values:
        raise ValueError("no runs")
    return Summary(tuple(float(v) for v in values))


# ---------------------------------------------------------------- the machine


def _cpu_model() -> str:
    """x86: "model name"; a Raspberry Pi: "Model" (the board) or "Hardware"."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip().lower(), value.strip())
    except OSError:
        pass
    for key in ("model name", "model", "hardware", "cpu model"):
        value = fields.get(key, "")
        if value and not value.isdigit():
            return value
    return platform.processor() or platform.machine()


def _ram_gb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return 0.0


def machine() -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count() or 0,
        "ram_gb": round(_ram_gb(), 1),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "kernel": platform.release(),
        "arch": platform.machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def machine_short(info: dict[str, Any]) -> str:
    return f"{info['cpu']} ×{info['cores']}, {info['ram_gb']:g} GB, py{info['python']}"


def cost_dict(cost: Cost) -> dict[str, Any]:
    return asdict(cost)


class Stopwatch:
    """``with Stopwatch() as w: ...; w.seconds``"""

    def __enter__(self) -> Stopwatch:
        self._start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start
