"""install.sh --user: a real, non-editable install into a fresh venv, as a user does it.

This is the proof that a fresh install has every dependency it needs (trafilatura's
lxml_html_clean among them) and that the wheel carries the SQL files and the demo data.
The runs use a config with temporary paths: the per-user default would put the live
database in the developer's own /dev/shm/feedsync-<uid>.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from feedsync import config as config_module

REPO = Path(__file__).resolve().parents[1]


def install(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "VIRTUAL_ENV"))}
    env.update(
        HOME=str(home),
        NO_PROXY="127.0.0.1,localhost",
        PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache/pip")),
    )
    return subprocess.run(
        [str(REPO / "install.sh"), "--user", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


@pytest.mark.slow
def test_user_install_runs_the_demo_then_the_users_feeds(tmp_path: Path) -> None:
    config = tmp_path / ".config/feedsync/feedsync.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'[storage]\ndb = "{tmp_path}/ram/feedsync.db"\nsnapshot = "{tmp_path}/card/feedsync.db"\n'
    )
    done = install(tmp_path, "--run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kept your config" in done.stdout
    assert "no feeds configured yet: running the demo" in done.stdout
    assert "6 articles fetched and extracted" in done.stdout
    installed = tmp_path / ".local/share/feedsync/venv"
    assert list(installed.glob("lib/python*/site-packages/feedsync/sql/schema.sql"))
    assert list(installed.glob("lib/python*/site-packages/feedsync/sql/migrations/0002_*.sql"))
    assert not list(installed.glob("lib/python*/site-packages/__editable__*feedsync*"))

    config.write_text(config.read_text() + '\n[[feeds]]\nurl = "http://127.0.0.1:9/feed.xml"\n')
    again = install(tmp_path, "--run")  # upgrade in place: keeps the config, runs the feeds
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 feeds polled (0 not modified, 1 failed)" in again.stdout
    assert "127.0.0.1:9/feed.xml: cannot connect" in again.stderr
    assert (tmp_path / "card/feedsync.db").exists()  # the pass ended with a snapshot


@pytest.mark.slow
def test_the_config_template_is_valid_and_never_overwritten(tmp_path: Path) -> None:
    done = install(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    config = tmp_path / ".config/feedsync/feedsync.toml"
    assert f"wrote {config}" in done.stdout
    config_module.from_dict(tomllib.loads(config.read_text()))  # raises on any bad key
    config.write_text(config.read_text() + "# mine\n")
    again = install(tmp_path)
    assert again.returncode == 0 and "kept your config" in again.stdout
    assert config.read_text().endswith("# mine\n")


def test_install_refuses_unknown_options() -> None:
    done = subprocess.run([str(REPO / "install.sh"), "--bogus"], capture_output=True, text=True)
    assert done.returncode == 2 and "unknown option: --bogus" in done.stderr
