"""Configuration: the documented search order, defaults, and one-line errors naming the key."""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import FeedsyncEnv, cli_env

from feedsync import config
from feedsync.config import ConfigError, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("30m", timedelta(minutes=30)),
        ("24h", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
        ("1h30m", timedelta(minutes=90)),
        ("0s", timedelta(0)),
        ("1.5h", timedelta(minutes=90)),
        ("250ms", timedelta(seconds=0.25)),
    ],
)
def test_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "10", "h", "10x", "ten minutes", "-5m", "5m garbage"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_a_full_config_is_read() -> None:
    cfg = config.from_dict(
        {
            "storage": {"db": "/run/feedsync/feedsync.db", "card": "/var/lib/feedsync/f.db"},
            "poll": {"lookback": "48h", "concurrency": 4, "per_host": 1, "timeout": "20s"},
            "extract": {"max_attempts": 7, "max_page_bytes": "2MB"},
            "feeds": [{"url": "https://example.com/feed.xml"}],
        }
    )
    assert cfg.storage.db == Path("/run/feedsync/feedsync.db")
    assert cfg.storage.card == Path("/var/lib/feedsync/f.db")
    assert cfg.poll.lookback == timedelta(hours=48)
    assert (cfg.poll.concurrency, cfg.poll.per_host) == (4, 1)
    assert cfg.extract.max_attempts == 7
    assert cfg.extract.max_page_bytes == 2_000_000
    assert [f.url for f in cfg.feeds] == ["https://example.com/feed.xml"]


def test_defaults_when_nothing_is_said(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(config, "SHM", shm)
    cfg = config.from_dict({})
    # live database in RAM, the card database in the user's data folder
    assert cfg.storage.db == shm / f"feedsync-{os.getuid()}" / "feedsync.db"
    assert cfg.storage.card == tmp_path / "data" / "feedsync" / "feedsync.db"
    assert cfg.storage.save_interval == timedelta(hours=1)
    assert cfg.poll.lookback == timedelta(hours=24)
    assert cfg.extract.max_attempts == 5
    assert cfg.feeds == ()
    # no tmpfs: the database in the data folder, no card
    monkeypatch.setattr(config, "SHM", tmp_path / "no-shm")
    cfg = config.from_dict({})
    assert cfg.storage.db == tmp_path / "data" / "feedsync" / "feedsync.db"
    assert cfg.storage.card is None


def test_naming_only_the_database_means_no_card() -> None:
    cfg = config.from_dict({"storage": {"db": "/srv/feedsync.db"}})
    assert (cfg.storage.db, cfg.storage.card) == (Path("/srv/feedsync.db"), None)
    with pytest.raises(ConfigError, match=r"storage\.snapshot: must be another file"):
        config.from_dict({"storage": {"db": "/srv/f.db", "snapshot": "/srv/f.db"}})
    with pytest.raises(ConfigError, match=r"storage\.card: must be another file"):
        config.from_dict({"storage": {"db": "/srv/f.db", "card": "/srv/f.db"}})


def test_the_old_names_of_the_card_keys_are_still_read() -> None:
    """``snapshot`` and ``snapshot_interval``, as configs written before the rename say
    them, read exactly as ``card`` and ``save_interval``."""
    old = config.from_dict(
        {"storage": {"db": "/run/f.db", "snapshot": "/card/f.db", "snapshot_interval": "2h"}}
    )
    new = config.from_dict(
        {"storage": {"db": "/run/f.db", "card": "/card/f.db", "save_interval": "2h"}}
    )
    assert old.storage == new.storage
    assert (new.storage.card, new.storage.save_interval) == (Path("/card/f.db"), timedelta(hours=2))
    with pytest.raises(ConfigError, match=r"storage\.url: cannot be used with storage\.snapshot"):
        config.from_dict({"storage": {"url": "postgresql:///f", "snapshot": "/card/f.db"}})


@pytest.mark.parametrize(
    ("storage", "old", "new"),
    [
        ({"card": "/a.db", "snapshot": "/b.db"}, "snapshot", "card"),
        ({"snapshot": "/b.db", "card": "/a.db"}, "snapshot", "card"),
        ({"save_interval": "1h", "snapshot_interval": "1h"}, "snapshot_interval", "save_interval"),
    ],
)
def test_a_key_by_both_its_names_is_an_error(storage: dict[str, str], old: str, new: str) -> None:
    """Either could be the one meant: one line naming both, whatever their order."""
    with pytest.raises(ConfigError) as error:
        config.from_dict({"storage": {"db": "/run/f.db", **storage}})
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"storage.{old}: is the old name of storage.{new}")


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ({"pol": {}}, "pol"),
        ({"poll": {"lookbak": "24h"}}, "poll.lookbak"),
        ({"poll": {"timeout": "soon"}}, "poll.timeout"),
        ({"poll": {"timeout": 30}}, "poll.timeout"),
        ({"poll": {"concurrency": 0}}, "poll.concurrency"),
        ({"poll": {"concurrency": "8"}}, "poll.concurrency"),
        ({"poll": {"per_host": 0}}, "poll.per_host"),
        ({"extract": {"max_attempts": True}}, "extract.max_attempts"),
        ({"extract": {"max_page_bytes": "lots"}}, "extract.max_page_bytes"),
        ({"storage": {"db": ""}}, "storage.db"),
        ({"storage": {"snapshot_interval": "hourly"}}, "storage.snapshot_interval"),
        ({"storage": {"save_interval": "hourly"}}, "storage.save_interval"),
        ({"storage": "x"}, "storage"),
        ({"metrics": {"textfile": 5}}, "metrics.textfile"),
        (
            {"metrics": {"textfile": "/var/lib/prometheus/node-exporter/feedsync.txt"}},
            "metrics.textfile",
        ),
        ({"metrics": {"file": "/tmp/feedsync.prom"}}, "metrics.file"),
        ({"metrics": "on"}, "metrics"),
        ({"feeds": [{"url": "ftp://example.com/feed"}]}, "feeds[0].url"),
        ({"feeds": [{"link": "https://example.com/feed"}]}, "feeds[0].link"),
        ({"feeds": [{}]}, "feeds[0].url"),
        ({"feeds": {"url": "https://example.com/"}}, "feeds"),
    ],
)
def test_errors_name_the_key(raw: dict[str, object], names: str) -> None:
    with pytest.raises(ConfigError) as error:
        config.from_dict(raw, source=Path("/etc/feedsync/feedsync.toml"))
    message = str(error.value)
    assert message.startswith(f"/etc/feedsync/feedsync.toml: {names}: "), message
    assert "\n" not in message


