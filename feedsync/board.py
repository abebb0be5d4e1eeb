"""How many extraction processes a board gets: ``[extract] workers = "auto"``.

Read from the machine when extraction starts (its RAM and the cores this process may
use), with the figures behind the rule; feedsync.extract starts that many workers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# ``[extract] workers = "auto"`` (the default): sized to the board, see :func:`auto_workers`.
AUTO = "auto"
# One worker per this much RAM (the board's nominal size: MemTotal rounded to whole GiB).
# A worker peaks at ~55 MB of PSS on the bench's real news pages (trafilatura, lxml's
# trees), on top of ~45 MB that any extraction costs (the feedsync process, the
# forkserver, multiprocessing's resource tracker): 1 worker is ~100 MB on the bench. A
# worker that searches an undated entry's page for a date written only in words loads
# dateparser's tables of every locale (~40 MB more, see feedsync.extract._date_search):
# then 1 worker is ~140 MB and 2 ~235 MB; on a 1 GB Pi 3 two would take a quarter of the
# RAM beside the live database's RAM disk (10% of it), on a 512 MB Zero 2 W nearly half.
RAM_PER_WORKER_GIB = 2


@dataclass(frozen=True)
class Board:
    """What the machine offers extraction: its RAM and the cores this process may use."""

    ram_bytes: int
    cores: int

    @classmethod
    def this_one(cls) -> Board:
        """Read at start: RAM from sysconf (the kernel's MemTotal, below the board's
        nominal size by what the GPU and the kernel keep), cores from the CPU affinity
        (what ``taskset`` or a cpuset left this process), else the count of CPUs."""
        try:
            ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            ram = 0
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        return cls(max(ram, 0), max(cores, 1))


def auto_workers(board: Board) -> int:
    """``[extract] workers = "auto"``: how many extraction processes ``board`` gets.

    One per RAM_PER_WORKER_GIB of RAM (the nominal size: MemTotal rounded to whole GiB,
    so a 4 GB Pi 4 that reports 3.7 GiB counts as 4), and one core fewer than the
    process may use (the poller's own work, fetching, parsing feeds, storing and
    indexing, keeps a core), but at least one. So 1 on a Pi Zero 2 W (512 MB), a Pi 3
    (1 GB) and a 2 GB Pi 4 or on any two-core machine; 2 on a 4 GB Pi 4; 3 (its four
    cores but one) on an 8 GB Pi 4 or 5. The figures behind it: RAM_PER_WORKER_GIB."""
    nominal_gib = round(board.ram_bytes / 2**30)
    return max(1, min(nominal_gib // RAM_PER_WORKER_GIB, board.cores - 1))


def resolve_workers(workers: int | str, board: Board | None = None) -> int:
    """The number of workers ``[extract] workers`` asks for: an int as it is, ``"auto"``
    from the board (read now unless given)."""
    if workers == AUTO:
        return auto_workers(board or Board.this_one())
    return int(workers)  # checked when the config was read (feedsync.values.workers)
