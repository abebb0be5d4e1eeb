"""The baseline's own venv: ``reader`` installed with pip, apart from feedsync's.

reader is never a dependency of feedsync, not even a test one: the bench creates
``bench/.venv-baseline`` on first use (with the interpreter the bench runs on, so both
sides run the same Python) and installs the PyPI package ``reader`` into it.
``BENCH_READER_SPEC`` chooses another requirement (e.g. ``reader==3.26``).

``sgmllib3k`` is installed beside it: reader (3.26) vendors a feedparser that imports
``sgmllib``, which reader's own dependency, feedparser >= 6.0.12, no longer brings in
(it moved to ``feedparser-sgmllib``), so a bare ``pip install reader`` cannot parse a feed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from bench.measure import BenchError

BENCH = Path(__file__).resolve().parent
VENV = Path(os.environ.get("BENCH_BASELINE_VENV") or BENCH / ".venv-baseline")
READER_SPEC = os.environ.get("BENCH_READER_SPEC", "reader")
EXTRA = ("sgmllib3k",)


# reader importable, and its feed parser too (the import that fails without sgmllib3k)
CHECK = (
    "import reader._parser.feedparser; from importlib.metadata import version; "
    "print(version('reader'))"
)


def python() -> Path:
    return VENV / "bin" / "python"


def _reader_version() -> str | None:
    if not python().exists():
        return None
    done = subprocess.run(
        [str(python()), "-c", CHECK],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def ensure(say: Callable[[str], None] = print) -> str:
    """Create the venv and install reader when missing; returns reader's version."""
    found = _reader_version()
    if found:
        return found
    say(f"bench: creating {VENV} with {READER_SPEC} (once)")
    base = getattr(sys, "_base_executable", sys.executable)
    steps = [
        [base, "-m", "venv", "--clear", str(VENV)],
        [str(python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         READER_SPEC, *EXTRA],
    ]  # fmt: skip
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            raise BenchError(f"cannot set up the baseline venv: {' '.join(step)}\n{done.stderr}")
    found = _reader_version()
    if not found:
        raise BenchError(f"reader is not importable in {VENV} after installing it")
    return found
