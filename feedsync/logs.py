"""Where the daemon's log lines go.

- Under systemd with systemd-python installed: straight to journald, with the feed or
  article URL as a structured field (``journalctl FEED_URL=https://...``).
- Under systemd without it (``$JOURNAL_STREAM`` names our stderr): stderr with
  ``<N>`` priority prefixes, which journald turns into the entry's priority.
- Otherwise: stderr with a timestamp.

A message about one feed or article is logged with ``extra={"FEED_URL": url}``
(see :func:`url_field`).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

LOGGER = logging.getLogger("feedsync")
_PRIORITY = {  # syslog levels, as journald reads them from a "<N>" prefix
    logging.DEBUG: 7,
    logging.INFO: 6,
    logging.WARNING: 4,
    logging.ERROR: 3,
    logging.CRITICAL: 2,
}


#: the loggers of the database drivers storage uses (psycopg's pool, feedsync/storage/
#: pg_connect.py), which the daemon's log takes in; named here, where they are routed,
#: so that logging, which every layer uses, imports none of them
DRIVER_LOGGERS = ("psycopg.pool",)


def url_field(url: str | None) -> dict[str, str]:
    """``extra=`` for a log call about one URL."""
    return {"FEED_URL": url} if url else {}


class _PrefixFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{_PRIORITY.get(record.levelno, 6)}>"
        return "\n".join(prefix + line for line in super().format(record).splitlines())


def _stderr_is_journal(environ: Mapping[str, str]) -> bool:
    """$JOURNAL_STREAM is "device:inode" of the stream systemd connected to journald."""
    stream = environ.get("JOURNAL_STREAM", "")
    try:
        device, inode = (int(part) for part in stream.split(":"))
        info = os.fstat(sys.stderr.fileno())
    except (ValueError, OSError):
        return False
    return (info.st_dev, info.st_ino) == (device, inode)


def setup(level: int = logging.INFO, environ: Mapping[str, str] = os.environ) -> str:
    """Configure the ``feedsync`` logger for the daemon; returns where it logs to."""
    handler: logging.Handler
    where = "stderr"
    if _stderr_is_journal(environ):
        try:
            from systemd.journal import JournalHandler

            handler = JournalHandler(SYSLOG_IDENTIFIER="feedsync")
            handler.setFormatter(logging.Formatter("%(message)s"))
            where = "journald"
        except ImportError:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(_PrefixFormatter("%(message)s"))
            where = "journald (stderr)"
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S")
        )
    LOGGER.handlers[:] = [handler]
    LOGGER.setLevel(level)
    LOGGER.propagate = False
    # APScheduler reports, at INFO and WARNING, what this design makes normal ("Running
    # job", a tick skipped while the previous pass runs: max_instances=1) and logs job
    # exceptions that the daemon logs itself: only its critical messages are kept.
    logging.getLogger("apscheduler").setLevel(logging.CRITICAL)
    logging.getLogger("apscheduler").addHandler(handler)
    # A database driver's own loggers (DRIVER_LOGGERS) say at WARNING what went wrong
    # with a connection (the server refused one, a broken one was discarded): without a
    # handler of their own, that went to Python's last-resort stderr, bare, past
    # journald's priorities. It is the one line a pool problem gets, so it goes where
    # feedsync's lines go; their INFO and DEBUG chatter are not kept.
    for name in DRIVER_LOGGERS:
        driver = logging.getLogger(name)
        driver.handlers[:] = [handler]
        driver.setLevel(logging.WARNING)
        driver.propagate = False
    return where
