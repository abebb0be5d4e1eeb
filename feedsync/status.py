"""What ``feedsync status --json`` says: the daemon, the feeds by health, the queue, the
articles, the storage. Built once here for ``status`` and for the metrics file
(feedsync/metrics.py), so that the two never tell different figures."""

from __future__ import annotations

import os
import socket
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feedsync import __version__, clock, timestamps

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.storage import Storage


@dataclass(frozen=True)
class DaemonState:
    running: bool
    since: str | None = None
    pid: int | None = None
    host: str | None = None
    last_seen: str | None = None


def daemon_state(info: dict[str, str], tick_seconds: float) -> DaemonState:
    """Running when it beat recently and, on this machine, its process exists."""
    if not info.get("seen_at"):
        return DaemonState(running=False)
    seen = timestamps.from_iso(info["seen_at"])
    age = (timestamps.now() - seen).total_seconds()
    running = age < max(10 * 60, 3 * tick_seconds)
    pid = int(info.get("pid", "0") or 0)
    here = info.get("host") == socket.gethostname()
    booted = _boot_time()
    if running and here and booted is not None and seen.timestamp() < booted:
        running = False  # a heartbeat from before this boot (kept on the card): its pid
        # may be another process's now
    if running and here and pid:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            running = False
        except PermissionError:
            pass  # it exists, as another user (the service)
    return DaemonState(
        running=running,
        since=info.get("started_at") if running else None,
        pid=pid or None,
        host=info.get("host"),
        last_seen=info["seen_at"],
    )


def _boot_time() -> float | None:
    """When this machine booted (seconds since the epoch, /proc/stat's btime), or None
    where that is not known."""
    try:
        with Path("/proc/stat").open(encoding="ascii") as stat:
            for line in stat:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def clock_state(storage: Storage) -> dict[str, str]:
    """What feedsync may believe of the system clock (feedsync/clock.py): ``state``
    (synchronized, unsynchronized, wrong, unknown), ``now`` (what it reads),
    ``newest_poll`` (the newest poll time stored, which it cannot be before), ``why``;
    ``retention``: "runs" or "waits"."""
    verdict = clock.judge(timestamps.now(), storage.newest_poll(), clock.system_synchronization())
    return {
        "state": verdict.state,
        "now": verdict.now,
        "newest_poll": verdict.newest,
        "why": verdict.why,
        "retention": "runs" if verdict.believed else "waits",
    }


def report(config: Config, storage: Storage) -> dict[str, Any]:
    """``feedsync status --json``, from an open storage (README, "feedsync status")."""
    where = storage.status()
    midnight = datetime.now().astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    counts = storage.status_counts(config.poll.failing_after, timestamps.to_iso(midnight))
    daemon = daemon_state(storage.daemon_info(), config.daemon.tick.total_seconds())
    healthy = counts["feeds"] - counts["disabled"] - counts["failing"] - counts["retrying"]
    return {
        "version": __version__,
        "daemon": asdict(daemon),
        "feeds": {
            "total": counts["feeds"],
            "healthy": healthy,
            "retrying": counts["retrying"],
            "failing": counts["failing"],
            "disabled": counts["disabled"],
        },
        "queue": {
            "new": counts["queue_new"],
            "failed_waiting": counts["queue_failed"],
            # the word status, news --state and the metrics use; "gone" (the state's
            # name in the database) kept for the scripts written before
            "given_up": counts["gone"],
            "gone": counts["gone"],
        },
        "articles": {"today": counts["articles_today"], "total": counts["articles"]},
        "next_poll_at": counts["next_poll_at"],
        "last_success_at": counts["last_success_at"],
        "clock": clock_state(storage),
        "storage": where._asdict(),
    }
