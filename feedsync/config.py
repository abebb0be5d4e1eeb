"""Configuration: where it is found, what it may say, and a clear error for anything else.

The file is TOML. It is looked for in this order: ``--config FILE``, ``$FEEDSYNC_CONFIG``,
``/etc/feedsync/feedsync.toml``, ``$XDG_CONFIG_HOME/feedsync/feedsync.toml``; with none of
them, per-user defaults under the XDG directories apply. Every key is declared once in
``_SCHEMA`` below with its type and default, so an unknown key or a bad value is reported
naming the key (``poll.timeout``) and the file, in one line. Durations are written
"90s", "30m", "24h", "7d" or combined ("1h30m").
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

SYSTEM_CONFIG = Path("/etc/feedsync/feedsync.toml")


class ConfigError(Exception):
    """A configuration problem, worded for the user; the CLI prints it and exits 2."""


@dataclass(frozen=True)
class StorageConfig:
    db: Path  # the live database (on tmpfs when there is a snapshot)
    snapshot: Path | None  # the card database, everything (the SD card); None: see below
    snapshot_interval: timedelta = timedelta(hours=1)
    # a PostgreSQL server instead of the file (a libpq URI); db and snapshot then unused
    url: str | None = None
    ram_budget: int | None = None  # bytes; None: half the live database's file system
    card_budget: int | None = None  # bytes; None: the card's file system but 5% of it

    @property
    def live_path(self) -> Path:
        """The live database: ``db``, or, with no snapshot (a database on a disk), a
        working file beside ``db``."""
        if self.snapshot is not None:
            return self.db
        return self.db.with_name(f"{self.db.stem}-live{self.db.suffix or '.db'}")

    @property
    def card_path(self) -> Path:
        """The database that holds everything: the snapshot (on the SD card), or, with
        none configured, ``db`` itself."""
        return self.snapshot if self.snapshot is not None else self.db


@dataclass(frozen=True)
class PollConfig:
    lookback: timedelta = timedelta(hours=24)
    concurrency: int = 8
    per_host: int = 2
    timeout: timedelta = timedelta(seconds=30)
    interval: timedelta = timedelta(minutes=30)  # for a feed without a publishing history
    min_interval: timedelta = timedelta(minutes=10)
    max_interval: timedelta = timedelta(hours=24)
    max_feed_bytes: int = 10 * 1024 * 1024
    failing_after: int = 3  # failed polls in a row before a feed shows as failing
    lease: timedelta = timedelta(minutes=5)  # a feed poll's claim, should its process die


DEFAULT_USER_AGENT = "feedsync/{version} (+https://github.com/feedsync/feedsync)"


@dataclass(frozen=True)
class FetchConfig:
    user_agent: str = DEFAULT_USER_AGENT  # {version} is replaced
    allow_private: bool = False  # article pages on loopback/private/link-local addresses
    host_delay: timedelta = timedelta(seconds=1)  # between two requests to one host
    max_retry_after: timedelta = timedelta(hours=6)  # a longer Retry-After is capped


@dataclass(frozen=True)
class ExtractConfig:
    max_attempts: int = 5
    retry_backoff: timedelta = timedelta(minutes=15)
    workers: int = 2
    timeout: timedelta = timedelta(seconds=60)
    max_page_bytes: int = 5 * 1024 * 1024
    lease: timedelta = timedelta(minutes=15)


@dataclass(frozen=True)
class RetentionConfig:
    news_days: int = 90  # extracted articles older than this are pruned; 0: kept forever
    tombstone_days: int = 365  # their news_summary rows stay this long, so never refetched


@dataclass(frozen=True)
class DaemonConfig:
    tick: timedelta = timedelta(seconds=60)  # how often the daemon looks for due work


@dataclass(frozen=True)
class IdentityConfig:
    window: timedelta = timedelta(days=7)  # how far back revisions and duplicates are sought


@dataclass(frozen=True)
class MetricsConfig:
    # a file for node_exporter's textfile collector (Prometheus text format); None: off
    textfile: Path | None = None


@dataclass(frozen=True)
class FeedConfig:
    url: str
    identity: str = "auto"  # "url+title": no revision/duplicate heuristics for this feed


@dataclass(frozen=True)
class Config:
    storage: StorageConfig
    poll: PollConfig = field(default_factory=PollConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    fetch: FetchConfig = field(default_factory=FetchConfig)
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    identity: IdentityConfig = field(default_factory=IdentityConfig)
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    feeds: tuple[FeedConfig, ...] = ()
    source: Path | None = None  # the file this came from; None for built-in defaults


# ---------------------------------------------------------------- value parsers

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)")
_DURATION_UNITS = {
    "ms": 0.001,
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
    "w": 7 * 86400,
}


def parse_duration(text: str) -> timedelta:
    """Parse "90s", "30m", "24h", "7d", "1h30m"; raises ValueError otherwise."""
    compact = text.strip().replace(" ", "")
    parts = _DURATION_PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ValueError(text)
    return timedelta(seconds=sum(float(n) * _DURATION_UNITS[u] for n, u in parts))


def _duration(value: Any) -> timedelta:
    if not isinstance(value, str):
        raise ValueError('expected a duration string like "90s", "30m" or "24h"')
    try:
        return parse_duration(value)
    except ValueError:
        raise ValueError(f'expected a duration like "90s", "30m" or "24h", got "{value}"') from None


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"expected a whole number of at least 1, got {value!r}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "\r\n"):
        raise ValueError(f"expected one line of text, got {value!r}")
    return value.strip()


def _days(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a number of days (0 for never), got {value!r}")
    return value


def _size(value: Any) -> int:
    """A byte size: an integer, or "10MB" / "512KB" / "5MiB"."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+)\s*(B|KB|KiB|MB|MiB|GB|GiB)?\s*", value, re.IGNORECASE)
        if m:
            unit = (m.group(2) or "B").lower()
            mult = {
                "b": 1,
                "kb": 1000,
                "kib": 1024,
                "mb": 10**6,
                "mib": 2**20,
                "gb": 10**9,
                "gib": 2**30,
            }[unit]
            if int(m.group(1)) > 0:
                return int(m.group(1)) * mult
    raise ValueError(f'expected a size like "10MB" or a number of bytes, got {value!r}')


