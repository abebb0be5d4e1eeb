"""What the stages and commands may ask of a database, by role: the feed list, polling,
host pacing, the article queue, upkeep (saves, retention, status) and reading. Each role
is a protocol; :class:`Storage` is all of them, which both engines implement
(feedsync/storage/base.py holds what they share). Every method is one short transaction
that applies what the pure modules decided (feedsync/decide.py, identity.py); none does
network I/O. Also here: :class:`Keep`, how long what stays where.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from feedsync.politeness.pacing import HostPacing
from feedsync.records import (
    NO_HOST_NOTE,
    Article,
    ArticleJob,
    FailureOutcome,
    Feed,
    FeedClaim,
    FeedHealth,
    HostNote,
    LinkedEntry,
    ListedFeed,
    NewsItem,
    PollIntent,
    PollRecord,
    SearchHit,
    SnapshotResult,
    StagedEntry,
    StorageStatus,
)

if TYPE_CHECKING:
    from feedsync.config import Config

WEEK = timedelta(days=7)


class Keep(NamedTuple):
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


class Feeds(Protocol):
    """The feed list: the config file's feeds and the ones added by hand, their health,
    which are due."""

    def sync_config_feeds(
        self, urls: Sequence[str] | Mapping[str, str | ListedFeed], now: str
    ) -> list[str]:
        """Make the config file's feeds present and enabled, with what the file says of
        each when ``urls`` maps URL -> :class:`ListedFeed` (its identity mode, title and
        folder; or URL -> identity mode); disable the config-owned feeds no longer in it.
        Returns the URLs newly added."""
        ...

    def add_feed(
        self, url: str, now: str, category: str | None = None, title: str | None = None
    ) -> bool:
        """Add a feed (origin 'cli'; ``category``: its folder; ``title``: the owner's
        title for it, shown instead of the feed's own); False when it was already there."""
        ...

    def remove_feed(self, url: str) -> bool:
        """Delete a feed and its links; its articles stay. False when it was not there."""
        ...

    def disable_feed(self, url: str, reason: str) -> bool:
        """Stop polling a feed, ``reason`` shown in ``feeds``; its entries and links are
        kept. False when there is no such feed."""
        ...

    def feed_health(self, week_ago: str | None = None) -> list[FeedHealth]:
        """Every feed and its polling health; with ``week_ago``, its articles' too."""
        ...

    def feed_name(self, feed_id: int) -> str | None:
        """What a feed is called, as ``feedsync feeds`` shows it: its owner's title for
        it, else its own, else its URL; None when there is no such feed. One row, where
        :meth:`feed_health` reads every feed (a feed's page, its full-text feeds)."""
        ...

    def has_category(self, category: str) -> bool:
        """Whether a feed is in the folder ``category`` or a folder below it ("News"
        covers "News/World", not "Newsletters"), as :meth:`Reading.news_window` reads it."""
        ...

    def feeds_to_poll(self, due_before: str | None = None, week_ago: str = "") -> list[Feed]:
        """Enabled feeds (only those due by ``due_before`` when given), with their
        publishing since ``week_ago``."""
        ...

    def feed_id(self, ref: str) -> int | None:
        """A feed by its id ("12") or URL (also the URL it was added under)."""
        ...


class Polling(Protocol):
    """Stages 1 and 2: claiming feeds, recording a poll's whole outcome in one transaction
    (its entries staged), the hosts a pass holds alone."""

    def has_work(
        self,
        feeds_due_before: str | None,
        articles_due_before: str | None,
        now: str,
        *,
        lease_horizon: str | None = None,
        retry_horizon: str | None = None,
    ) -> bool:
        """Whether a pass would find anything to do: an enabled feed to poll (only one
        due by ``feeds_due_before`` when given) or, unless ``articles_due_before`` is
        None (a pass that does not extract), a queue row a claim would take at ``now``
        (``lease_horizon``, ``retry_horizon``: as :meth:`ArticleQueue.claim_articles`
        would judge its lease and retry time; None: no bound). Reads only."""
        ...

    def room_for_entries(self) -> str | None:
        """Why no new entries can be taken now, in one line (the RAM disk is full even
        after a save); None when they can. A pass asks before it polls anything."""
        ...

    def record_poll(self, intent: PollIntent, host: HostNote = NO_HOST_NOTE) -> PollRecord:
        """One feed poll, whatever its outcome (``decide.poll``), in ONE transaction: the
        candidates inserted and linked, the feed advanced or its failure recorded, its
        claim given back, its move, and its ``host`` note (a 429/503 block or its end,
        the request's shared slots given back, whether a held host is wanted)."""
        ...

    def record_polls(self, polls: Sequence[tuple[PollIntent, HostNote]]) -> list[PollRecord]:
        """Several feeds' polls, each as ``record_poll`` would write it, in ONE
        transaction (a pass's group commit, feedsync/group_commit.py): every one of them
        or none. Their records, in order."""
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
        (feedsync/politeness/holds.py; ``hold_delay``: the hosts' pace)."""
        ...

    def release_feed(self, feed_id: int, owner: str) -> None:
        """Give back a claimed feed without polling it (its host asked us to wait)."""
        ...


class ArticleQueue(Protocol):
    """Stage 3: claiming staged entries, storing an article once, a failure and its
    retry, the leases a process gives back."""

    def claim_articles(
        self,
        owner: str,
        after_id: int,
        due_before: str,
        now: str,
        lease_until: str,
        limit: int,
        retry_horizon: str | None = None,
        own_only: bool = False,
    ) -> list[ArticleJob]:
        """Lease up to ``limit`` queue rows with id > after_id to ``owner``, in id order
        (``own_only``: only rows ``owner`` holds already, those its polls staged):
        new rows, and failed rows due by ``due_before`` or whose retry time lies beyond
        ``retry_horizon`` (set by a clock ahead: ``decide.retry_horizon``; None: no
        bound), free, ``owner``'s, or with a lease over at ``now`` or beyond the longest
        one (``lease_until`` and the clocks' slack: taken by a clock ahead)."""
        ...

    def articles_held_elsewhere(self, owner: str, now: str, lease_until: str) -> int:
        """How many queue rows another process than ``owner`` holds at ``now`` (a lease
        no further ahead than ``lease_until`` and the clocks' slack): the articles a
        pass leaves to another that is extracting them. Reads only."""
        ...

    def release_job(self, job_id: int, owner: str) -> None:
        """Give back one claimed row without spending an attempt."""
        ...

    def release_leases(self, owner: str) -> None:
        """Give back every feed, queue row and host slot ``owner`` holds (a process that
        stops)."""
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


class Upkeep(Protocol):
    """Keeping the data safe and small: saves to the card, retention, the figures of
    `feedsync status`, the daemon's heartbeat."""

    def save(self, *, force: bool = False) -> SnapshotResult | None:
        """Save to the card now what changed since the last save (None: the engine has no
        card); nothing written when nothing worth keeping changed. Raises StorageFull
        when the card has no room."""
        ...

    def prune(
        self, news_before: str | None, tombstones_before: str | None, batch: int = 500
    ) -> tuple[int, int]:
        """Retention: delete articles older than ``news_before`` and dated tombstones older
        than ``tombstones_before`` (None: keep), in short batches. Returns the counts."""
        ...

    def newest_poll(self) -> str:
        """The newest poll time the database holds ('' if none): a clock that reads
        earlier cannot be right (feedsync/clock.py: judge)."""
        ...

    def clock_suspect(self) -> None:
        """The articles stored from now on are fetched under a clock that cannot be
        believed: retention must not judge them by their fetch time (a mark: the next
        article id, kept until :meth:`clock_settle`)."""
        ...

    def clock_settle(self, now: str) -> int:
        """On a clock that is believed, before retention: the articles stored under one
        that was not take ``now`` as their fetch time (no earlier than the real one).
        Returns how many did."""
        ...

    def status(self) -> StorageStatus: ...

    def counts(self) -> dict[str, int]:
        """feeds, feeds_enabled, entries, links, articles, queue_new, queue_failed, gone."""
        ...

    def status_counts(self, failing_after: int, today: str) -> dict[str, Any]: ...

    def daemon_heartbeat(self, pid: int, host: str, started_at: str, now: str) -> None:
        """The daemon says it is alive (for ``feedsync status``)."""
        ...

    def daemon_info(self) -> dict[str, str]:
        """pid, host, started_at, seen_at of the daemon's last heartbeat ({} if none)."""
        ...


class Reading(Protocol):
    """What the user's commands read: articles, entries by state or URL, search,
    export."""

    def news_recent(self, limit: int) -> list[NewsItem]: ...

    def news_list(self, since: str, feed_id: int | None, limit: int) -> list[NewsItem]:
        """Newest first (``body`` left empty)."""
        ...

    def news_count(self, since: str, feed_id: int | None) -> int:
        """How many articles :meth:`news_list` would give without its limit."""
        ...

    def news_window(
        self,
        *,
        feed_id: int | None = None,
        category: str | None = None,
        before: int | None = None,
        limit: int,
        bodies: bool = True,
    ) -> list[NewsItem]:
        """Up to ``limit`` articles, newest first in :meth:`news_list`'s order
        (``coalesce(published, fetched_at)``, then the id), of the feed ``feed_id``, of
        the feeds in the folder ``category`` or any folder below it ("News" covers
        "News/World", not "Newsletters"), or of all feeds (both None; given both, the
        articles of either); ``before``: the id of the previous page's last article,
        the page continues after it (raises :class:`~feedsync.storage_errors.
        UnknownArticle` when there is no such article); ``bodies=False``: ``body`` left
        empty, and never read. Reads in index order: a page costs the articles newer
        than its last one, not the size of the database (feedsync serve); a quiet or
        small feed's page is read by its own links instead, found in the links table
        (narrow rows, read whole: no article's row but the feed's)."""
        ...

    def content_key(self) -> str:
        """A short string that changes whenever anything a page of articles, an article,
        a search or a feed document may show has changed: articles added, changed or
        deleted (on SQLite on either file: a save, retention on the card, a clock
        settled), a feed's links, a feed added or removed, its title, the owner's title,
        its folder, whether it is enabled. The same string means the same content, also
        after the storage is closed and opened again (feedsync serve's ETags outlive a
        server that exited idle). It may change without such a change (SQLite counts
        entries' states too), never the other way. Poll bookkeeping (the last poll, errors,
        validators, leases) does not change it: pages that show those (the feeds' health,
        the status) must not be tagged with it. Read before the content it tags, a few
        lookups by key (never a scan)."""
        ...

    def news_per_day(self, since: str) -> list[tuple[int, str, int]]:
        """(feed id, "YYYY-MM-DD", articles) for the articles fetched since ``since``, by
        the day they were fetched (a feed's own dates may be late, missing or in the
        future), each counted for every feed that carried it."""
        ...

    def news_feeds_of(self, ids: Sequence[int]) -> dict[int, list[tuple[int, str, str | None]]]:
        """:meth:`news_feeds` of several articles at once."""
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

    def entries_count(self, state: str, since: str, feed_id: int | None) -> int:
        """How many entries :meth:`entries_in_state` would give without its limit."""
        ...

    def entries_by_url(self, url: str) -> list[StagedEntry]:
        """The entries of ``url`` that have no article (``show URL``)."""
        ...

    def search(self, query: str, limit: int, marks: tuple[str, str]) -> list[SearchHit]:
        """Full-text search over titles and bodies, best first; matches in the snippet
        between ``marks``."""
        ...

    def search_count(self, query: str, cap: int) -> int:
        """How many hits :meth:`search` gives for ``query`` with ``limit=cap``: the same
        articles, counted without their snippets (a search page's "N found": it shows
        30 hits and counts up to 300)."""
        ...

    def export_news(self, since: str) -> Iterator[NewsItem]:
        """Every article since ``since``, streamed (constant memory)."""
        ...


class Storage(Feeds, Polling, HostPacing, ArticleQueue, Upkeep, Reading, Protocol):
    """What the pipeline and the commands need from a database: every role above, and
    where the data is. A stage that needs one role may name that protocol alone."""

    #: where the data is, for messages (a path; never a password)
    location: str

    #: write transactions begun so far (bench/: how many a feed poll costs)
    writes: int

    def close(self) -> None: ...

    # ``with open_storage(...) as storage:`` closes it, whatever happens inside
    def __enter__(self) -> Storage: ...

    def __exit__(self, *exc: object) -> None: ...
