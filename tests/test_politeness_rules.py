"""The hosts' rules (feedsync/politeness/rules.py): a 429/503 block's length, and a host's turn
across every poller on the database."""

from __future__ import annotations

from datetime import timedelta

from feedsync.politeness.rules import HostBlock, HostTurn, held_start, host_block, host_turn

# ---------------------------------------------------------------- the rule


def test_a_turn_is_the_lowest_free_slot_at_the_reserved_start() -> None:
    turn = host_turn(now=100.0, next_start=0.0, delay=1.5, taken=[(0, 110.0)], slots=2)
    assert turn == HostTurn(slot=1, start=100.0, next_start=101.5)
    later = host_turn(now=100.2, next_start=101.5, delay=1.5, taken=[], slots=2)
    assert later == HostTurn(slot=0, start=101.5, next_start=103.0)


def test_no_turn_while_every_slot_is_in_use_and_no_pace_without_a_delay() -> None:
    held = [(1, 20.0), (0, 20.0)]
    assert host_turn(now=5.0, next_start=0.0, delay=1.0, taken=held, slots=2) is None
    # a slot whose lease is over is free: its poller died
    assert host_turn(5.0, 0.0, 1.0, [(1, 20.0), (0, 4.0)], 2) == HostTurn(0, 5, 6)
    # a slot beyond this poller's own cap (another config's) does not count against it
    assert host_turn(5.0, 0.0, 1.0, [(2, 20.0)], 2) == HostTurn(0, 5.0, 6.0)
    # no delay: start now, the pace left as another poller set it
    assert host_turn(5.0, 7.0, 0.0, [], 1) == HostTurn(0, 7.0, 7.0)
    assert host_turn(9.0, 7.0, 0.0, [], 1) == HostTurn(0, 9.0, 7.0)


def test_a_clock_that_stepped_back_leaves_no_host_waiting() -> None:
    """A Pi has no real-time clock: set wrong at boot, NTP can put it back by hours. The
    pace and the leases written before the step lie hours ahead; nobody can have
    reserved that far, so they are not waited for."""
    now = 1_000_000.0
    hours = now + 3 * 3600
    turn = host_turn(now, next_start=hours, delay=1.0, taken=[(0, hours)], slots=1)
    assert turn == HostTurn(slot=0, start=now, next_start=now + 1.0)
    # what pollers can really have reserved is still honoured
    soon = host_turn(now, next_start=now + 3.0, delay=1.0, taken=[(0, now + 18)], slots=2)
    assert soon == HostTurn(slot=1, start=now + 3.0, next_start=now + 4.0)
    assert host_turn(now, now + 3.0, 1.0, [(0, now + 18)], slots=1) is None


def test_a_host_held_after_a_clock_stepped_back_is_paced_from_now() -> None:
    """A pass a year ahead left the host's pace a year ahead; the next pass, on a clock
    set right, holds the host and paces it in memory from there: from now, not in a year
    (a `run --due` waited for it, found by tests/test_clock.py)."""
    now = 1_000_000.0
    assert held_start(now, now + 365 * 86400, delay=1.0, taken=[]) == 0.0
    assert held_start(now, now + 2.5, delay=1.0, taken=[]) == 2.5  # a real pace: kept
    assert held_start(now, now - 5.0, delay=1.0, taken=[]) == 0.0


# ---------------------------------------------------------------- hosts that say 429/503

MINUTE = timedelta(minutes=1)
CAP = timedelta(hours=6)


def test_a_hosts_backoff_rises_once_per_block_not_per_refused_request() -> None:
    none = timedelta(0)
    # the first refusal: one minute, the first block in a row
    first = host_block(none, 0, None, CAP)
    assert first == HostBlock(MINUTE, 1)
    # nine more requests, refused while that block is in force: still the same block
    block = first
    for _ in range(9):
        block = host_block(block.wait - timedelta(seconds=1), block.backoff_count, None, CAP)
    assert block.backoff_count == 1 and block.wait <= MINUTE
    # asked again once it is over, and refused again: the next step, two minutes
    assert host_block(none, 1, None, CAP) == HostBlock(2 * MINUTE, 2)
    assert host_block(-MINUTE, 1, None, CAP) == HostBlock(2 * MINUTE, 2)
    # ten blocks in a row reach the cap (not one block refusing ten requests)
    assert host_block(none, 9, None, CAP) == HostBlock(CAP, 10)


def test_a_refusal_within_a_block_may_lengthen_it_by_its_own_retry_after() -> None:
    left = timedelta(seconds=30)
    hour = timedelta(hours=1)
    assert host_block(left, 1, hour, CAP) == HostBlock(hour, 1)
    assert host_block(left, 1, timedelta(seconds=5), CAP) == HostBlock(left, 1)
    assert host_block(left, 1, timedelta(days=2), CAP) == HostBlock(CAP, 1)
    # a first refusal with Retry-After: the server's word, capped
    assert host_block(timedelta(0), 0, hour, CAP) == HostBlock(hour, 1)
