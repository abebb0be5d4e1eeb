"""install.sh --user: a real, non-editable install into a fresh venv, as a user does it.

This is the proof that a fresh install has every dependency it needs (trafilatura's
lxml_html_clean among them) and that the wheel carries the SQL files and the demo data.
The runs use a config with temporary paths: the per-user default would put the live
database in the developer's own /dev/shm/feedsync-<uid>.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import tomllib
from pathlib import Path

import pytest
import sitegen

from feedsync import config as config_module
from feedsync.localserver import LocalServer

REPO = Path(__file__).resolve().parents[1]
SERVICE_TEXT = (REPO / "systemd" / "feedsync.service").read_text()


def install(home: Path, *args: str, source: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "VIRTUAL_ENV", "DBUS_"))
    }
    env.update(
        HOME=str(home),
        NO_PROXY="127.0.0.1,localhost",
        PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache/pip")),
    )
    return subprocess.run(
        [str(source / "install.sh"), "--user", *args],
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
    # ~/.local/bin is not on this shell's PATH: the demo's hint gives the command's full
    # path, and the last words say what to type (issue 22 item 6)
    command = tmp_path / ".local/bin/feedsync"
    assert f"  {command} add https://example.com/feed.xml" in done.stdout
    tail = done.stdout.splitlines()[-4:]
    assert tail[0] == (
        f"install.sh: feedsync is in {command.parent}, which is not on this shell's PATH "
        "yet. In this shell, type"
    )
    assert tail[1] == 'install.sh:     export PATH="$HOME/.local/bin:$PATH"'
    assert tail[2] == f"install.sh: or call it as {command}."
    installed = tmp_path / ".local/share/feedsync/venv"
    assert list(installed.glob("lib/python*/site-packages/feedsync/sql/schema.sql"))
    assert list(installed.glob("lib/python*/site-packages/feedsync/sql/migrations/0002_*.sql"))
    assert not list(installed.glob("lib/python*/site-packages/__editable__*feedsync*"))

    config.write_text(config.read_text() + '\n[[feeds]]\nurl = "http://127.0.0.1:9/feed.xml"\n')
    again = install(tmp_path, "--run")  # upgrade in place: keeps the config, runs the feeds
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 feed polled (0 not modified, 1 failed)" in again.stdout
    assert "127.0.0.1:9/feed.xml: cannot connect" in again.stderr
    assert (tmp_path / "card/feedsync.db").exists()  # the pass ended with a snapshot

    # a change the card lacks (add polls once, and leaves the save to the next run):
    # --uninstall saves it while the command is still there (issue 22 item 12)
    with LocalServer() as server:
        feed = server.set(
            "/news.xml", sitegen.rss2("News", server.url("/news.xml"), []), "application/rss+xml"
        )
        added = subprocess.run(
            [str(command), "--config", str(config), "add", feed],
            capture_output=True,
            text=True,
            env={**os.environ, "HOME": str(tmp_path), "NO_PROXY": "127.0.0.1"},
        )
    assert added.returncode == 0, added.stderr

    def on_the_card() -> set[str]:
        with sqlite3.connect(tmp_path / "card/feedsync.db") as conn:
            return {url for (url,) in conn.execute("SELECT url FROM feeds")}

    assert feed not in on_the_card()
    gone = install(tmp_path, "--uninstall")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert feed in on_the_card()
    live = tmp_path / "ram/feedsync.db"
    assert f"saving the live database {live} to the card database first" in gone.stdout
    assert f"the live database {live} holds nothing unsaved" in gone.stdout
    assert not command.exists() and not (tmp_path / ".local/share/feedsync/venv").exists()


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


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--bogus"], "unknown option: --bogus (see --help)"),
        (["--root", "/nonexistent"], "--root: no such directory: /nonexistent"),
        (["--root"], "--root needs a directory"),
        (["--cron", "--systemd"], "--cron and --systemd: choose one"),
        (["--uninstall", "--cron"], "--uninstall takes no --cron, --systemd or --run"),
    ],
)
def test_install_refuses_bad_options_in_one_line(args: list[str], said: str) -> None:
    """One line naming what was wrong, and nothing else: no exit code at its end, no
    error of bash's own before it (issue 42 item 5)."""
    done = subprocess.run([str(REPO / "install.sh"), *args], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"install.sh: {said}\n")


