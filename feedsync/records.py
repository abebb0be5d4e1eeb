"""Typed records passed between the stages.

The I/O stages (fetch, storage, extract) produce and consume these; the decisions in
:mod:`feedsync.decide` work on them without touching I/O. Timestamps are stored-format
strings (:mod:`feedsync.timestamps`).

The records are immutable ``NamedTuple`` classes, not frozen dataclasses: on Python 3.11
a frozen dataclass compiles six methods when its class is defined, ~1.2 ms of CPU each
on x86 (several times that on a Pi), and these 19 cost ~30 ms of every start (a cron
run with nothing due took 0.247 s of CPU in all; bench scenario 7). A NamedTuple is
defined in ~0.2 ms, built faster (one ``tuple.__new__``, not a ``object.__setattr__``
per field) and is smaller (no ``__dict__``). What that changes: a record is copied with
``r._replace(...)`` and turned into a dict with ``r._asdict()``; it is also a tuple of
its fields in order (``feedsync export`` writes a :class:`NewsItem` as its row), and
equal to a plain tuple of the same values, which no code here relies on. The pass's
counters (:class:`RunStats`) change as the pass goes, so they stay a dataclass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import NamedTuple

from feedsync.terminal import plural


class Feed(NamedTuple):
    """A feed to poll, as storage hands it to the poller."""

    id: int
    url: str
    latest_published: str  # '' when nothing has been staged yet
    etag: str | None
    last_modified: str | None
    error_count: int = 0  # consecutive failed polls so far
    polled_before: bool = False
    recent_entries: int = 0  # entries dated (or first seen) within the last week
    recent_oldest: str | None = None  # the oldest of those
    redirect_to: str | None = None  # a 301 target seen but not yet trusted
    redirect_seen: int = 0
    identity: str = "auto"  # "url+title": no revision/duplicate heuristics


class Entry(NamedTuple):
    """One feed entry, normalised: canonical URL, collapsed title, UTC date or None."""

    url: str
    title: str
    published: str | None
    summary: str = ""
    author: str | None = None
    guid: str | None = None


class ParsedFeed(NamedTuple):
    """What the parser made of one feed document."""

    title: str | None
    entries: tuple[Entry, ...]
    skipped: int = 0  # entries without a usable link or title
    problem: str | None = None  # feedparser's complaint about malformed XML, if any
    ttl: timedelta | None = None  # RSS <ttl>: "do not poll again before"
    skip_reasons: tuple[str, ...] = ()  # one per skipped entry: "no link", "title too long"

    @property
    def warning(self) -> str | None:
        """A line for ``feeds.last_warning``: what was wrong but not fatal.

        The consequence first (the encoding the text was read in, the entries lost), the
        parser's complaint after it: ``feeds`` cuts the line to the terminal's width, and
        "parsed as iso-8859-2 (declared utf-8); 1 entry skipped: no link" is what the
        owner acts on."""
        parts = []
        complaint = self.problem
        override = _ENCODING_OVERRIDE.match(complaint or "")
        if override:  # feedparser read it in another encoding than it declares
            parts.append(f"parsed as {override['used']} (declared {override['declared']})")
            complaint = None
        if self.skip_reasons:
            counts: dict[str, int] = {}
            for reason in self.skip_reasons:
                counts[reason] = counts.get(reason, 0) + 1
            listed = ", ".join(  # a count beside each reason when there are several
                f"{r} ({n})" if len(counts) > 1 else r for r, n in sorted(counts.items())
            )
            parts.append(f"{plural(len(self.skip_reasons), 'entry')} skipped: {listed}")
        if complaint and not self.entries and not self.skip_reasons:
            # malformed, but whole and empty (parse.referee._complete_without_entries): nothing
            # was lost, which is what the owner needs to read before the complaint
            parts.append("no entries in the feed")
        if complaint:
            parts.append(f"malformed: {complaint}")
        return "; ".join(parts) or None


# feedparser's CharacterEncodingOverride, as parse/referee.py keeps it in ``problem``
_ENCODING_OVERRIDE = re.compile(
    r"CharacterEncodingOverride: document declared as (?P<declared>\S+), "
    r"but parsed as (?P<used>\S+)"
)


# What a feed poll came to (PollIntent.outcome).
STAGED = "staged"  # a feed document, parsed: its candidates staged
NOT_MODIFIED = "not modified"  # 304: the validators still hold
FAILED = "failed"  # no feed this time (network, HTTP error, not a feed): retried later
GONE = "gone"  # 410: the publisher removed the feed, which is disabled


class Answer(NamedTuple):
    """What the server said about a feed besides its body: validators, hints, moves."""

    etag: str | None = None
    last_modified: str | None = None
    max_age: timedelta | None = None  # Cache-Control max-age: "not before"
    moved_to: str | None = None  # the canonical URL a permanent redirect led to
    moved_by_308: bool = False
    # the document's host when the peer that served it was on a private address: its
    # entries' links on that host may be fetched from the LAN (feedsync/guard.py)
    lan_host: str | None = None


class HostWait(NamedTuple):
    """A host that said 429/503: left alone until ``not_before`` by every process."""

    host: str
    not_before: str
    backoff_count: int
    reason: str


class Fetched(NamedTuple):
    """A feed poll's fetch outcome: a document that really is a feed, parsed."""

    answer: Answer
    parsed: ParsedFeed


