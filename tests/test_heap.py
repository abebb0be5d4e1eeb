"""Freed memory given back to the system (feedsync.heap), in a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Memory freed between allocations that stay (as SQLite's pages between Python's
# objects): glibc cannot return it from the top of its heap, so it stays resident.
STRANDED = """
import json, sys
sys.path.insert(0, sys.argv[1])
from feedsync import heap

def rss_kb():
    with open("/proc/self/status") as status:
        return int(next(l for l in status if l.startswith("VmRSS:")).split()[1])

kept, freed = [], []
for n in range(60_000):
    (kept if n % 50 == 0 else freed).append(bytearray(1000))  # malloc, not pymalloc
freed.clear()
before = rss_kb()
gave = heap.give_back()
print(json.dumps({"before": before, "after": rss_kb(), "gave": gave, "kept": len(kept)}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_memory_freed_between_live_allocations_leaves_the_process() -> None:
    done = subprocess.run(
        [sys.executable, "-c", STRANDED, str(REPO)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(done.stdout)
    if not figures["gave"]:
        pytest.skip("this C library has no malloc_trim (not glibc)")
    # ~58 MB were freed; most of it was still resident before, and is not after
    assert figures["before"] - figures["after"] > 30_000, figures