# ---------------------------------------------------------------- the system service


def install_root(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "DBUS_"))}
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache/pip"))
    return subprocess.run(
        [str(REPO / "install.sh"), "--root", str(root), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def tree(root: Path) -> dict[str, str]:
    """Every installed file outside the venv, with its content (or '<dir>')."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if relative.startswith("opt/feedsync/venv/"):
            continue
        found[relative] = "<dir>" if path.is_dir() else path.read_text(errors="replace")
    return found


@pytest.mark.slow
def test_system_install_into_a_root_is_complete_and_idempotent(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    done = install_root(root, "--systemd")
    assert done.returncode == 0, done.stdout + done.stderr
    # what could not be done inside a root is said, not done
    assert "(--root) skipped: systemctl enable feedsync.service" in done.stdout
    assert "(--root) skipped: useradd" in done.stdout or "feedsync" in done.stdout

    files = tree(root)
    assert files["etc/systemd/system/feedsync.service"] == SERVICE_TEXT
    # [storage] url may hold a password: the service's group reads it, nobody else
    assert (root / "etc/feedsync/feedsync.toml").stat().st_mode & 0o777 == 0o640
    assert "(--root) skipped: chown root:feedsync" in done.stdout
    config = files["etc/feedsync/feedsync.toml"]
    assert 'db = "/run/feedsync/feedsync.db"' in config
    assert 'card = "/var/lib/feedsync/feedsync.db"' in config
    config_module.from_dict(tomllib.loads(config))
    assert "runuser -u feedsync" in files["usr/local/bin/feedsync"]
    assert "etc/cron.d/feedsync" not in files
    assert files["var/lib/feedsync"] == "<dir>" and files["run/feedsync"] == "<dir>"
    installed = root / "opt/feedsync/venv/bin/feedsync"
    version = subprocess.run([str(installed), "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("feedsync ")

    # the unit as installed verifies (its ExecStart pointed at the installed command)
    if shutil.which("systemd-analyze"):
        unit = tmp_path / "feedsync.service"
        unit.write_text(
            files["etc/systemd/system/feedsync.service"].replace(
                "/opt/feedsync/venv/bin/feedsync", str(installed)
            )
        )
        checked = subprocess.run(
            ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True
        )
        assert (checked.returncode, checked.stdout + checked.stderr) == (0, "")

    # again: an upgrade in place, the config kept as the owner edited it
    (root / "etc/feedsync/feedsync.toml").write_text(config + "\n# my feeds\n")
    (root / "etc/feedsync/feedsync.toml").chmod(0o644)  # as an older install.sh left it
    (root / "var/lib/feedsync/feedsync.db").write_bytes(b"my data")
    again = install_root(root, "--systemd", "--postgresql")  # and the PostgreSQL driver
    assert again.returncode == 0, again.stdout + again.stderr
    assert "kept your config" in again.stdout
    python = root / "opt/feedsync/venv/bin/python"
    assert subprocess.run([str(python), "-c", "import psycopg, psycopg_pool"]).returncode == 0
    after = tree(root)
    assert after["etc/feedsync/feedsync.toml"].endswith("# my feeds\n")
    assert (root / "etc/feedsync/feedsync.toml").stat().st_mode & 0o777 == 0o640
    assert after["var/lib/feedsync/feedsync.db"] == "my data"
    assert set(after) == set(files) | {"var/lib/feedsync/feedsync.db"}

    # the cron fallback replaces the unit
    cron = install_root(root, "--cron")
    assert cron.returncode == 0, cron.stdout + cron.stderr
    crontab = (root / "etc/cron.d/feedsync").read_text()
    assert "flock -n /run/feedsync/cron.lock" in crontab and "run --due --quiet" in crontab
    assert "@reboot      root      install -d -o feedsync" in crontab
    assert not (root / "etc/systemd/system/feedsync.service").exists()

    # uninstall keeps the config and the data; purge removes them
    gone = install_root(root, "--uninstall")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    left = tree(root)
    assert "etc/cron.d/feedsync" not in left and "usr/local/bin/feedsync" not in left
    assert not (root / "opt/feedsync").exists()
    assert left["var/lib/feedsync/feedsync.db"] == "my data"
    assert "etc/feedsync/feedsync.toml" in left
    purged = install_root(root, "--uninstall", "--purge")
    assert purged.returncode == 0, purged.stdout + purged.stderr
    assert not (root / "var/lib/feedsync").exists() and not (root / "etc/feedsync").exists()


def test_purge_without_uninstall_is_refused(tmp_path: Path) -> None:
    done = install_root(tmp_path, "--purge")
    assert (done.returncode, done.stderr) == (2, "install.sh: --purge goes with --uninstall\n")


@pytest.mark.slow
def test_the_user_cron_lock_is_in_a_folder_only_the_user_has(tmp_path: Path) -> None:
    """A lock at a predictable path in /dev/shm could be made and held by another local
    user, and cron would never start a run: the lock lives in the user's 0700 folder."""
    root = tmp_path / "root"
    root.mkdir()
    done = install(tmp_path, "--root", str(root), "--cron")
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if "crontab line:" in x)
    assert f"flock -n {tmp_path}/.local/share/feedsync/cron.lock " in line
    assert "/dev/shm" not in line
    folder = root / str(tmp_path).lstrip("/") / ".local/share/feedsync"
    assert folder.stat().st_mode & 0o777 == 0o700
    config = root / str(tmp_path).lstrip("/") / ".config/feedsync/feedsync.toml"
    assert config.stat().st_mode & 0o777 == 0o600


# ---------------------------------------------------------------- the lock

# idna 3.10's wheel on PyPI (a file's hash never changes): older than the newest release,
# which pip would take if install.sh installed what pyproject.toml allows, not the lock
IDNA_3_10 = "946d195a0d259cbba61165e88e65941f16e9b36ea6ddb97f00452bae8b1287d3"


@pytest.mark.slow
def test_install_installs_exactly_the_lock(tmp_path: Path) -> None:
    """A Pi reinstalled in a year gets what CI tested: every package of the lock at its
    pinned version, even where a newer one is allowed (idna pinned back to 3.10 here)."""
    source = tmp_path / "src"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*_cache", "build"),
    )
    lock = source / ".ci/requirements.lock"
    older, count = re.subn(
        r"^idna==\S+ \\\n(?:    --hash=\S+(?: \\)?\n)+",
        f"idna==3.10 \\\n    --hash=sha256:{IDNA_3_10}\n",
        lock.read_text(),
        flags=re.MULTILINE,
    )
    assert count == 1
    lock.write_text(older)
    pinned = dict(re.findall(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", older, re.MULTILINE))

    root = tmp_path / "root"
    root.mkdir()
    done = install(tmp_path, "--root", str(root), "--no-start", source=source)
    assert done.returncode == 0, done.stdout + done.stderr
    python = root / str(tmp_path).lstrip("/") / ".local/share/feedsync/venv/bin/python"
    listing = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True
    )
    installed = {
        re.sub(r"[-_.]+", "-", p["name"]).lower(): p["version"] for p in json.loads(listing.stdout)
    }
    assert installed["idna"] == "3.10"
    assert {name: installed.get(name) for name in pinned} == pinned
    assert installed["feedsync"]  # itself, on top, with --no-deps
