"""Talking to systemd: READY, STATUS, WATCHDOG, STOPPING (the sd_notify protocol).

Through systemd-python's ``systemd.daemon.notify`` when it is installed (Debian's
python3-systemd), else the protocol itself: one datagram per message to the AF_UNIX socket
named by ``$NOTIFY_SOCKET`` (a leading ``@`` is the abstract namespace). Without
``$NOTIFY_SOCKET`` (not started by systemd) every call does nothing.

The watchdog is fed only from the loop that does the work (the daemon's worker thread and
the pass's progress), never from a timer of its own: a daemon stuck in a job stops
feeding it, and systemd restarts it after ``WatchdogSec``.
"""

from __future__ import annotations

import importlib
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta


def _library_sender() -> Callable[[str], bool] | None:
    try:
        daemon = importlib.import_module("systemd.daemon")  # Debian: python3-systemd
    except ImportError:
        return None
    notify: Callable[[str], bool] = daemon.notify
    return notify


class Notifier:
    """sd_notify for this process; a no-op outside systemd."""

    def __init__(self, environ: Mapping[str, str] = os.environ, use_library: bool = True):
        self.address = environ.get("NOTIFY_SOCKET") or None
        self.watchdog: timedelta | None = None
        usec = environ.get("WATCHDOG_USEC", "")
        pid = environ.get("WATCHDOG_PID", "")
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            self.watchdog = timedelta(microseconds=int(usec))
        self._library = _library_sender() if use_library and self.address else None
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._last_ping = 0.0

    @property
    def active(self) -> bool:
        return self.address is not None

    def send(self, message: str) -> None:
        """One notification (``KEY=value`` lines). Never raises: systemd being away
        must not stop the work."""
        if self.address is None:
            return
        with self._lock:
            try:
                if self._library is not None:
                    self._library(message)
                    return
                if self._socket is None:
                    self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                target = self.address
                if target.startswith("@"):
                    target = "\0" + target[1:]
                self._socket.sendto(message.encode("utf-8"), target)
            except OSError:
                pass

    def ready(self, status: str) -> None:
        self.send(f"READY=1\nSTATUS={status}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def stopping(self, status: str = "stopping") -> None:
        self.send(f"STOPPING=1\nSTATUS={status}")

    def alive(self) -> None:
        """The work is progressing: feed the watchdog (at most every quarter period)."""
        if self.watchdog is None:
            return
        now = time.monotonic()
        if now - self._last_ping >= self.watchdog.total_seconds() / 4:
            self._last_ping = now
            self.send("WATCHDOG=1")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
