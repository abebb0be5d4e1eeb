"""Memory a long-lived feedsync frees, given back to the system.

glibc's malloc keeps what a process frees for its next allocations, and returns it to
the system only from the top of its heaps. A daemon's heap mixes SQLite's page caches
and statement memory with Python's objects, and a save to the card briefly takes ~10 MB
more (the journal's pages, FTS5's merges, sorts in memory): measured over 30 simulated
days (bench scenario 9), SQLite's own memory stayed at 7.6 MB and Python's object count
flat from day 6, yet the process's RSS crept from 70 to 77 MB, freed memory stranded
between live allocations. ``malloc_trim`` (glibc, since 2.8) gives back every free page
of every heap; it is called after each save, the moment after the hour's largest
transient allocation, and after retention (a month's tables dropped), and costs a few
milliseconds.

Elsewhere than glibc (musl has no ``malloc_trim``) this does nothing.
"""

from __future__ import annotations

from collections.abc import Callable

_trim: Callable[[int], int] | None = None
_looked = False


def give_back() -> bool:
    """Return freed heap memory to the system; False where the C library cannot."""
    global _trim, _looked
    if not _looked:
        _looked = True
        import ctypes  # here: only a process that saves pays for it

        try:
            _trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _trim = None
    if _trim is None:
        return False
    _trim(0)
    return True
