"""The clock is a suspect: what feedsync may believe of the system clock.

A Raspberry Pi has no real-time clock. It boots at the time ``fake-hwclock`` saved at the
last shutdown (or at 1970 on an image without it), and NTP sets it minutes or hours
later, or not at all while the network is down; a wrong RTC HAT or a bad NTP answer can
also put it ahead, and then back. So no decision may rest on a time only because the
clock said it (docs/architecture.md, "The clock"):

- the times a feed or a server gives are kept as given (decide.published_date);
- a schedule, lease, hold or retry time further ahead than its longest possible length
  was set by a clock that ran ahead, or has stepped back since: it counts as come;
- retention runs only on a clock it may believe (:func:`judge`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from feedsync import timestamps

# No clock that reads earlier than this is right: feedsync did not exist before. A Pi
# booted at 1970 (no fake-hwclock) or at an old image's date reads earlier.
EARLIEST = datetime(2025, 1, 1, tzinfo=UTC)
# How far apart two clocks that are both right may be (the processes of several
# machines on one PostgreSQL database), before a time one stored counts as "ahead" of
# the other's.
SLACK = timedelta(minutes=1)


def horizon(moment: str) -> str:
    """The latest a time can lie that was set no later than ``moment`` (a stored
    timestamp) by a clock that is right: ``moment`` and :data:`SLACK`. A stored time
    beyond it was set by a clock ahead of this one, or this one has stepped back since:
    whatever it schedules (a poll, a lease, a retry) has come."""
    return timestamps.shift(moment, SLACK)