class NotModified(NamedTuple):
    """A feed poll's fetch outcome: 304, the validators still hold."""

    answer: Answer


class Failed(NamedTuple):
    """A feed poll's fetch outcome: no feed this time (network, HTTP status, not a feed, a
    parser bug), ``hint`` the server's Retry-After; ``gone``: it said 410."""

    error: str
    hint: timedelta | None = None
    gone: bool = False


# What a feed's fetch came to: the input of decide.poll, told apart by type, not by
# which of several optional arguments is None.
FetchOutcome = Fetched | NotModified | Failed


class PollIntent(NamedTuple):
    """The feed's whole change after one poll, whatever its outcome, decided by
    ``decide.poll`` with no I/O and applied by storage in ONE transaction
    (``Storage.record_poll``, with the poll's :class:`HostNote`).

    ``outcome`` says which statements apply it (STAGED, NOT_MODIFIED, FAILED, GONE).
    ``entries`` are the candidates (see ``decide.candidates``); storage inserts them with
    INSERT OR IGNORE and reports which rows that insert really created. Those rows are
    leased to ``owner`` (the pass, ``PollRules.owner``) until ``lease_until`` so that only
    this process extracts them. Every outcome gives the feed's claim back.
    """

    feed_id: int
    polled_at: str
    next_poll_at: str | None  # None: not polled again (GONE)
    outcome: str = STAGED
    entries: tuple[Entry, ...] = ()
    newest_published: str = ""  # '' when no candidate has a date: latest_published stays
    warning: str | None = None  # the parse's warning, stored on the feed (None: all fine)
    feed_title: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    error: str | None = None  # FAILED and GONE: why, for feeds.last_error
    redirect: RedirectState | None = None  # None: nothing to write about moves
    owner: str = ""
    lease_until: str = ""
    identity: str = "auto"  # the feed's: "url+title" turns the revision rule off
    window_start: str = ""  # revisions are sought among rows first seen since then
    # the rows it creates keep it: the document's host if it was served from a private
    # address (Answer.lan_host), decided once, at the insert
    lan_host: str | None = None


class HostNote(NamedTuple):
    """What a feed poll writes about its host, in the poll's own transaction beside its
    :class:`PollIntent`: the host's politeness, not the feed's change, and decided by
    the host's rules (feedsync/politeness/rules.py), not by ``decide.poll``."""

    wait: HostWait | None = None  # the host said 429/503: left alone until then
    clear: str | None = None  # a host whose backoff this good answer ends
    # the hosts' shared slots (host, slot) the poll's request held, given back with it
    slots: tuple[tuple[str, int], ...] = ()
    # the feed's host when the poller holds it (feedsync/politeness/holds.py): say whether
    # another process, refused a turn there, wants it (PollRecord.host_wanted)
    held: str | None = None


