"""Configuration: where it is found, what it may say, and a clear error for anything else.

The file is TOML. It is looked for in this order: ``--config FILE``, ``$FEEDSYNC_CONFIG``,
``$XDG_CONFIG_HOME/feedsync/feedsync.toml`` (the user's own), ``/etc/feedsync/feedsync.toml``
(the system service's); with none of them, per-user defaults under the XDG directories
apply. Every key is declared once in
``_SECTIONS`` below with its type and default, so an unknown key or a bad value is reported
naming the key (``poll.timeout``) and the file, in one line. Durations are written
"90s", "30m", "24h", "7d" or combined ("1h30m").
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_type_hints

from feedsync import values
from feedsync.identity import AUTO
from feedsync.values import database_url, parse_duration

if TYPE_CHECKING:
    from feedsync.records import ListedFeed

__all__ = ["database_url", "parse_duration"]  # re-exported: the CLI reads both

SYSTEM_CONFIG = Path("/etc/feedsync/feedsync.toml")


class ConfigError(Exception):
    """A configuration problem, worded for the user; the CLI prints it and exits 2."""


# Every key is declared once, here: its dataclass field carries its default and the
# parser (feedsync.values) that turns the file's value into it; the sections, the known
# keys and their validation are derived from these declarations (see _SECTIONS).


def _key(parse: Callable[[Any], Any], default: Any = MISSING) -> Any:
    """A configuration key: a dataclass field whose value the file may set, read by
    ``parse`` (which raises ValueError with the message shown after the key's name)."""
    return field(default=default, metadata={"parse": parse})


@dataclass(frozen=True)
class StorageConfig:
    db: Path = _key(values.path)  # the live database (on tmpfs when there is a card)
    # the card database, everything (the SD card); None: see from_dict
    card: Path | None = _key(values.path)
    # how often the daemon saves the live database to the card
    save_interval: timedelta = _key(values.duration, timedelta(hours=1))
    # a PostgreSQL server instead of the file (a libpq URI); db and card then unused
    url: str | None = _key(values.database_url, None)
    # bytes; None: half the live database's file system
    ram_budget: int | None = _key(values.size, None)
    # bytes; None: the card's file system but 5% of it
    card_budget: int | None = _key(values.size, None)

    @property
    def live_path(self) -> Path:
        """The live database: ``db``, or, with no card (a database on a disk), a
        working file beside ``db``."""
        if self.card is not None:
            return self.db
        return self.db.with_name(f"{self.db.stem}-live{self.db.suffix or '.db'}")

    @property
    def card_path(self) -> Path:
        """The database that holds everything: the card database (on the SD card), or,
        with none configured, ``db`` itself."""
        return self.card if self.card is not None else self.db


@dataclass(frozen=True)
class PollConfig:
    lookback: timedelta = _key(values.duration, timedelta(hours=24))
    concurrency: int = _key(values.positive_int, 8)
    per_host: int = _key(values.positive_int, 2)
    timeout: timedelta = _key(values.duration, timedelta(seconds=30))
    # for a feed without a publishing history
    interval: timedelta = _key(values.duration, timedelta(minutes=30))
    min_interval: timedelta = _key(values.duration, timedelta(minutes=10))
    max_interval: timedelta = _key(values.duration, timedelta(hours=24))
    max_feed_bytes: int = _key(values.size, 10 * 1024 * 1024)
    # failed polls in a row before a feed shows as failing
    failing_after: int = _key(values.positive_int, 3)
    # a feed poll's claim, should its process die
    lease: timedelta = _key(values.duration, timedelta(minutes=5))


DEFAULT_USER_AGENT = "feedsync/{version} (+https://github.com/feedsync/feedsync)"


@dataclass(frozen=True)
class FetchConfig:
    user_agent: str = _key(values.one_line, DEFAULT_USER_AGENT)  # {version} is replaced
    # article pages on loopback/private/link-local addresses
    allow_private: bool = _key(values.boolean, False)
    # hosts on the LAN that the articles of a feed on the LAN may be on, besides its own
    lan_hosts: tuple[str, ...] = _key(values.host_names, ())
    # between two requests to one host
    host_delay: timedelta = _key(values.duration, timedelta(seconds=1))
    # a longer Retry-After is capped
    max_retry_after: timedelta = _key(values.duration, timedelta(hours=6))


@dataclass(frozen=True)
class ExtractConfig:
    max_attempts: int = _key(values.positive_int, 5)
    retry_backoff: timedelta = _key(values.duration, timedelta(minutes=15))
    # extraction processes; "auto": sized to the board's RAM and cores when extraction
    # starts (feedsync.board.auto_workers: 1 below 4 GB or on 2 cores)
    workers: int | str = _key(values.workers, "auto")
    timeout: timedelta = _key(values.duration, timedelta(seconds=60))
    max_page_bytes: int = _key(values.size, 5 * 1024 * 1024)
    lease: timedelta = _key(values.duration, timedelta(minutes=15))


@dataclass(frozen=True)
class RetentionConfig:
    # extracted articles older than this are pruned; 0: kept forever
    news_days: int = _key(values.days, 90)
    # their news_summary rows stay this long, so never refetched
    tombstone_days: int = _key(values.days, 365)


@dataclass(frozen=True)
class DaemonConfig:
    # how often the daemon looks for due work
    tick: timedelta = _key(values.duration, timedelta(seconds=60))


@dataclass(frozen=True)
class IdentityConfig:
    # how far back revisions and duplicates are sought
    window: timedelta = _key(values.duration, timedelta(days=7))


@dataclass(frozen=True)
class MetricsConfig:
    # a file for node_exporter's textfile collector (Prometheus text format); None: off
    textfile: Path | None = _key(values.textfile, None)


@dataclass(frozen=True)
class ServeConfig:
    """``feedsync serve`` (feedsync/serve/): where it listens and who may read."""

    # an IP address and a port; anything but loopback needs lan = true and a token
    listen: tuple[str, int] = _key(values.listen_address, ("127.0.0.1", 8470))
    # allow a non-loopback listen address (the LAN): a deliberate second switch
    lan: bool = _key(values.boolean, False)
    # the secret readers on the LAN show (?token= or the page's cookie); token_file better
    token: str | None = _key(values.token, None)
    # a file holding it (not in a config others may read); read at the start
    token_file: Path | None = _key(values.path, None)
    # loopback peers read without the token; false behind a reverse proxy on this host
    trust_loopback: bool = _key(values.boolean, True)
    # socket-activated (systemd): exit after this long without a request
    idle_exit: timedelta = _key(values.duration, timedelta(minutes=5))
    # entries per feed document (Atom, JSON Feed) and per page
    window: int = _key(values.positive_int, 50)
    # a repeat request for a page or feed document answered this long ago is a 304
    # without a read (what a reader shows may be this old); "0s": always ask the key
    fresh: timedelta = _key(values.duration, timedelta(minutes=1))


@dataclass(frozen=True)
class FeedConfig:
    url: str = _key(values.feed_url)
    # "url+title": no revision/duplicate heuristics for this feed
    identity: str = _key(values.identity_mode, AUTO)
    # the owner's name for it, shown instead of the feed's own title
    title: str | None = _key(values.one_line, None)
    # its folder, "News/World" (a "/" with a space beside it, or written "\/", is part
    # of a name: feedsync.opml.folders); an OPML export's folders
    category: str | None = _key(values.one_line, None)


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
    serve: ServeConfig = field(default_factory=ServeConfig)
    feeds: tuple[FeedConfig, ...] = ()
    source: Path | None = None  # the file this came from; None for built-in defaults


def _keys(cls: type) -> dict[str, Callable[[Any], Any]]:
    """A section's keys and their parsers, from its dataclass's declarations."""
    return {f.name: f.metadata["parse"] for f in fields(cls) if "parse" in f.metadata}


# section -> key -> parser: every [section] is a field of Config whose type declares keys
_SECTIONS: dict[str, dict[str, Callable[[Any], Any]]] = {
    name: _keys(kind)
    for name, kind in get_type_hints(Config).items()
    if isinstance(kind, type) and is_dataclass(kind) and _keys(kind)
}
_FEED_KEYS = _keys(FeedConfig)

# Keys renamed since, by section: old name -> key. A file written before the rename
# reads as it did (``[storage] snapshot`` was the card's path, ``snapshot_interval`` the
# save interval: "snapshot" also named the save and its command); a file naming a key by
# both names is an error, since either could be the one meant.
_OLD_NAMES: dict[str, dict[str, str]] = {
    "storage": {"snapshot": "card", "snapshot_interval": "save_interval"},
}


# ---------------------------------------------------------------- locating and loading


def _xdg(name: str, fallback: str) -> Path:
    value = os.environ.get(name, "")
    return Path(value) if value.startswith("/") else Path.home() / fallback


def user_config_path() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / "feedsync" / "feedsync.toml"


SHM = Path("/dev/shm")


def default_storage() -> StorageConfig:
    """Per-user defaults, used when no file names the database.

    The live database goes to ``/dev/shm/feedsync-<uid>/`` (tmpfs), the card database to
    ``$XDG_DATA_HOME/feedsync/``. Not ``$XDG_RUNTIME_DIR``: cron does not set it, and
    logind removes ``/run/user/<uid>`` at logout, so a cron run and a shell would work on
    two different live databases. Without /dev/shm, the database lives in the data folder
    and there is no card.
    """
    data = _xdg("XDG_DATA_HOME", ".local/share") / "feedsync"
    if SHM.is_dir():
        return StorageConfig(
            db=SHM / f"feedsync-{os.getuid()}" / "feedsync.db", card=data / "feedsync.db"
        )
    return StorageConfig(db=data / "feedsync.db", card=None)


def find_config_file(explicit: str | None, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The file to read, by the documented order; None means built-in defaults.

    A file named explicitly (flag or environment) must exist; the well-known locations
    are simply skipped when absent. The user's own config comes before the system
    service's: a system install (or the config an uninstall keeps) does not decide what a
    user's feedsync does, and its config, readable by the service's group only, does not
    stop it. The service and the ``feedsync`` command of a system install name theirs
    with ``--config``.
    """
    named = explicit or environ.get("FEEDSYNC_CONFIG")
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            how = "--config" if explicit else "FEEDSYNC_CONFIG"
            raise ConfigError(f"config file not found: {path} (from {how})")
        return path
    for candidate in (user_config_path(), SYSTEM_CONFIG):
        if candidate.is_file():
            return candidate
    return None


# The HTTP client (feedsync/fetch.py: trust_env=False, its own transport) connects to the
# address it checked: a proxy would hide the address the LAN rules are decided from.
NO_PROXY_NOTE = (
    "feedsync connects directly: HTTP(S)_PROXY, ALL_PROXY and NO_PROXY are not used (a "
    "proxy would hide the address the LAN rules are decided from)."
)
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def proxy_warning(environ: Mapping[str, str] = os.environ) -> str | None:
    """What to say when the environment names a proxy (``https_proxy`` or
    ``HTTPS_PROXY``...), which feedsync does not use; None when it names none. NO_PROXY
    alone changes nothing even for the programs that use proxies: not said."""
    names = sorted(k for k, v in environ.items() if v and k.upper() in _PROXY_VARIABLES)
    if not names:
        return None
    verb = "is" if len(names) == 1 else "are"
    return f"{', '.join(names)} {verb} set but not used: feedsync connects directly"


def load(explicit: str | None = None) -> Config:
    """Find, read and validate the configuration."""
    path = find_config_file(explicit)
    if path is None:
        return Config(storage=default_storage())
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except PermissionError as exc:
        if path != SYSTEM_CONFIG:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
        raise ConfigError(
            f"{path}: cannot read: {exc.strerror}. It is the system service's config: "
            "`sudo feedsync COMMAND` uses it; for a feedsync of your own, write "
            f"{user_config_path()} (or name one with --config FILE)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return from_dict(raw, source=path)


def from_dict(raw: Mapping[str, Any], source: Path | None = None) -> Config:
    """Validate a parsed TOML document; every error names the key that is wrong."""
    where = f"{source}: " if source else ""

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{where}{key}: {message}")

    for top in raw:
        if top not in _SECTIONS and top != "feeds":
            known = ", ".join(sorted([*_SECTIONS, "feeds"]))
            raise fail(top, f"unknown section (known: {known})")

    sections: dict[str, dict[str, Any]] = {}
    # section -> key -> the name the file gave it (an old name, for the errors below)
    spelled: dict[str, dict[str, str]] = {}
    for name, keys in _SECTIONS.items():
        table = raw.get(name, {})
        if not isinstance(table, dict):
            raise fail(name, "expected a [section] table")
        parsed: dict[str, Any] = {}
        spelled[name] = {}
        old_names = _OLD_NAMES.get(name, {})
        for written, value in table.items():
            key = old_names.get(written, written)
            if key not in keys:
                raise fail(f"{name}.{written}", f"unknown key (known: {', '.join(keys)})")
            if key in spelled[name]:
                old = written if written != key else spelled[name][key]
                raise fail(
                    f"{name}.{old}",
                    f"is the old name of {name}.{key}, which is set too: keep {key} only",
                )
            spelled[name][key] = written
            try:
                parsed[key] = keys[key](value)
            except ValueError as exc:
                raise fail(f"{name}.{written}", str(exc)) from None
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
            f"storage.{spelled['storage'][key]}"
            for key in ("db", "card", "ram_budget", "card_budget")
            if key in given
        ]
        if clash:
            raise fail(
                "storage.url",
                f"cannot be used with {' and '.join(clash)}: with a PostgreSQL server there "
                "is no database file and no card (back it up with pg_dump)",
            )
        storage = StorageConfig(db=defaults.db, card=None, url=given["url"])
    else:
        storage = StorageConfig(
            db=given.get("db", defaults.db),
            # naming the database but no card means: a database on a disk, which
            # holds everything itself (its working file beside it)
            card=given.get("card", None if "db" in given else defaults.card),
            save_interval=given.get("save_interval", defaults.save_interval),
            ram_budget=given.get("ram_budget"),
            card_budget=given.get("card_budget"),
        )
    if storage.card is not None and storage.card.absolute() == storage.db.absolute():
        raise fail(
            f"storage.{spelled['storage'].get('card', 'card')}",
            "must be another file than storage.db (the card database "
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
    serve = ServeConfig(**sections["serve"])
    if serve.token is not None and serve.token_file is not None:
        raise fail("serve.token", "cannot be used with serve.token_file: keep one (the file)")
    if serve.idle_exit < timedelta(seconds=1):
        raise fail("serve.idle_exit", "must be at least 1s")
    if timedelta(0) < serve.fresh < timedelta(seconds=1):
        raise fail("serve.fresh", "must be 0s (no window) or at least 1s")
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
        serve=serve,
        feeds=tuple(feeds),
        source=source,
    )


def config_feeds(config: Config) -> dict[str, ListedFeed]:
    """The config file's feeds, canonical URL -> what the file says of it (identity mode,
    title, category); a URL that has no canonical form is an error naming its key. A URL
    listed twice (two spellings of it) is an error too: which title would it take?"""
    from feedsync.canonical import canonical_url  # w3lib: only when feeds are read
    from feedsync.records import ListedFeed

    found: dict[str, ListedFeed] = {}
    first: dict[str, int] = {}
    for index, feed in enumerate(config.feeds):
        url = canonical_url(feed.url)
        if url is None:
            raise ConfigError(
                f"{config.source}: feeds[{index}].url: not a usable http(s) URL: {feed.url!r}"
            )
        said = ListedFeed(feed.identity, feed.title, feed.category)
        if url in found and found[url] != said:
            raise ConfigError(
                f"{config.source}: feeds[{index}]: the feed of feeds[{first[url]}] ({url}) "
                "again, with another identity, title or category: keep one of them"
            )
        first.setdefault(url, index)
        found.setdefault(url, said)
    return found


def feed_urls(config: Config) -> list[str]:
    """The config file's feeds, canonical (see :func:`config_feeds`)."""
    return list(config_feeds(config))