def test_search_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    explicit = tmp_path / "explicit.toml"
    from_env = tmp_path / "env.toml"
    user = tmp_path / "xdg" / "feedsync" / "feedsync.toml"
    for path in (explicit, from_env, user):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    monkeypatch.setattr(config, "SYSTEM_CONFIG", tmp_path / "etc" / "feedsync.toml")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("FEEDSYNC_CONFIG", str(from_env))
    assert config.find_config_file(str(explicit)) == explicit
    assert config.find_config_file(None) == from_env
    monkeypatch.delenv("FEEDSYNC_CONFIG")
    assert config.find_config_file(None) == user
    user.unlink()
    assert config.find_config_file(None) is None
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "feedsync.toml").write_text("")
    assert config.find_config_file(None) == tmp_path / "etc" / "feedsync.toml"
    # the user's own comes before the system service's (issue 42 item 4; a per-user run
    # that the system config, unreadable to it, stops: tests/test_install_paths.py)
    user.write_text("")
    assert config.find_config_file(None) == user


def test_cli_reports_a_config_error_in_one_line_and_exits_2(fs: FeedsyncEnv) -> None:
    fs.config_path.write_text('[poll]\nlookback = "a day"\n')
    done = fs.run("run", expect=2)
    assert done.stderr.count("\n") == 1
    assert "poll.lookback" in done.stderr and "a day" in done.stderr
    assert "Traceback" not in done.stderr
    assert not fs.db_path.exists()  # nothing touched


def test_cli_reports_broken_toml_and_a_missing_file(fs: FeedsyncEnv) -> None:
    fs.config_path.write_text("[poll\n")
    done = fs.run("feeds", expect=2)
    assert "not valid TOML" in done.stderr and done.stderr.count("\n") == 1
    missing = fs.root / "missing.toml"
    done = subprocess.run(
        [*fs.command("feeds")[:3], "--config", str(missing), "feeds"],
        capture_output=True,
        text=True,
        env=cli_env(fs.root / "home"),
    )
    assert done.returncode == 2
    expected = f"feedsync: config error: config file not found: {missing} (from --config)\n"
    assert done.stderr == expected


def test_extraction_workers_are_auto_by_default_and_a_number_still_works() -> None:
    """``[extract] workers`` was a number before "auto" became the default: a config
    that says 2 keeps its 2."""
    assert config.from_dict({}).extract.workers == "auto"
    assert config.from_dict({"extract": {"workers": "auto"}}).extract.workers == "auto"
    assert config.from_dict({"extract": {"workers": 2}}).extract.workers == 2


@pytest.mark.parametrize("value", [0, -1, "two", "AUTO", "", 1.5, True, [2]])
def test_a_bad_number_of_workers_is_one_line_naming_the_key_and_the_value(value: object) -> None:
    with pytest.raises(ConfigError) as error:
        config.from_dict({"extract": {"workers": value}}, source=Path("/etc/feedsync/f.toml"))
    message = str(error.value)
    assert message == (
        f'/etc/feedsync/f.toml: extract.workers: expected "auto" or a whole number of at '
        f"least 1, got {value!r}"
    )


def test_per_host_may_exceed_one_pollers_concurrency() -> None:
    """per_host is the cap over every poller on the database: four pollers of
    concurrency 8 may well share 16 requests to one host."""
    cfg = config.from_dict({"poll": {"concurrency": 8, "per_host": 16}})
    assert (cfg.poll.concurrency, cfg.poll.per_host) == (8, 16)


def test_the_readme_documents_every_key_and_only_those() -> None:
    """Each key is declared once (its dataclass field, with its parser); README's table
    is what users read: a key added or removed in one and not the other is caught here,
    and every documented default is a value the key's own parser accepts."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    documented = {row.split("`")[1] for row in rows}
    declared = {f"{name}.{key}" for name, keys in config._SECTIONS.items() for key in keys}
    declared |= {f"[[feeds]] {key}" for key in config._FEED_KEYS}
    assert documented == declared
    for row in rows:
        name, default = row.split("`")[1], row.split("|")[2].strip()
        if default.startswith('`"') and "<" not in default:  # a literal TOML string
            section_name, _, key = name.rpartition(".")
            parse = (
                config._SECTIONS.get(section_name, {}).get(key)
                or config._FEED_KEYS[key.split()[-1]]
            )
            parse(default.strip("`").strip('"'))


def test_a_feed_identity_names_the_modes_of_identity() -> None:
    from feedsync import identity

    with pytest.raises(ConfigError) as err:
        config.from_dict({"feeds": [{"url": "https://example.com/rss", "identity": "guid"}]})
    assert all(f'"{mode}"' in str(err.value) for mode in identity.MODES)
    assert "feeds[0].identity" in str(err.value)
