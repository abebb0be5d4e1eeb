"""A running ``feedsync serve`` for the tests: the real command as a subprocess, with
the tests' own handlers (tests/serve_stub.py: the server's tests) or feedsync's (the
pages' and feeds' tests in a real browser and a real reader), its URL read from the line
it prints, stopped by SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import FeedsyncEnv, cli_env

STUB = Path(__file__).resolve().parent / "serve_stub.py"


class Serving:
    """A running ``feedsync serve``: its process, its base URL, its output so far."""

    def __init__(
        self,
        fs: FeedsyncEnv,
        *args: str,
        env: dict[str, str] | None = None,
        stub: bool = True,
    ) -> None:
        if not fs.config_path.exists():
            fs.configure()
        # the real command with the tests' own handlers (stub), or the real one whole
        program = [str(STUB)] if stub else ["-m", "feedsync"]
        self.proc = subprocess.Popen(
            [sys.executable, *program, "--config", str(fs.config_path), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**cli_env(fs.root / "home"), **(env or {})},
            start_new_session=True,
        )
        self.stdout = ""
        self.base = ""

    def started(self, timeout: float = 60) -> Serving:
        """Wait for the line that says where it serves (readline on a pipe: its own
        deadline by the process's timeout below)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.stdout += line
            found = re.search(r"serving (http://\S+?)/[;?]", line)
            if found:
                self.base = found.group(1)
                return self
        self.proc.kill()
        _, err = self.proc.communicate(timeout=30)
        raise AssertionError(f"feedsync serve did not start: {self.stdout}{err}")

    def stop(self, timeout: float = 30) -> tuple[int, str]:
        """SIGTERM, then its exit code and its stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            out, err = self.proc.communicate(timeout=30)
            raise AssertionError(f"not stopped by SIGTERM in {timeout}s: {err}") from None
        self.stdout += out
        return self.proc.returncode, err
