"""How much of the RAM disk and of the card feedsync may take, and what to do near full.

The live database sits on a tmpfs that other services share (on Debian and Raspberry Pi
OS, ``/run`` is 10% of RAM: about 100 MB on a 1 GB Pi); the card database grows with the
archive. The figures come from ``statvfs`` (:func:`measure`); the decisions are pure
functions of them, tested directly:

- **RAM**: the budget is ``[storage] ram_budget``, or half of the live database's file
  system. Past half the budget, what the card does not hold yet goes there and leaves
  RAM (a save, :func:`should_spill`); past :data:`FULL_SHARE` of it, or with less than
  :data:`RESERVE_SHARE` of the file system free, no new entries are taken until saves
  and extraction make room (:func:`ram_full`).
- **Card**: the budget is ``[storage] card_budget``, or all the card's file system but
  :data:`RESERVE_SHARE` of it (feedsync never fills it). A save needs room for what it
  writes (about twice what it moves, the journal included: :func:`save_room`); short of
  that, retention prunes what it may, and the save is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import NamedTuple

from feedsync.storage_errors import StorageError

SPILL_SHARE = 0.5  # of the RAM budget: save to the card and leave RAM
FULL_SHARE = 0.85  # of the RAM budget: take no new entries
RESERVE_SHARE = 0.05  # of a file system, always left free
NEARLY_FULL_SHARE = 0.9  # of a budget: `feedsync status` says so
SAVE_MARGIN = 1 << 20  # bytes a save needs beyond twice what it moves


class Disk(NamedTuple):
    """A file system, as statvfs sees it (bytes)."""

    size: int
    free: int  # available to an unprivileged process


def disk_of(path: Path) -> Disk:
    """The file system holding ``path`` (or the nearest folder of it that exists)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    info = os.statvfs(probe)
    return Disk(size=info.f_blocks * info.f_frsize, free=info.f_bavail * info.f_frsize)


def files_size(*paths: Path) -> int:
    """Bytes of the files that exist among ``paths``."""
    total = 0
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            total += path.stat().st_size
    return total


class Budget(NamedTuple):
    """One side's use against its budget, and the file system under it."""

    used: int
    budget: int
    disk: Disk

    @property
    def nearly_full(self) -> bool:
        return self.used >= NEARLY_FULL_SHARE * self.budget or self.disk.free < self.reserve

    @property
    def reserve(self) -> int:
        return int(RESERVE_SHARE * self.disk.size)


def ram_budget(configured: int | None, disk: Disk) -> int:
    """The RAM budget: as configured, else half the live database's file system."""
    return configured if configured is not None else disk.size // 2


def card_budget(configured: int | None, used: int, disk: Disk) -> int:
    """The card budget: as configured, else what the card database holds plus what the
    file system has free beyond its reserve."""
    if configured is not None:
        return configured
    return max(used + disk.free - int(RESERVE_SHARE * disk.size), used)


def should_spill(ram: Budget) -> bool:
    """Past half the RAM budget: move what the card does not hold yet to it."""
    return ram.used > SPILL_SHARE * ram.budget


def ram_full(ram: Budget) -> str | None:
    """Why no new entries may be taken now (None: they may)."""
    if ram.used > FULL_SHARE * ram.budget:
        return (
            f"the live database takes {_mb(ram.used)} of its {_mb(ram.budget)} RAM budget "
            "(the card cannot take more of it now)"
        )
    if ram.disk.free < ram.reserve:
        return f"the RAM disk has {_mb(ram.disk.free)} free of {_mb(ram.disk.size)}"
    return None


def save_room(moving: int, card: Budget) -> str | None:
    """Why a save that moves about ``moving`` bytes cannot be written (None: it can):
    the card needs twice that (its journal) plus a margin, within the budget and
    leaving the file system's reserve."""
    needed = 2 * moving + SAVE_MARGIN
    if card.disk.free - needed < card.reserve:
        return (
            f"the card has {_mb(card.disk.free)} free of {_mb(card.disk.size)}, a save "
            f"needs about {_mb(needed)} and feedsync leaves {_mb(card.reserve)} free"
        )
    if card.used + moving > card.budget:
        return f"the card database takes {_mb(card.used)} of its {_mb(card.budget)} budget"
    return None


def wal_pages(budget: int, page_size: int = 4096) -> int:
    """How many pages the live database's write-ahead log may reach before it is folded
    back (SQLite's default, 1000 pages, is 4 MB: more than a small RAM disk allows)."""
    return max(50, min(1000, budget // 16 // page_size))


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def need_room(size: int, where: Path, doing: str) -> None:
    """Raise StorageError, its message starting with ``doing``, when ``size`` bytes and
    the save margin do not fit on ``where``'s file system: the check before a whole
    database is written there."""
    room = disk_of(where).free
    if room < size + SAVE_MARGIN:
        raise StorageError(
            f"{doing}: it needs about {size / 1e6:.0f} MB free on the file system of "
            f"{where}, which has {room / 1e6:.0f} MB"
        )