NO_HOST_NOTE = HostNote()


class PollRecord(NamedTuple):
    """What ``Storage.record_poll`` did."""

    created_ids: tuple[int, ...] = ()
    linked: int = 0  # feed_entries links written (new or existing rows)
    host_wanted: bool = False  # another process asks for the held host (HostNote.held)
    revisions: int = 0  # of the created rows, those that are another version of a story
    move_refused: str | None = None  # the feed could not take its new URL: why (disabled)


class RedirectState(NamedTuple):
    move_to: str | None  # change the feed's URL to this now
    pending: str | None  # a 301 target seen, not yet trusted
    seen: int  # on how many polls in a row


class FeedClaim(NamedTuple):
    """What one claim transaction took: the feeds now ours, and whether another process
    is at work on the database (then the hosts' turns are taken there, not in memory)."""

    ids: frozenset[int]
    others: bool
    # the hosts now held whole by the claimant (feedsync/politeness/holds.py), each with the seconds
    # until its next request may start
    held: tuple[tuple[str, float], ...] = ()


class ArticleJob(NamedTuple):
    """A news_summary row claimed for extraction."""

    id: int
    url: str
    title: str
    published: str | None
    author: str | None
    attempts: int
    # the host of the LAN feed document that staged it (news_summary.lan_host): its link
    # may be on a private address only on that host or [fetch] lan_hosts; None: nowhere
    lan_host: str | None = None
    heuristics: bool = True  # none of its feeds says identity = "url+title"


class Article(NamedTuple):
    """The extracted article, as the extraction worker returns it."""

    text: str
    title: str | None = None
    author: str | None = None
    date: str | None = None  # as the page states it (YYYY-MM-DD usually)
    language: str | None = None
    canonical_url: str | None = None
    sitename: str | None = None
    fingerprint: int | None = None  # identity.fingerprint of the text


class FailureOutcome(NamedTuple):
    """How a failed extraction is recorded (decided by ``decide.after_failure``)."""

    state: str  # 'failed' (retried later) or 'gone' (given up)
    attempts: int
    next_attempt_at: str | None
    error: str


class ListedFeed(NamedTuple):
    """What the config file says of one of its feeds beside its URL ([[feeds]]): its
    identity mode, and the title and folder its owner gave it (None: none given)."""

    identity: str = "auto"  # feedsync.identity.AUTO
    title: str | None = None
    category: str | None = None


class FeedHealth(NamedTuple):
    """One line of ``feedsync feeds``."""

    id: int
    url: str
    title: str | None  # what it is called: its owner's title for it, else its own
    enabled: bool
    disabled_reason: str | None
    origin: str
    latest_published: str
    last_poll_at: str | None
    last_success_at: str | None
    error_count: int
    last_error: str | None
    entries: int
    last_warning: str | None = None
    moved_from: str | None = None
    category: str | None = None  # the OPML folder it came from, "News/World"
    next_poll_at: str | None = None
    # Its articles (a feed can poll fine while every page it links to fails): entries
    # waiting for their first fetch, failing (to be retried), and of its entries first
    # seen in the last week, those given up and those extracted.
    articles_pending: int = 0
    articles_failing: int = 0
    articles_given_up_week: int = 0
    articles_extracted_week: int = 0
    articles_last_error: str | None = None  # the newest failing or given-up one's reason
    feed_title: str | None = None  # the feed's own title (None until a poll gives one)
    user_title: str | None = None  # the title its owner gave it ([[feeds]] title, add --title)

    @property
    def articles_in_trouble(self) -> bool:
        """Its articles all fail: of its entries of the last week, some failed or were
        given up and none was extracted."""
        troubled = self.articles_failing + self.articles_given_up_week
        return troubled > 0 and self.articles_extracted_week == 0


