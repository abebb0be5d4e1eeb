"""Storage: the one layer that knows which database engine runs.

The stages (poll, stage, extract, the commands) call the methods of :class:`Storage`
with typed records and never see SQL, a connection or an engine. Every method is one
short transaction; none does network I/O. The SQLite backend is
:mod:`feedsync.storage.sqlite` (SQL in ``sql/``), the PostgreSQL backend
:mod:`feedsync.storage.postgresql` (the same query names; ``sql/postgresql/`` holds
those it writes differently, the others come from ``sql/``); both
share their logic through :mod:`feedsync.storage.base`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from feedsync.config import StorageConfig
from feedsync.records import (
    Article,
    ArticleJob,
    FailureOutcome,
    Feed,
    FeedClaim,
    FeedHealth,
    LinkedEntry,
    NewsItem,
    PollIntent,
    PollRecord,
    SearchHit,
    SnapshotResult,
    StagedEntry,
    StorageStatus,
)


class StorageError(Exception):
    """The database cannot be opened, read or written; ``str()`` is a one-line reason."""


class StorageUnavailable(StorageError):
    """The database server cannot be reached, or refuses us (down, wrong password): the
    daemon waits and tries again; a one-shot command reports it and exits."""


class StorageFull(StorageError):
    """The RAM disk or the card has no room for this now (``str()`` says which, and how
    full): no new entries are taken, or a save is put off, while reads and saves of
    what fits go on. A pass reports it and goes on; it is not a failure of the run."""


class CardReadOnly(StorageError):
    """The card's file system is mounted read-only (the kernel remounts an SD card so
    after write errors): feedsync reads the card and runs in RAM, but nothing can be
    saved. An operation that must write the card (a save, retention) raises it; reads
    go on. ``str()`` says which card, and what it means for the data."""


if TYPE_CHECKING:
    from feedsync.config import Config

WEEK = timedelta(days=7)


@dataclass(frozen=True)
class Keep:
    """What the storage keeps where, from the config: the days of entries the live
    database holds (a week of publishing for the poll schedule and the identity window,
    plus a day), and [retention] for the card."""

    live: timedelta = timedelta(days=8)
    news_days: int = 90
    tombstone_days: int = 365

    @classmethod
    def of(cls, config: Config) -> Keep:
        return cls(
            live=max(WEEK, config.identity.window) + timedelta(days=1),
            news_days=config.retention.news_days,
            tombstone_days=config.retention.tombstone_days,
        )


SNAPSHOTS_DO_NOT_APPLY = (
    "snapshots do not apply to a PostgreSQL database ([storage] url): back it up with "
    "pg_dump, and restore with pg_restore or psql"
)


class Storage(Protocol):
    """What the pipeline and the commands need from a database."""

    #: where the data is, for messages (a path; never a password)
    location: str
    #: write transactions begun so far (bench/: how many a feed poll costs)
    writes: int

    def close(self) -> None: ...

    # ``with open_storage(...) as storage:`` closes it, whatever happens inside
    def __enter__(self) -> Storage: ...

    def __exit__(self, *exc: object) -> None: ...

    # -- the feed list
    def sync_config_feeds(self, urls: Sequence[str] | Mapping[str, str], now: str) -> list[str]:
        """Make the config file's feeds present and enabled (with their identity mode when
        ``urls`` maps URL -> mode); disable the config-owned feeds no longer in it.
        Returns the URLs newly added."""
        ...

    def add_feed(
        self, url: str, now: str, category: str | None = None, title: str | None = None
    ) -> bool:
        """Add a feed (origin 'cli'; ``category``: its OPML folder; ``title`` until the
        feed's own arrives); False when it was already there."""
        ...

    def remove_feed(self, url: str) -> bool:
        """Delete a feed and its links; its articles stay. False when it was not there."""
        ...

    def feed_health(self, week_ago: str | None = None) -> list[FeedHealth]:
        """Every feed and its polling health; with ``week_ago``, its articles' too."""
        ...

    def feeds_to_poll(self, due_before: str | None = None, week_ago: str = "") -> list[Feed]:
        """Enabled feeds (only those due by ``due_before`` when given), with their
        publishing since ``week_ago``."""
        ...

    # -- stages 1 and 2
    def room_for_entries(self) -> str | None:
        """Why no new entries can be taken now, in one line (the RAM disk is full even
        after a save); None when they can. A pass asks before it polls anything."""
        ...

    def record_poll(self, intent: PollIntent) -> PollRecord:
        """One feed poll, whatever its outcome (``decide.poll``), in ONE transaction: the
        candidates inserted and linked, the feed advanced or its failure recorded, its
        claim given back, its move and its host's politeness state written."""
        ...

    def claim_feeds(
        self,
        feed_ids: Sequence[int],
        owner: str,
        now: str,
        lease_until: str,
        due_before: str | None = None,
        hold: Sequence[str] = (),
        hold_delay: float = 0.0,
        hold_lease: float = 0.0,
    ) -> FeedClaim:
        """Claim feeds for polling, in one transaction: those no other live process is
        polling (and, with ``due_before``: a pass of due feeds, those still due: another
        poller may have polled one since the pass listed it). Also says whether another
        process is at work on the database. When none is, the ``hold`` hosts with no
        request in flight are held whole by ``owner`` for ``hold_lease`` seconds
        (feedsync/holds.py; ``hold_delay``: the hosts' pace)."""
        ...

    def host_holds_keep(self, owner: str, now: str, lease: float) -> bool:
        """The hosts ``owner`` holds, held ``lease`` seconds more; returns whether another
        process is at work on the database (then the holds are given up)."""
        ...

    def host_holds_release(self, owner: str, aheads: Mapping[str, float]) -> None:
        """Release held hosts: each host's next request, anyone's, starts no earlier than
        its ``aheads`` seconds from now (the pace kept in the holder's memory)."""
        ...

    def release_feed(self, feed_id: int, owner: str) -> None:
        """Give back a claimed feed without polling it (its host asked us to wait)."""
        ...

    # -- stage 3
    def claim_articles(
        self, owner: str, after_id: int, due_before: str, now: str, lease_until: str, limit: int
    ) -> list[ArticleJob]:
        """Lease up to ``limit`` queue rows with id > after_id to ``owner``, in id order."""
        ...

    def hosts_waiting(self, now: str) -> dict[str, tuple[str, int]]:
        """Hosts that asked to be left alone (429/503): host -> (not_before, backoff)."""
        ...

    def host_wait(self, host: str, not_before: str, backoff_count: int, reason: str) -> None: ...

    def host_clear(self, host: str) -> None: ...

    def host_turn(
        self, host: str, owner: str, slots: int, delay: float, lease: float
    ) -> tuple[int, float] | None:
        """A request to ``host``, across every process on the database: one of its
        ``slots`` concurrency slots, leased to ``owner`` for ``lease`` seconds from the
        start, and a start ``delay`` seconds after the previous one reserved (``delay``
        0: no spacing, no pace written). Returns (slot, seconds to wait before starting),
        or None when every slot is held (try again later). One short transaction."""
        ...

    def host_renew(self, host: str, owner: str, slot: int, lease: float) -> None:
        """A request still running on a slot of :meth:`host_turn`: its lease runs on for
        ``lease`` seconds from now (the database's clock). A slot lost meanwhile (its
        lease ran out and another poller took it) stays lost: nothing is changed."""
        ...

    def host_done(self, host: str, owner: str, slot: int) -> None:
        """Give back a slot of :meth:`host_turn` (the request is over)."""
        ...

    def release_job(self, job_id: int, owner: str) -> None:
        """Give back one claimed row without spending an attempt."""
        ...

    def release_leases(self, owner: str) -> None:
        """Give back every feed, queue row and host slot ``owner`` holds (a process that
        stops)."""
        ...

    def prune(
        self, news_before: str | None, tombstones_before: str | None, batch: int = 500
    ) -> tuple[int, int]:
        """Retention: delete articles older than ``news_before`` and dated tombstones older
        than ``tombstones_before`` (None: keep), in short batches. Returns the counts."""
        ...

    def save_article(
        self,
        job_id: int,
        article: Article,
        published: str | None,
        fetched_at: str,
        window_start: str | None = None,
    ) -> LinkedEntry | None:
        """Store the extracted article, or link the row to the article it turns out to be
        (same canonical URL or text, among those fetched since ``window_start``; None: no
        heuristics). Returns the link, or None when stored."""
        ...

    def news_links(self, news_id: int) -> tuple[list[LinkedEntry], list[LinkedEntry]]:
        """(revisions, duplicates) of an article, with the reason each was linked."""
        ...

    def record_extract_failure(self, job_id: int, owner: str, outcome: FailureOutcome) -> None: ...

    # -- reading
    def counts(self) -> dict[str, int]:
        """feeds, feeds_enabled, entries, links, articles, queue_new, queue_failed, gone."""
        ...

    def news_recent(self, limit: int) -> list[NewsItem]: ...

    # -- safety of the data
    def snapshot(self, force: bool = False) -> SnapshotResult | None:
        """Save to the card now what changed since the last save (None: the engine has no
        card); nothing written when nothing worth keeping changed. Raises StorageFull
        when the card has no room."""
        ...

    def status(self) -> StorageStatus: ...

    # -- the user's commands
    def news_list(self, since: str, feed_id: int | None, limit: int) -> list[NewsItem]:
        """Newest first (``body`` left empty)."""
        ...

    def news_get(self, ref: int | str) -> NewsItem | None:
        """An article by its id or its URL."""
        ...

    def news_feeds(self, news_id: int) -> list[tuple[int, str, str | None]]:
        """(id, url, title) of the feeds that carried an article."""
        ...

    def entries_in_state(
        self, state: str, since: str, feed_id: int | None, limit: int
    ) -> list[StagedEntry]:
        """Entries without an article in ``state`` ('new', 'failed', 'gone'), newest
        first (``news --state``)."""
        ...

    def entries_by_url(self, url: str) -> list[StagedEntry]:
        """The entries of ``url`` that have no article (``show URL``)."""
        ...

    def feed_id(self, ref: str) -> int | None:
        """A feed by its id ("12") or URL (also the URL it was added under)."""
        ...

    def search(self, query: str, limit: int, marks: tuple[str, str]) -> list[SearchHit]:
        """Full-text search over titles and bodies, best first; matches in the snippet
        between ``marks``."""
        ...

    def export_news(self, since: str) -> Iterator[NewsItem]:
        """Every article since ``since``, streamed (constant memory)."""
        ...

    def status_counts(self, failing_after: int, today: str) -> dict[str, Any]: ...

    def daemon_heartbeat(self, pid: int, host: str, started_at: str, now: str) -> None:
        """The daemon says it is alive (for ``feedsync status``)."""
        ...

    def daemon_info(self) -> dict[str, str]:
        """pid, host, started_at, seen_at of the daemon's last heartbeat ({} if none)."""
        ...


def _ignore(message: str) -> None:
    pass


def open_storage(
    config: StorageConfig,
    notice: Callable[[str], None] = _ignore,
    keep: Keep | None = None,
    *,
    new_card: bool = False,
) -> Storage:
    """Open (restoring, creating and migrating when needed) the database the config names.

    ``notice`` hears what the opening did that a user should know (a restore from the
    card, an upgrade, a damaged card set aside). ``keep``: how long what stays where
    (:meth:`Keep.of` the config). ``new_card``: on SQLite, a card database that is
    missing although the live database was saved to it may be started anew.
    """
    if config.url is not None:
        from feedsync.storage.postgresql import PostgreSQLStorage

        return PostgreSQLStorage.open(config.url)
    from feedsync.storage.sqlite import SQLiteStorage

    return SQLiteStorage.open(config, notice, keep, new_card=new_card)


def restore_snapshot(
    config: StorageConfig, force: bool, notice: Callable[[str], None], keep: Keep | None = None
) -> str:
    """``feedsync restore``: build the live database again from the card database;
    returns the card's path. Raises StorageError (SnapshotRefused without ``force``)."""
    from feedsync import timestamps
    from feedsync.storage import card_restore

    if config.url is not None:
        raise StorageError(SNAPSHOTS_DO_NOT_APPLY)
    if config.snapshot is None:
        raise StorageError("no snapshot is configured ([storage] snapshot)")
    since = timestamps.to_iso(timestamps.now() - (keep or Keep()).live)
    card_restore.restore(config.live_path, config.card_path, since, force=force, notice=notice)
    return str(config.card_path)


# ---------------------------------------------------------------- for the commands
# What the commands say and decide about where the data is, without naming an engine.

#: ``feedsync status``'s snapshot line for a database that saves to no card
NO_CARD = "a PostgreSQL database is backed up with pg_dump"


def saves_to_card(config: StorageConfig) -> bool:
    """True: the database is a file on the RAM disk, saved to the card by snapshots;
    False: a server's database ([storage] url), backed up by the server's own tools."""
    return config.url is None


def display_url(url: str) -> str:
    """A database URL fit to print: the server and the database, never a password."""
    from feedsync.storage.postgresql import display_url as shown

    return shown(url)
