"""The rules of host politeness, as pure functions: data in, data out, no I/O.

How long a host that answered 429 or 503 is left alone (:func:`host_block`), and which
request to a host may start when, across every process on the database
(:func:`host_turn`: a concurrency slot and a start spaced from the last), including a host
held whole by one process (:data:`HOLD`, feedsync/politeness/holds.py). Storage applies
them in one transaction (``host_turn``, the holds: feedsync/storage/sql_hosts.py), the
gate (feedsync/politeness/gate.py) paces by them in memory;
tests/test_politeness_rules.py and tests/test_politeness_pace.py test them directly.
Apart from decide.py, which decides a feed poll: these decide a host's. Storage imports
this module, so it imports nothing (the package's ``__init__`` neither).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import NamedTuple

HOST_BACKOFF = timedelta(minutes=1)


def host_wait(backoff_count: int, retry_after: timedelta | None, cap: timedelta) -> timedelta:
    """How long a host that answered 429 or 503 is left alone.

    Its Retry-After when it gave one (capped at ``cap``: a server must not silence a feed
    for a year), else a backoff of one minute doubling with each refusal in a row.
    """
    if retry_after is not None:
        return min(retry_after, cap)
    return min(HOST_BACKOFF * (1 << min(backoff_count, 30)), cap)


class HostBlock(NamedTuple):
    """A host left alone for ``wait`` from now, ``backoff_count`` blocks in a row."""

    wait: timedelta
    backoff_count: int


def host_block(
    left: timedelta, backoff_count: int, retry_after: timedelta | None, cap: timedelta
) -> HostBlock:
    """The block a 429 or 503 puts on a host, given what is ``left`` of the block in force
    (zero or less: none) and the host's ``backoff_count`` (blocks in a row so far).

    Requests in flight together are refused together: a refusal that comes while a block
    is in force belongs to that block. It may make it longer (its own Retry-After), never
    a step further in the backoff, or one plain 429 answered to two requests at once, or
    to a queue of them, would cost the host 2, 4, ... minutes, up to the cap, instead of
    one. Only a refusal once the block is over (the host was asked again, and still says
    no) is a new block, a step further: ``host_wait``."""
    if left > timedelta(0):
        asked = min(retry_after, cap) if retry_after is not None else timedelta(0)
        return HostBlock(max(left, asked), backoff_count)
    return HostBlock(host_wait(backoff_count, retry_after, cap), backoff_count + 1)


class HostTurn(NamedTuple):
    """A request to a host, granted across every process on the database: ``slot`` of the
    host's ``per_host`` concurrency slots, to start at ``start`` (seconds since the epoch,
    the database's clock); the next request to the host may start at ``next_start``."""

    slot: int
    start: float
    next_start: float


# A host's slot is leased for [poll] lease but never longer than this (renewed while the
# request runs): a poller that dies mid-request frees the host within it.
SLOT_LEASE = timedelta(seconds=15)
# How far ahead of the database's clock a reserved start or a slot's lease may lie before
# it is taken for a clock that stepped back, beyond what any poller can have reserved.
CLOCK_SLACK_S = 60.0
# The slot number of a host held whole by one process, which paces it in memory
# (feedsync/politeness/holds.py): while it lives, no other process gets a turn there.
HOLD = -1
# The slot number of a process refused a turn on a held host: it asks the holder to give
# the host up (the holder sees it when it records its next feed there). Not a request.
WANTED = -2


def _horizon(now: float, delay: float, live: int) -> float:
    """The furthest start any poller can have reserved, with ``live`` slots in use."""
    return now + delay * (live + 1) + CLOCK_SLACK_S


def _plausible(now: float, delay: float, taken: Iterable[tuple[int, float]]) -> set[int]:
    """The host's slots held by a live lease that is no further ahead than anyone can
    have leased it (what lies further is left by a clock that stepped back)."""
    live = {slot: until for slot, until in taken if until > now}
    last = _horizon(now, delay, len(live)) + SLOT_LEASE.total_seconds()
    return {slot for slot, until in live.items() if until <= last}


def host_turn(
    now: float,
    next_start: float,
    delay: float,
    taken: Iterable[tuple[int, float]],
    slots: int,
) -> HostTurn | None:
    """A host's next request, from what the database says (its clock ``now``, the host's
    ``next_start``, its slots as (slot, lease_until)): the lowest free slot of ``slots``,
    a start no earlier than ``next_start`` and spaced ``delay`` from the next one. None
    when every slot is taken (``per_host`` requests in flight already).

    A slot whose lease is over is free (its poller died). So is a lease, and so is a
    ``next_start``, further ahead than anyone can have reserved: what is left of a clock
    that stepped back (a Pi has no real-time clock; NTP sets it after boot), which must
    not keep a host waiting for the hours it stepped.

    A host held whole by one process (slot :data:`HOLD`) has no slot free for anyone
    until the hold ends."""
    taken = [(slot, until) for slot, until in taken if slot != WANTED]
    busy = _plausible(now, delay, taken)
    slot = next((n for n in range(slots) if n not in busy), None)
    if slot is None or HOLD in busy:
        return None
    if next_start > _horizon(now, delay, sum(until > now for _, until in taken)):
        next_start = now
    start = max(now, next_start)
    return HostTurn(slot=slot, start=start, next_start=start + delay if delay > 0 else next_start)


def held_start(
    now: float, next_start: float, delay: float, taken: Iterable[tuple[int, float]]
) -> float:
    """Seconds from ``now`` until the first request to a host just held may start (its
    pace in memory begins there): ``next_start`` as :func:`host_turn` reads it, so one
    further ahead than anyone can have reserved, left by a clock that stepped back (a
    poll a year ahead, then NTP), does not keep the host waiting for the time stepped."""
    if next_start > _horizon(now, delay, sum(until > now for _, until in taken)):
        return 0.0
    return max(0.0, next_start - now)


def held(now: float, delay: float, taken: Iterable[tuple[int, float]]) -> bool:
    """Whether the host is held whole by a process (a live :data:`HOLD`, as
    :func:`host_turn` sees it): a process refused a turn there asks for it."""
    return HOLD in _plausible(now, delay, taken)


def may_hold(now: float, delay: float, taken: Iterable[tuple[int, float]]) -> bool:
    """Whether one process may hold the host whole (and pace it in memory): no request
    to it is in flight anywhere, nor is it held by another (``taken`` as in
    :func:`host_turn`; a process's own hold is renewed, not refused), nor wanted by a
    process refused a turn there."""
    return not _plausible(now, delay, taken)
