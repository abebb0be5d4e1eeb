"""The extraction workers a board gets (feedsync.board)."""

from __future__ import annotations

import pytest

from feedsync.board import Board, auto_workers

GIB = 2**30


@pytest.mark.parametrize(
    ("ram", "cores", "workers"),
    [
        (427 * 2**20, 4, 1),  # a Pi Zero 2 W: 512 MB, MemTotal ~427 MiB
        (906 * 2**20, 4, 1),  # a Pi 3: 1 GB, MemTotal ~906 MiB
        (906 * 2**20, 1, 1),
        (int(1.8 * GIB), 4, 1),  # a 2 GB Pi 4
        (int(3.7 * GIB), 4, 2),  # a 4 GB Pi 4: counted as its nominal 4 GB
        (int(3.7 * GIB), 1, 1),  # ... with one core left to this process
        (int(3.7 * GIB), 2, 1),  # ... or two: one is the poller's
        (int(7.7 * GIB), 4, 3),  # an 8 GB Pi 4 or 5: its cores but one
        (int(23.5 * GIB), 2, 1),  # the bench's VM
        (64 * GIB, 16, 15),
        (0, 4, 1),  # RAM unknown: one
    ],
)
def test_auto_gives_one_worker_per_2_gb_and_a_core_to_the_poller(
    ram: int, cores: int, workers: int
) -> None:
    """The rule documented for ``[extract] workers = "auto"`` (README, Configuration)."""
    assert auto_workers(Board(ram, cores)) == workers
