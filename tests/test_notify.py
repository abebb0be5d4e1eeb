"""sd_notify over a real AF_UNIX datagram socket, and the watchdog's pacing."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from feedsync.notify import Notifier


def listen(address: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(5)
    return sock


def test_messages_reach_a_path_socket(tmp_path: Path) -> None:
    sock = listen(str(tmp_path / "notify"))
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "notify")}, use_library=False)
    notifier.ready("3 feeds")
    notifier.status("busy")
    notifier.stopping()
    assert [sock.recv(4096).decode() for _ in range(3)] == [
        "READY=1\nSTATUS=3 feeds",
        "STATUS=busy",
        "STOPPING=1\nSTATUS=stopping",
    ]


def test_messages_reach_an_abstract_socket() -> None:
    name = f"feedsync-test-{os.getpid()}"
    sock = listen("\0" + name)
    Notifier({"NOTIFY_SOCKET": "@" + name}, use_library=False).ready("ok")
    assert sock.recv(4096) == b"READY=1\nSTATUS=ok"


def test_the_watchdog_is_fed_at_most_four_times_a_period(tmp_path: Path) -> None:
    sock = listen(str(tmp_path / "n"))
    sock.settimeout(0.2)
    notifier = Notifier(
        {"NOTIFY_SOCKET": str(tmp_path / "n"), "WATCHDOG_USEC": "60000000"}, use_library=False
    )
    for _ in range(50):
        notifier.alive()
    assert sock.recv(4096) == b"WATCHDOG=1"
    try:
        extra = sock.recv(4096)
    except TimeoutError:
        extra = b""
    assert extra == b""  # 50 calls within 15 s: one ping


def test_a_watchdog_meant_for_another_process_is_ignored() -> None:
    notifier = Notifier(
        {
            "NOTIFY_SOCKET": "/nonexistent",
            "WATCHDOG_USEC": "1000000",
            "WATCHDOG_PID": str(os.getpid() + 1),
        },
        use_library=False,
    )
    assert notifier.watchdog is None


def test_outside_systemd_nothing_happens_and_nothing_fails() -> None:
    notifier = Notifier({}, use_library=False)
    assert not notifier.active
    notifier.ready("x")
    notifier.alive()
    gone = Notifier({"NOTIFY_SOCKET": "/nonexistent/socket"}, use_library=False)
    gone.ready("x")  # systemd away: no exception
