"""The figures a Pi owner graphs, as a file for node_exporter's textfile collector.

``[metrics] textfile = "/var/lib/prometheus/node-exporter/feedsync.prom"`` (off by
default): after each pass (``feedsync run``, the daemon's ticks) and each save to the
card (``feedsync save``, the daemon's saves), the figures of ``feedsync status
--json`` (feedsync/status.py) are written there in Prometheus' text exposition format.

:func:`render` builds the text from that report and nothing else (a pure function);
:func:`write` puts it in place atomically: a temporary file in the same folder, named so
that the collector skips it (it reads ``*.prom`` only), renamed over the old one, so the
collector never reads half a file. The file is readable by every user (node_exporter runs
as another one; the service's ``UMask=0077`` would make it 0600): it holds counts and
sizes only. :func:`update` is what the commands call: a failure to write is said in one
line and never stops the pass or the save.

The format is written by hand: ``# HELP``, ``# TYPE``, then ``name{label="value"}
value`` lines. All the figures are gauges (they go down too: retention prunes articles);
times are ``..._timestamp_seconds`` (Unix time), sizes ``..._bytes``. A figure not known
(no save yet, a PostgreSQL server has no card) is left out, not written as 0.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feedsync import timestamps

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.storage import Storage

Sample = tuple[Mapping[str, str], float | int | None]


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float | int | bool) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def _family(name: str, help_text: str, samples: Iterable[Sample]) -> list[str]:
    """One gauge: its HELP and TYPE lines and its samples (those with a value)."""
    known = [(labels, value) for labels, value in samples if value is not None]
    if not known:
        return []
    lines = [f"# HELP {name} {_escape_help(help_text)}", f"# TYPE {name} gauge"]
    for labels, value in known:
        assert value is not None
        inside = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())
        lines.append(
            f"{name}{{{inside}}} {_number(value)}" if inside else f"{name} {_number(value)}"
        )
    return lines


def _unix(iso: str | None) -> int | None:
    if not iso:
        return None
    try:
        return int(timestamps.from_iso(iso).timestamp())
    except ValueError:
        return None


def render(report: Mapping[str, Any], written_at: float) -> str:
    """The metrics file's text for a ``feedsync status --json`` report (its keys:
    README, "feedsync status"), written at ``written_at`` (Unix time)."""
    feeds = report["feeds"]
    queue = report["queue"]
    articles = report["articles"]
    where = report["storage"]
    out: list[str] = []

    def gauge(name: str, help_text: str, *samples: Sample) -> None:
        out.extend(_family(f"feedsync_{name}", help_text, samples))

    def one(value: float | int | None) -> Sample:
        return ({}, value)

    gauge(
        "info",
        "feedsync's version and database engine (always 1)",
        ({"version": str(report["version"]), "engine": str(where["engine"])}, 1),
    )
    gauge(
        "feeds",
        "Feeds by health: ok, retrying (failed polls in a row, fewer than poll.failing_after), "
        "failing, disabled",
        ({"health": "ok"}, feeds["healthy"]),
        ({"health": "retrying"}, feeds["retrying"]),
        ({"health": "failing"}, feeds["failing"]),
        ({"health": "disabled"}, feeds["disabled"]),
    )
    gauge(
        "articles",
        "Entries by the state of their article: extracted (stored), pending (not fetched "
        "yet), failed (waiting to retry), given_up",
        ({"state": "extracted"}, articles["total"]),
        ({"state": "pending"}, queue["new"]),
        ({"state": "failed"}, queue["failed_waiting"]),
        ({"state": "given_up"}, queue["gone"]),
    )
    gauge(
        "articles_extracted_today",
        "Articles extracted since local midnight",
        one(articles["today"]),
    )
    gauge(
        "queue_length",
        "Articles waiting to be fetched: pending and failed (waiting to retry)",
        one(queue["new"] + queue["failed_waiting"]),
    )
    gauge(
        "last_poll_success_timestamp_seconds",
        "When a feed was last polled successfully (any feed)",
        one(_unix(report.get("last_success_at"))),
    )
    gauge(
        "next_poll_timestamp_seconds",
        "When the next feed is due to be polled",
        one(_unix(report.get("next_poll_at"))),
    )
    gauge(
        "daemon_running",
        "1 when feedsync daemon is running (it beat recently), else 0",
        one(bool(report["daemon"]["running"])),
    )
    gauge(
        "snapshot_timestamp_seconds",
        "When the live database was last saved to the card database (the snapshot)",
        one(_unix(where.get("snapshot_at"))),
    )
    gauge(
        "snapshot_size_bytes",
        "Size of the card database (the snapshot: everything)",
        one(where.get("snapshot_bytes")),
    )
    gauge(
        "unsaved_changes",
        "Changes in the live database not saved to the card yet",
        one(where.get("unsaved_changes")),
    )
    gauge(
        "live_database_size_bytes",
        "Size of the live database (on the RAM disk; on PostgreSQL, the database)",
        one(where.get("live_bytes")),
    )
    gauge(
        "budget_bytes",
        "Bytes each database may take: live (on the RAM disk), card",
        ({"disk": "ram"}, where.get("ram_budget")),
        ({"disk": "card"}, where.get("card_budget")),
    )
    gauge(
        "filesystem_size_bytes",
        "Size of the file system of each database: ram (the live one), card",
        ({"disk": "ram"}, where.get("ram_disk_size")),
        ({"disk": "card"}, where.get("card_disk_size")),
    )
    gauge(
        "filesystem_free_bytes",
        "Free bytes on the file system of each database: ram (the live one), card",
        ({"disk": "ram"}, where.get("ram_disk_free")),
        ({"disk": "card"}, where.get("card_disk_free")),
    )
    believed = report.get("clock")
    if believed is not None:
        gauge(
            "clock",
            "1 for what feedsync may believe of the system clock: synchronized, "
            "unsynchronized (a time service has not set it: retention waits), wrong (it "
            "reads before feedsync existed or before a poll stored: retention waits), "
            "unknown (nothing says; judged by the poll times stored)",
            *(
                ({"state": state}, believed["state"] == state)
                for state in ("synchronized", "unsynchronized", "wrong", "unknown")
            ),
        )
    if where.get("snapshot") is not None:  # a card: it can be full, read-only or behind
        gauge(
            "problem",
            "1 while it lasts: nearly_full (a database near its budget or its disk), "
            "not_taking (no room in RAM for new entries), card_read_only (nothing can be "
            "saved), card_behind (the card lacks saves made to it)",
            ({"kind": "nearly_full"}, bool(where.get("nearly_full"))),
            ({"kind": "not_taking"}, where.get("not_taking") is not None),
            ({"kind": "card_read_only"}, where.get("card_read_only") is not None),
            ({"kind": "card_behind"}, where.get("card_behind") is not None),
        )
    gauge(
        "metrics_written_timestamp_seconds",
        "When feedsync wrote this file",
        one(int(written_at)),
    )
    return "\n".join(out) + "\n"


def _readable_mode() -> int:
    """What the umask gives a new file, readable by everyone (node_exporter is another
    user; the figures are no secret)."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o666 & ~mask) | 0o444


def write(path: Path, text: str) -> None:
    """Put ``text`` at ``path`` atomically (a temporary file beside it, renamed over it).
    Raises OSError; the temporary file is gone either way."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _readable_mode())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        Path(temporary).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        raise


def update(config: Config, storage: Storage, warn: Callable[[str], None]) -> bool:
    """Write the metrics file when ``[metrics] textfile`` is set; False when it could not
    be written (said through ``warn``, in one line). Never raises an Exception: the pass
    or the save it follows is done and stays done."""
    path = config.metrics.textfile
    if path is None:
        return True
    from feedsync import status

    try:
        text = render(status.report(config, storage), timestamps.now().timestamp())
        write(path, text)
    except OSError as exc:
        warn(f"cannot write the metrics file {path}: {exc.strerror or exc}")
        return False
    except Exception as exc:  # the database's trouble: the pass has said its own
        warn(f"cannot write the metrics file {path}: {type(exc).__name__}: {exc}")
        return False
    return True