def _path(value: Any) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a file path, got {value!r}")
    return Path(value).expanduser()


def _textfile(value: Any) -> Path:
    """node_exporter's textfile collector reads only files named ``*.prom``."""
    path = _path(value)
    if path.suffix != ".prom":
        raise ValueError(
            f"expected a file name ending in .prom (node_exporter reads only those), got {value!r}"
        )
    return path


def database_url(value: Any) -> str:
    """A libpq connection URI; the password in it stays out of every message."""
    if not isinstance(value, str) or not re.match(r"(?i)^postgres(ql)?://", value.strip()):
        raise ValueError(
            'expected a PostgreSQL URI like "postgresql://user@host:5432/feedsync" '
            "(or postgresql:///feedsync?host=/run/postgresql)"
        )
    return value.strip()


def _feed_url(value: Any) -> str:
    if not isinstance(value, str) or not re.match(r"(?i)^https?://[^/\s]+", value.strip()):
        raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
    return value.strip()


# key -> parser; the dataclass field of the same name receives the parsed value
_SCHEMA: dict[str, dict[str, Callable[[Any], Any]]] = {
    "storage": {
        "db": _path,
        "snapshot": _path,
        "snapshot_interval": _duration,
        "url": database_url,
        "ram_budget": _size,
        "card_budget": _size,
    },
    "poll": {
        "lookback": _duration,
        "concurrency": _positive_int,
        "per_host": _positive_int,
        "timeout": _duration,
        "interval": _duration,
        "min_interval": _duration,
        "max_interval": _duration,
        "max_feed_bytes": _size,
        "failing_after": _positive_int,
        "lease": _duration,
    },
    "extract": {
        "max_attempts": _positive_int,
        "retry_backoff": _duration,
        "workers": _positive_int,
        "timeout": _duration,
        "max_page_bytes": _size,
        "lease": _duration,
    },
    "fetch": {
        "user_agent": _text,
        "allow_private": _bool,
        "host_delay": _duration,
        "max_retry_after": _duration,
    },
    "retention": {"news_days": _days, "tombstone_days": _days},
    "daemon": {"tick": _duration},
    "identity": {"window": _duration},
    "metrics": {"textfile": _textfile},
}


