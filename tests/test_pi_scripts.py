"""The emulated-Pi tier (tests/pi/) is run on demand, not in CI: it takes about an hour.

CI keeps what is quick: every script in tests/pi parses (``bash -n``; tests/run.sh runs
shellcheck on them), and the host side works: the world server serves feeds whose links
point at the guest's view of the host (10.0.2.2), answers conditional GETs, counts every
request, and tests/pi/check.py turns a work dir into a verdict.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

PI = Path(__file__).resolve().parent / "pi"
SCRIPTS = sorted(PI.glob("*.sh"))


def test_the_tier_is_there() -> None:
    names = {p.name for p in SCRIPTS}
    assert {"run.sh", "guest-run.sh", "common.sh", "guest-lib.sh"} <= names
    assert {
        f"guest-{n}" for n in ("1-install.sh", "2-reboot.sh", "3-powercut.sh", "4-after.sh")
    } <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bash_syntax(script: Path) -> None:
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_world_server(tmp_path: Path) -> None:
    port = free_port()
    state = tmp_path / "world"
    server = subprocess.Popen(
        [sys.executable, str(PI / "world.py"), "--port", str(port), "--state", str(state)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(100):
            if (state / "world.pid").exists():
                break
            time.sleep(0.1)
        world = json.loads((state / "world.json").read_text())
        assert world["base"] == f"http://10.0.2.2:{port}"
        assert len(world["feeds"]) == 6
        assert world["expected"]["1"] == 24
        local = f"http://127.0.0.1:{port}"
        feed = urllib.request.urlopen(f"{local}/feeds/politics.xml")
        body = feed.read().decode()
        assert f"http://10.0.2.2:{port}/news/story-000.html" in body
        assert "127.0.0.1" not in body
        request = urllib.request.Request(
            f"{local}/feeds/politics.xml", headers={"If-None-Match": feed.headers["ETag"]}
        )
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(request)
        assert answer.value.code == 304
        urllib.request.urlopen(f"{local}/news/story-003.html").read()
        assert "story-024" not in body
        urllib.request.urlopen(f"{local}/control/wave/2").read()
        assert "story-024" in urllib.request.urlopen(f"{local}/feeds/politics.xml").read().decode()
        urllib.request.urlopen(f"{local}/control/mark/armed").read()
        assert (state / "mark-armed").exists()
        hits = json.loads((state / "hits.json").read_text())
        assert hits["/news/story-003.html"] == 1
        assert hits["/feeds/politics.xml"] == 3
        statuses = [
            json.loads(x)["status"] for x in (state / "requests.jsonl").read_text().splitlines()
        ]
        assert statuses.count(304) == 1
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_check_reads_a_work_dir(tmp_path: Path) -> None:
    """A work dir where phase 1 passed and the others never ran: the verdict is FAIL."""
    world = tmp_path / "world"
    world.mkdir()
    pages = {str(w): [f"/news/story-{w}{i}.html" for i in range(2)] for w in range(1, 4)}
    (world / "world.json").write_text(json.dumps({"pages": pages}))
    (world / "requests.jsonl").write_text(
        "".join(json.dumps({"t": 5.0, "path": p, "status": 200}) + "\n" for p in pages["1"])
    )
    (tmp_path / "phases.txt").write_text("1 install start 1.0\n1 install end 10.0 0\n")
    (tmp_path / "phase1").mkdir()
    (tmp_path / "phase1" / "results.txt").write_text(
        "CHECK PASS install (exit 0)\nFIGURE install_seconds 12.3 s wall time of install.sh\n"
    )
    result = subprocess.run(
        [sys.executable, str(PI / "check.py"), str(tmp_path)], capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "PASS 1-install/install (exit 0)" in result.stdout
    assert "PASS server/wave1-never-fetched-again" in result.stdout
    assert "FAIL 2-reboot/results the phase left no results" in result.stdout
    assert "1/install_seconds = 12.3 s    # wall time of install.sh" in result.stdout
