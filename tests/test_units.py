"""The systemd units: valid (systemd-analyze verify) and hardened (security exposure)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SERVICE = REPO / "systemd" / "feedsync.service"
USER_SERVICE = REPO / "systemd" / "feedsync-user.service"
FEEDSYNC = Path(sys.executable).parent / "feedsync"

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze is not installed (tests/run.sh installs it)",
)


def exposure(unit: Path) -> float:
    done = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", str(unit)],
        capture_output=True,
        text=True,
    )
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout)
    assert match, done.stdout + done.stderr
    return float(match.group(1))


def test_the_service_is_hardened_to_an_exposure_of_at_most_1_5() -> None:
    # README states the figure; the issue asks 2.0 or lower, 1.5 as the aim
    assert exposure(SERVICE) <= 1.5


def verify(unit: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["systemd-analyze", "verify", *args, str(unit)], capture_output=True, text=True, env=env
    )
    return (done.stdout + done.stderr).strip() + ("" if done.returncode == 0 else " [failed]")


def test_the_service_unit_verifies(tmp_path: Path) -> None:
    # verify checks ExecStart exists: point it at the feedsync this test runs
    text = SERVICE.read_text().replace("/opt/feedsync/venv/bin/feedsync", str(FEEDSYNC))
    unit = tmp_path / "feedsync.service"
    unit.write_text(text)
    assert verify(unit) == ""


def test_the_user_unit_verifies(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bin_dir = home / ".local/share/feedsync/venv/bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "feedsync").symlink_to(FEEDSYNC)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
    assert verify(USER_SERVICE, "--user", env=env) == ""


def test_a_broken_unit_is_caught(tmp_path: Path) -> None:
    unit = tmp_path / "feedsync.service"
    unit.write_text(SERVICE.read_text().replace("Type=notify", "Type=notifyy"))
    assert "[failed]" in verify(unit) or "Failed to parse" in verify(unit)


WEB_SERVICE = REPO / "systemd" / "feedsync-web.service"
WEB_SOCKET = REPO / "systemd" / "feedsync-web.socket"


def test_the_web_units_verify_and_are_hardened_as_the_service(tmp_path: Path) -> None:
    # feedsync serve, socket-activated: at most the daemon's exposure (it has no network
    # of its own: PrivateNetwork), the same user, and a socket on loopback only
    assert exposure(WEB_SERVICE) <= exposure(SERVICE)
    service = WEB_SERVICE.read_text()
    for line in ("User=feedsync", "Group=feedsync", "PrivateNetwork=yes", "NoNewPrivileges=yes"):
        assert line in service.splitlines()
    hardening = {
        line
        for line in SERVICE.read_text().splitlines()
        if re.match(r"^(Protect|Private|Restrict)", line)
    }
    assert hardening <= set(service.splitlines())
    assert "ListenStream=127.0.0.1:8470" in WEB_SOCKET.read_text().splitlines()
    (tmp_path / "feedsync-web.service").write_text(
        service.replace("/opt/feedsync/venv/bin/feedsync", str(FEEDSYNC))
    )
    socket_unit = tmp_path / "feedsync-web.socket"
    socket_unit.write_text(WEB_SOCKET.read_text())
    assert verify(socket_unit) == ""
    assert verify(tmp_path / "feedsync-web.service") == ""