def _identity(value: Any) -> str:
    if value not in ("auto", "url+title"):
        raise ValueError(f'expected "auto" or "url+title", got {value!r}')
    return str(value)


_FEED_KEYS: dict[str, Callable[[Any], Any]] = {"url": _feed_url, "identity": _identity}


# ---------------------------------------------------------------- locating and loading


def _xdg(name: str, fallback: str) -> Path:
    value = os.environ.get(name, "")
    return Path(value) if value.startswith("/") else Path.home() / fallback


def user_config_path() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / "feedsync" / "feedsync.toml"


SHM = Path("/dev/shm")


def default_storage() -> StorageConfig:
    """Per-user defaults, used when no file names the database.

    The live database goes to ``/dev/shm/feedsync-<uid>/`` (tmpfs), the snapshot to
    ``$XDG_DATA_HOME/feedsync/``. Not ``$XDG_RUNTIME_DIR``: cron does not set it, and
    logind removes ``/run/user/<uid>`` at logout, so a cron run and a shell would work on
    two different live databases. Without /dev/shm, the database lives in the data folder
    and there are no snapshots.
    """
    data = _xdg("XDG_DATA_HOME", ".local/share") / "feedsync"
    if SHM.is_dir():
        return StorageConfig(
            db=SHM / f"feedsync-{os.getuid()}" / "feedsync.db", snapshot=data / "feedsync.db"
        )
    return StorageConfig(db=data / "feedsync.db", snapshot=None)


