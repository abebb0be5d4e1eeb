"""The clock is a suspect: what feedsync may believe of the system clock.

A Raspberry Pi has no real-time clock. It boots at the time ``fake-hwclock`` saved at the
last shutdown (or at 1970 on an image without it), and NTP sets it minutes or hours
later, or not at all while the network is down; a wrong RTC HAT or a bad NTP answer can
also put it ahead, and then back. So no decision may rest on a time only because the
clock said it (docs/architecture.md, "The clock"):

- the times a feed or a server gives are kept as given (decide.published_date);
- a schedule, lease, hold or retry time further ahead than its longest possible length
  was set by a clock that ran ahead, or has stepped back since: it counts as come
  (:func:`horizon`);
- retention runs only on a clock it may believe, and never judges an article by a fetch
  time stored under a clock it could not believe (:func:`judge`, ``Verdict.believed``).

Whether the system says its clock is synchronized (:func:`synchronization`) is asked the
ways that work on Raspberry Pi OS bookworm with systemd-timesyncd, with chrony or ntpd,
in a container, and under the service's own sandbox: the kernel's NTP state (adjtimex(2),
read only; the maximum error under 16 s, as systemd's ``timedatectl`` judges it, which
chrony keeps right even when it leaves STA_UNSYNC set), else ``timedatectl`` (the
service's ``ProtectClock=yes`` refuses adjtimex even to read; timedated, outside the
sandbox, asks for us), and systemd-timesyncd's ``/run/systemd/timesync/synchronized``.
Where none of them answers and no synchronization service is found, nothing is known,
and the clock is judged by what the database already holds (:func:`judge`).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from feedsync import timestamps

# No clock that reads earlier than this is right: feedsync did not exist before. A Pi
# booted at 1970 (no fake-hwclock) or at an old image's date reads earlier.
EARLIEST = datetime(2025, 1, 1, tzinfo=UTC)
# How far apart two clocks that are both right may be (the processes of several
# machines on one PostgreSQL database), before a time one stored counts as "ahead" of
# the other's.
SLACK = timedelta(minutes=1)

SYNCHRONIZED = "synchronized"  # the system says so
UNSYNCHRONIZED = "unsynchronized"  # a synchronization service runs and has not set it
WRONG = "wrong"  # it reads a time that cannot be: before EARLIEST, or before one stored
UNKNOWN = "unknown"  # nothing says; it reads after everything stored

# The kernel's NTP_PHASE_LIMIT: a maximum error below it means an NTP daemon keeps the
# clock (the kernel adds 500 ppm to it every second, and sets STA_UNSYNC at the limit).
MAXERROR_SYNCED_US = 16_000_000
# systemd-timesyncd's RuntimeDirectory (it exists while timesyncd runs), and the file it
# creates there at its first synchronization since boot.
TIMESYNCD = Path("systemd/timesync")
TIMESYNCD_SYNCED = TIMESYNCD / "synchronized"
# Where the other synchronization services show that they run, under /run (Debian).
SERVICES = (("chrony", Path("chrony")), ("ntpd", Path("ntpd.pid")))
# What the system said is asked again after this long (the daemon asks at every pass).
ASK_EVERY_S = 60.0
# ... and after this long when only ``timedatectl`` could answer (the service's sandbox):
# each ask starts systemd-timedated over D-Bus, which exits 30 s after its last call. On
# the emulated Pi (tests/pi, the clock phase) a start took 5-7 s and 3.5-4 s of CPU:
# asked every minute, the 3 s it was given never sufficed (the daemon never learnt the
# clock was synchronized) and it cost a few per cent of the board's CPU for nothing.
ASK_TIMEDATED_EVERY_S = 600.0
# How long timedatectl may take: timedated's start on a slow board, and a busy bus.
TIMEDATECTL_TIMEOUT_S = 20.0


class Sync(NamedTuple):
    """What the system says of its clock: ``state`` (SYNCHRONIZED, UNSYNCHRONIZED or
    UNKNOWN) and who says so, or why nobody does (``source``, words for people)."""

    state: str
    source: str


class Verdict(NamedTuple):
    """What feedsync may believe of the clock, now (:func:`judge`)."""

    state: str  # SYNCHRONIZED, UNSYNCHRONIZED, WRONG or UNKNOWN
    now: str  # what it reads
    newest: str  # the newest time the database holds, by which it is judged ('' if none)
    why: str  # why, in a few words for people (what it reads, who says so)

    @property
    def believed(self) -> bool:
        """Whether a decision may rest on it: retention, a fetch time that retention will
        judge. Synchronized, or nothing known against it."""
        return self.state in (SYNCHRONIZED, UNKNOWN)


def horizon(moment: str) -> str:
    """The latest a time can lie that was set no later than ``moment`` (a stored
    timestamp) by a clock that is right: ``moment`` and :data:`SLACK`. A stored time
    beyond it was set by a clock ahead of this one, or this one has stepped back since:
    whatever it schedules (a poll, a lease, a retry) has come."""
    return timestamps.shift(moment, SLACK)


def at_least(now: datetime, saved: str | None) -> datetime:
    """The earliest it can be, for a clock reading ``now``: ``now``, unless that cannot
    be right (before :data:`EARLIEST`), then ``saved`` (a time the card's last save
    stored), else EARLIEST. What a restore counts the days it keeps back from: at 1970,
    ``now`` minus a week kept the whole archive's entries, into a RAM disk of 100 MB."""
    if now >= EARLIEST:
        return now
    try:
        return max(timestamps.from_iso(saved or ""), EARLIEST)
    except ValueError:
        return EARLIEST


