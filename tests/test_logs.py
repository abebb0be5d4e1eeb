"""Where the daemon's log lines go: journald priority prefixes or timestamped stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = (
    "import logging; from feedsync import logs; print(logs.setup(), flush=True); "
    "logs.LOGGER.warning('feed down', extra=logs.url_field('https://e.com/f')); "
    "logs.LOGGER.info('all good')"
)


def run_with_stderr_to(path: Path, env: dict[str, str]) -> tuple[str, str]:
    with path.open("w") as err:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
            check=True,
        )
    return done.stdout.strip(), path.read_text()


def test_under_journald_lines_carry_priority_prefixes(tmp_path: Path) -> None:
    log = tmp_path / "stderr"
    log.touch()
    info = log.stat()
    env = {**os.environ, "JOURNAL_STREAM": f"{info.st_dev}:{info.st_ino}"}
    env.pop("PYTHONPATH", None)
    where, text = run_with_stderr_to(log, env)
    if where == "journald":  # python-systemd installed: the lines went to the journal
        return
    assert where == "journald (stderr)"
    assert text.splitlines() == ["<4>feed down", "<6>all good"]


def test_elsewhere_lines_have_timestamps(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    where, text = run_with_stderr_to(tmp_path / "stderr", env)
    assert where == "stderr"
    lines = text.splitlines()
    assert lines[0].endswith(" WARNING feed down") and lines[1].endswith(" INFO all good")
    assert lines[0][:4].isdigit()


POOL_SCRIPT = (
    "import logging; from feedsync import logs; logs.setup(); "
    "pool = logging.getLogger('psycopg.pool'); "
    "pool.warning(\"error connecting in 'feedsync': connection refused\"); "
    "pool.info('connection failed check')"
)


def test_a_postgresql_pool_warning_is_one_line_of_the_daemons_log(tmp_path: Path) -> None:
    # psycopg_pool's own logger: before, its warnings went to Python's last resort, bare
    env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    with (tmp_path / "stderr").open("w") as err:
        subprocess.run([sys.executable, "-c", POOL_SCRIPT], stderr=err, env=env, check=True)
    lines = (tmp_path / "stderr").read_text().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].endswith(" WARNING error connecting in 'feedsync': connection refused")
    assert lines[0][:4].isdigit()