def find_config_file(explicit: str | None, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The file to read, by the documented order; None means built-in defaults.

    A file named explicitly (flag or environment) must exist; the well-known locations
    are simply skipped when absent.
    """
    named = explicit or environ.get("FEEDSYNC_CONFIG")
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            how = "--config" if explicit else "FEEDSYNC_CONFIG"
            raise ConfigError(f"config file not found: {path} (from {how})")
        return path
    for candidate in (SYSTEM_CONFIG, user_config_path()):
        if candidate.is_file():
            return candidate
    return None


def load(explicit: str | None = None) -> Config:
    """Find, read and validate the configuration."""
    path = find_config_file(explicit)
    if path is None:
        return Config(storage=default_storage())
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return from_dict(raw, source=path)


def from_dict(raw: Mapping[str, Any], source: Path | None = None) -> Config:
    """Validate a parsed TOML document; every error names the key that is wrong."""
    where = f"{source}: " if source else ""

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{where}{key}: {message}")

    for top in raw:
        if top not in _SCHEMA and top != "feeds":
            known = ", ".join(sorted([*_SCHEMA, "feeds"]))
            raise fail(top, f"unknown section (known: {known})")

    sections: dict[str, dict[str, Any]] = {}
    for name, keys in _SCHEMA.items():
        table = raw.get(name, {})
        if not isinstance(table, dict):
            raise fail(name, "expected a [section] table")
        parsed: dict[str, Any] = {}
        for key, value in table.items():
            if key not in keys:
                raise fail(f"{name}.{key}", f"unknown key (known: {', '.join(keys)})")
            try:
                parsed[key] = keys[key](value)
            except ValueError as exc:
                raise fail(f"{name}.{key}", str(exc)) from None
        sections[name] = parsed

    feeds_raw = raw.get("feeds", [])
    if not isinstance(feeds_raw, list):
        raise fail("feeds", 'expected [[feeds]] tables, each with url = "..."')
    feeds: list[FeedConfig] = []
    for index, item in enumerate(feeds_raw):
        label = f"feeds[{index}]"
        if not isinstance(item, dict):
            raise fail(label, 'expected a [[feeds]] table with url = "..."')
        for key in item:
            if key not in _FEED_KEYS:
                raise fail(f"{label}.{key}", f"unknown key (known: {', '.join(_FEED_KEYS)})")
        if "url" not in item:
            raise fail(f"{label}.url", "missing")
        values = {}
        for key, parse in _FEED_KEYS.items():
            if key in item:
                try:
                    values[key] = parse(item[key])
                except ValueError as exc:
                    raise fail(f"{label}.{key}", str(exc)) from None
        feeds.append(FeedConfig(**values))

    defaults = default_storage()
    given = sections["storage"]
    if "url" in given:
        clash = [
            f"storage.{key}"
            for key in ("db", "snapshot", "ram_budget", "card_budget")
            if key in given
        ]
        if clash:
            raise fail(
                "storage.url",
                f"cannot be used with {' and '.join(clash)}: with a PostgreSQL server there "
                "is no database file and no snapshot (back it up with pg_dump)",
            )
        storage = StorageConfig(db=defaults.db, snapshot=None, url=given["url"])
    else:
        storage = StorageConfig(
            db=given.get("db", defaults.db),
            # naming the database but no snapshot means: a database on a disk, which
            # holds everything itself (its working file beside it)
            snapshot=given.get("snapshot", None if "db" in given else defaults.snapshot),
            snapshot_interval=given.get("snapshot_interval", defaults.snapshot_interval),
            ram_budget=given.get("ram_budget"),
            card_budget=given.get("card_budget"),
        )
    if storage.snapshot is not None and storage.snapshot.absolute() == storage.db.absolute():
        raise fail(
            "storage.snapshot",
            "must be another file than storage.db (the snapshot "
            "is the persistent copy of the live database)",
        )
    poll = PollConfig(**sections["poll"])
    if poll.min_interval > poll.max_interval:
        raise fail("poll.min_interval", "is longer than poll.max_interval")
    retention = RetentionConfig(**sections["retention"])
    if retention.tombstone_days and (
        retention.news_days == 0 or retention.tombstone_days < retention.news_days
    ):
        raise fail(
            "retention.tombstone_days",
            f"is {retention.tombstone_days}: it must be 0 (keep forever) or at least "
            "retention.news_days, or a pruned article could be fetched again",
        )
    daemon = DaemonConfig(**sections["daemon"])
    if daemon.tick < timedelta(seconds=1):
        raise fail("daemon.tick", "must be at least 1s")
    return Config(
        storage=storage,
        poll=poll,
        extract=ExtractConfig(**sections["extract"]),
        fetch=FetchConfig(**sections["fetch"]),
        retention=retention,
        identity=IdentityConfig(**sections["identity"]),
        daemon=daemon,
        metrics=MetricsConfig(**sections["metrics"]),
        feeds=tuple(feeds),
        source=source,
    )


def feed_identities(config: Config) -> dict[str, str]:
    """The config file's feeds, canonical URL -> identity mode; a URL that has no
    canonical form is an error naming its key."""
    from feedsync.canonical import canonical_url  # w3lib: only when feeds are read

    found: dict[str, str] = {}
    for index, feed in enumerate(config.feeds):
        url = canonical_url(feed.url)
        if url is None:
            raise ConfigError(
                f"{config.source}: feeds[{index}].url: not a usable http(s) URL: {feed.url!r}"
            )
        found.setdefault(url, feed.identity)
    return found


def feed_urls(config: Config) -> list[str]:
    """The config file's feeds, canonical (see :func:`feed_identities`)."""
    return list(feed_identities(config))