def judge(now: datetime, newest: str, sync: Sync) -> Verdict:
    """What the clock reading ``now`` may be believed, given ``newest``, the newest poll
    time the database holds (written by this machine's clock or another's; '' if none),
    and what the system says (``sync``).

    - Before :data:`EARLIEST` it is wrong, whatever anything says (1970 at boot).
    - Synchronized, it is believed, even before a time stored: that time was written by
      a clock that ran ahead (a bad NTP answer, a wrong RTC) and the next poll of each
      feed writes it again (feeds_to_poll: a schedule written ahead is due).
    - Before a time stored (and :data:`SLACK`) it is wrong: the clock cannot be before a
      time already stored. The feeds are due at once and polled again at this clock's
      time, so ``newest`` holds too, until what was stored meanwhile is settled, the
      newest time stored when the clock was found wrong (sql/meta.sql:
      clock_suspect_until): a clock that is behind stays wrong until it passes that
      time. (Believed from its next pass on, a Pi booted 200 days behind settled what
      it had fetched at its own time, still behind, and once set right its retention
      took those articles for 200 days old.)
    - A synchronization service that has not set it yet: unsynchronized.
    - Otherwise nothing is known against it.
    """
    at = timestamps.to_iso(now)
    if now < EARLIEST:
        return Verdict(WRONG, at, newest, f"it reads {_shown(at)}, before feedsync existed")
    if sync.state == SYNCHRONIZED:
        return Verdict(SYNCHRONIZED, at, newest, sync.source)
    if newest and horizon(at) < newest:
        why = f"it reads {_shown(at)}, before a poll stored at {_shown(newest)}"
        return Verdict(WRONG, at, newest, why)
    return Verdict(sync.state, at, newest, sync.source)


def _shown(iso: str) -> str:
    return iso.replace("T", " ")[:16]