# news_summary.state as the commands name it: 'new' is waiting for its first fetch
STATE_NAMES = {"new": "pending", "failed": "failed", "gone": "given-up"}


class StagedEntry(NamedTuple):
    """An entry whose article is not there (yet): pending, failed (to be retried) or
    given up; what ``news --state`` lists and ``show`` tells about it."""

    id: int  # news_summary.id (not an article id)
    url: str
    title: str
    published: str | None
    first_seen_at: str
    state: str  # 'new', 'failed', 'gone' (news_summary.state)
    attempts: int
    next_attempt_at: str | None
    last_error: str | None
    feeds: tuple[tuple[int, str, str | None], ...] = ()  # (id, url, title) that carry it


class NewsItem(NamedTuple):
    """An extracted article as the reading commands show it."""

    id: int
    url: str
    title: str
    published: str | None
    feed_title: str | None
    author: str | None
    language: str | None
    fetched_at: str
    body: str


class SnapshotResult(NamedTuple):
    """What ``storage.save()`` did."""

    written: bool
    path: str
    size: int
    taken_at: str  # time of the snapshot now on the card ('' if unknown)
    seconds: float
    detail: str  # "written", "unchanged since the last snapshot"


class StorageStatus(NamedTuple):
    """Where the data is, how safe it is, and how full, for ``feedsync status``."""

    engine: str
    live: str  # the live database (a file), or the server and database
    live_bytes: int
    snapshot: str | None  # the card database (everything); None on PostgreSQL
    snapshot_bytes: int | None
    snapshot_at: str | None  # the last save to it
    unsaved_changes: int | None  # content changes since the last save
    ram_budget: int | None = None  # bytes the live database may take
    ram_disk_size: int | None = None  # the file system it is on
    ram_disk_free: int | None = None
    card_budget: int | None = None  # bytes the card database may take
    card_disk_size: int | None = None
    card_disk_free: int | None = None
    nearly_full: tuple[str, ...] = ()  # one line each: what is close to full, and why
    not_taking: str | None = None  # why no new entries are taken now (None: they are)
    card_read_only: str | None = None  # why nothing can be saved now (None: it can)
    # the card lacks saves made to it: "begun anew after 3 saves to the one before" (a
    # damaged one set aside), "an older copy (save 2 of 3)"; None: it holds them all
    card_behind: str | None = None


class LinkedEntry(NamedTuple):
    """A revision or a duplicate of an article, for ``feedsync show``."""

    id: int
    url: str
    title: str
    first_seen_at: str
    reason: str | None


class SearchHit(NamedTuple):
    id: int
    url: str
    title: str
    published: str | None
    feed_title: str | None
    snippet: str  # with the matches between the markers the caller asked for


@dataclass
class RunStats:
    """Counters of one pass, printed as the summary line and by ``run --json``."""

    feeds: int = 0
    polled: int = 0
    not_modified: int = 0
    parsed: int = 0
    feed_errors: int = 0
    entries_seen: int = 0
    entries_skipped: int = 0
    candidates: int = 0
    staged: int = 0
    extracted: int = 0
    extract_failed: int = 0
    gone: int = 0
    revisions: int = 0  # staged entries that were another version of a story: not fetched
    duplicates: int = 0  # fetched pages that were an article already stored: linked
    deferred: int = 0  # feeds and articles left for later: their host asked us to wait
    busy: int = 0  # feeds skipped because another process was polling them
    # articles left to another process that held them (claimed) at the end of this pass
    articles_busy: int = 0
    snapshot: str | None = None  # "written", "unchanged since the last save", or None
    # why no new entries were taken (the RAM disk or the card full), None when they were
    not_taking: str | None = None
    stopped: bool = False  # the pass was asked to stop (SIGTERM) and ended early
    errors: list[str] = field(default_factory=list)