def kernel_synchronized() -> bool | None:
    """The kernel's NTP state (adjtimex(2), reading only: no privilege needed): whether
    an NTP daemon keeps the clock, judged as systemd's ``timedatectl`` does (maximum
    error under 16 s: chrony may leave STA_UNSYNC set to keep the kernel off the RTC).
    None when it cannot be asked: not Linux, or a seccomp filter (systemd's
    ``ProtectClock=yes`` refuses even a read; Docker's default profile may)."""
    try:
        import ctypes
    except ImportError:  # a Python built without it
        return None

    class Timex(ctypes.Structure):
        # struct timex begins the same on every Linux ABI (int, then longs); the rest,
        # whatever its layout, fits in the padding
        _fields_ = [
            ("modes", ctypes.c_uint),
            ("offset", ctypes.c_long),
            ("freq", ctypes.c_long),
            ("maxerror", ctypes.c_long),
            ("esterror", ctypes.c_long),
            ("status", ctypes.c_int),
            ("rest", ctypes.c_byte * 256),
        ]

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        adjtimex = libc.adjtimex
    except (OSError, AttributeError):
        return None
    timex = Timex()  # modes 0: read only
    if adjtimex(ctypes.byref(timex)) < 0:
        return None
    return bool(timex.maxerror < MAXERROR_SYNCED_US)


def timedated_synchronized() -> bool | None:
    """``timedatectl show -p NTPSynchronized``: systemd-timedated asks the kernel for us
    (outside a sandbox that refuses adjtimex). None without systemd or its bus."""
    try:
        done = subprocess.run(
            ["timedatectl", "show", "--property=NTPSynchronized", "--value"],
            capture_output=True,
            text=True,
            timeout=TIMEDATECTL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    answer = done.stdout.strip()
    if done.returncode != 0 or answer not in ("yes", "no"):
        return None
    return answer == "yes"


def synchronization(kernel: bool | None, run: Path = Path("/run")) -> Sync:
    """What the system says of its clock (see the module), from the kernel's answer
    (``kernel``: :func:`kernel_synchronized`, else :func:`timedated_synchronized`; None:
    neither could be asked) and the services found under ``run``."""
    if kernel is True:
        return Sync(SYNCHRONIZED, "the kernel's NTP state says so")
    if (run / TIMESYNCD_SYNCED).exists():
        return Sync(SYNCHRONIZED, "systemd-timesyncd set it since boot")
    if (run / TIMESYNCD).is_dir():
        return Sync(UNSYNCHRONIZED, "systemd-timesyncd has not set it since boot")
    for name, shows in SERVICES:
        if (run / shows).exists():
            if kernel is False:
                return Sync(UNSYNCHRONIZED, f"{name} runs, the kernel's NTP state says no")
            return Sync(UNKNOWN, f"{name} runs, its state cannot be read here")
    if kernel is False:
        return Sync(UNKNOWN, "no time service found")
    return Sync(UNKNOWN, "no time service found, the kernel's state unreadable")


_asked: tuple[float, Sync] | None = None  # when (monotonic), what
_asked_again_after = ASK_EVERY_S


def system_synchronization(
    kernel: Callable[[], bool | None] = kernel_synchronized,
    timedated: Callable[[], bool | None] = timedated_synchronized,
    run: Path = Path("/run"),
) -> Sync:
    """:func:`synchronization` of this system, asked again at most every
    :data:`ASK_EVERY_S` seconds in a process (the daemon judges the clock at every pass).
    Where the kernel cannot be asked (the service's sandbox) and systemd-timesyncd runs,
    its own file answers (Raspberry Pi OS); else ``timedatectl``, every
    :data:`ASK_TIMEDATED_EVERY_S`: each ask starts timedated, whose start and stop also
    put half a dozen lines in the journal, on the SD card (the emulated Pi wrote 2 MB in
    10 minutes of polling with every pass asking). ``kernel``, ``timedated`` and ``run``
    are the ways of asking (tests)."""
    global _asked, _asked_again_after
    now = time.monotonic()
    if _asked is None or now - _asked[0] >= _asked_again_after:
        said = kernel()
        _asked_again_after = ASK_EVERY_S
        if said is None and not (run / TIMESYNCD).is_dir():
            said = timedated()
            _asked_again_after = ASK_TIMEDATED_EVERY_S
        _asked = (now, synchronization(said, run))
    return _asked[1]


def forget() -> None:
    """Ask the system again at the next :func:`system_synchronization` (tests)."""
    global _asked
    _asked = None
