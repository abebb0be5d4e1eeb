"""One pass of feedsync: poll every enabled feed, stage what is new, extract it.

As a pipe::

    storage.feeds_to_poll                                          -- one read
      | claims.FeedClaims (storage.claim_feeds: batches, by host)  -- ~1 txn per many feeds
      | fetch.get (conditional GET, concurrent, per-host cap)      -- network
      | parse.parse_feed                                           -- CPU, the parse thread
      | decide.poll -> PollIntent (staged/304/failed/gone/moved)   -- pure
      | storage.record_poll (INSERT OR IGNORE ... RETURNING)       -- 1 txn/feed; dedup here
    then, until the queue has nothing more for this pass:
      storage.claim_articles (lease)                               -- short txn
      | fetch.get (article page)                                   -- network, no txn open
      | extract.Extractor (trafilatura in worker processes)        -- CPU, bounded
      | storage.save_article / decide.after_failure + storage.record_extract_failure
    and, for a one-shot run, at the end:
      storage.snapshot (a save: what changed, to the card)         -- the SD card's only writes

Threads: the event loop does the network; every storage call runs on one "lane"
thread, in order, so the database connection is used by one thread and the loop never
blocks on SQLite; feed documents are parsed on a thread of their own, so the lane runs
only short transactions. No network I/O happens inside a transaction: each storage
method is a whole transaction by itself. A feed poll writes once, whatever its outcome
(the decision is one intent), and gives its host's turn back in that same write.

Exactly once across overlapping processes: the staging insert names the rows it really
created and leases them to this process; claims skip rows leased to someone else. A run
walks the queue once, in id order (``after_id``), so a row that fails is not retried in
the same pass but on a later one.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import random
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, ParamSpec, TypeVar

import httpx

from feedsync import addresses, decide, fetch, hosts, logs, timestamps
from feedsync.canonical import canonical_url, host_of
from feedsync.claims import FeedClaims, ahead_for
from feedsync.config import Config
from feedsync.extract import ExtractError, Extractor
from feedsync.holds import HostHolds
from feedsync.parse import NotAFeed, parse_feed
from feedsync.progress import Progress, article_line
from feedsync.records import (
    GONE,
    NOT_MODIFIED,
    STAGED,
    Answer,
    ArticleJob,
    Feed,
    FeedClaim,
    HostWait,
    ParsedFeed,
    PollIntent,
    PollRecord,
    RunStats,
)
from feedsync.storage import CardReadOnly, Storage, StorageError, StorageFull, StorageUnavailable

P = ParamSpec("P")
T = TypeVar("T")

# how long a worker's crash waits to be judged: a stop signal it died of is known by then
CRASH_GRACE = 1.0
HTML_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "application/xml", "text/xml")


# A feed poll's shared host slots, given back by its record_poll rather than by a
# transaction of their own (_SharedHosts.give_back): set per feed task in Pass._poll.
_HELD_SLOTS: contextvars.ContextVar[list[tuple[str, int]] | None] = contextvars.ContextVar(
    "feedsync_held_slots", default=None
)


def new_owner() -> str:
    """An identity for leases, unique across hosts, processes and passes."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Pass:
    """One pass over the feeds and the extraction queue."""

    def __init__(
        self,
        config: Config,
        storage: Storage,
        progress: Progress,
        *,
        clock: Callable[[], datetime] = timestamps.now,
        owner: str | None = None,
        snapshot: bool = False,
        due_only: bool = False,
        stop: threading.Event | None = None,
        rng: random.Random | None = None,
        only: set[int] | None = None,
        extract: bool = True,
        save_every: timedelta | None = None,
    ):
        """``due_only``: poll only the feeds whose next poll time has come (the daemon,
        ``run --due``), not every enabled feed. ``stop``: when set, the pass stops taking
        new work, lets the transaction in progress finish, gives back the rows it holds
        and ends early. ``save_every`` (the daemon's ``snapshot_interval``): a pass that
        runs longer saves to the card on its way, between feeds and between articles, so
        a long pass never holds back the save (the daemon's own save job waits for it)."""
        self.config = config
        self.storage = storage
        self.progress = progress
        self.clock = clock
        self.owner = owner or new_owner()
        self.take_snapshot = snapshot
        self.due_only = due_only
        self.only = only  # poll just these feeds (feedsync add polls the new one)
        self.extract = extract  # False: stage only, the rows claimable by anyone at once
        self.stop = stop
        self.rng = rng or random.Random()
        self.stats = RunStats()
        self.save_every = save_every
        self._gate = hosts.HostGate(1, 1)  # the pass's own, set up in _run
        self._due_before: str | None = None  # due-only passes: the feeds' due time, in _run
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._host_backoff: dict[str, int] = {}  # hosts in a 429/503 backoff: its count
        self._lan_hosts: dict[str, bool] = {}
        # where the feeds client reached each host in this pass (addresses.on_the_lan)
        self._connected: dict[str, str] = {}
        self._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="feedsync-lane")
        # feed documents are parsed beside the lane, so the lane runs only short
        # transactions (a host's turn is never stuck behind a 2,000-entry parse)
        self._parser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="feedsync-parse")
        self._claims = FeedClaims((), self._claim_feeds, self._claim_ahead)  # in _run
        self._feed_hosts: dict[int, str] = {}  # in _run
        # the hosts this pass holds while alone on the database, paced in memory
        self._holds = HostHolds()
        self._hold_lease = min(config.poll.lease, decide.SLOT_LEASE).total_seconds()
        self._rules = decide.PollRules(
            base=config.poll.interval,
            min_interval=config.poll.min_interval,
            max_interval=config.poll.max_interval,
            lookback=config.poll.lookback,
            identity_window=config.identity.window,
            extract_lease=config.extract.lease if extract else None,
        )
        self._extractor = Extractor(
            workers=config.extract.workers, timeout=config.extract.timeout.total_seconds()
        )

    async def _on_lane(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._lane, lambda: fn(*args, **kwargs))

    def _problem(self, message: str, url: str | None = None) -> None:
        self.stats.errors.append(message)
        self.progress.problem(message, url)

    # ------------------------------------------------------------ the pass

    def run(self) -> RunStats:
        """The pass, then (``snapshot=True``) a snapshot. A failed snapshot is raised after
        the summary has been printed: the pass itself is done and recorded."""
        started = time.monotonic()
        ended_early = True
        broken: Exception | None = None  # what ended the pass (the database's own trouble)
        try:
            asyncio.run(self._run_until_stopped())
            ended_early = self.stopping
        except Exception as exc:  # the save below is still tried: what was done is kept
            broken = exc
        finally:
            self._extractor.close(kill=ended_early)
            self._parser.shutdown(wait=True)
            self._lane.shutdown(wait=True)  # the transaction in progress finishes
            # Give back whatever this pass still holds: after a stop or an exception, the
            # claims in progress; after a whole pass, a row it staged for itself that its
            # claim skipped (on PostgreSQL, another poller had it locked that instant), so
            # nobody waits for its lease to end. After the lane is done: the connection
            # has one user at a time.
            with contextlib.suppress(StorageError):
                self.storage.release_leases(self.owner)
        self.stats.stopped = self.stopping
        failure: StorageError | None = None
        if self.take_snapshot:
            try:
                result = self.storage.snapshot()
                self.stats.snapshot = result.detail if result else None
            except StorageFull as exc:  # the card has no room: said, and lived through
                self.stats.snapshot = "not saved"
                self._problem(str(exc))
            except CardReadOnly as exc:  # the pass ran in RAM; nothing of it is kept
                failure = exc
                self.stats.snapshot = "not saved: the card is read-only"
            except StorageError as exc:
                failure = exc
                self.stats.snapshot = "failed"
        self.progress.finish(self.stats, time.monotonic() - started)
        if broken is not None:
            raise broken
        if failure is not None:
            raise failure
        return self.stats

    @property
    def stopping(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    async def _run_until_stopped(self) -> None:
        """The pass, cancelled when ``stop`` is set. Cancelling abandons network I/O; a
        storage call already running on the lane completes (run() waits for the lane)."""
        work = asyncio.create_task(self._run())
        if self.stop is None:
            await work
            return
        while not work.done():
            await asyncio.wait({work}, timeout=0.1)
            if self.stopping:
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await work
                return
        work.result()

    async def _run(self) -> None:
        poll = self.config.poll
        now = self.clock()
        started_at = timestamps.to_iso(now)
        self._due_before = started_at if self.due_only else None
        feeds = await self._on_lane(
            self.storage.feeds_to_poll,
            started_at if self.due_only else None,
            timestamps.to_iso(now - decide.WEEK),
        )
        if self.only is not None:
            feeds = [feed for feed in feeds if feed.id in self.only]
        self.stats.feeds = len(feeds)
        self._claims = FeedClaims(feeds, self._claim_feeds, self._claim_ahead)
        self._feed_hosts = {feed.id: host_of(feed.url) for feed in feeds}
        if feeds:
            # no room in RAM for what the polls would bring: none is polled (each is
            # polled when there is room again), extraction and the save go on
            full = await self._on_lane(self.storage.room_for_entries)
            if full is not None:
                self.stats.not_taking = full
                self._problem(full)
        fetching = self.config.fetch
        self._gate = hosts.HostGate(
            poll.concurrency, poll.per_host, fetching.host_delay, shared=_SharedHosts(self)
        )
        for host, (not_before, count) in (
            await self._on_lane(self.storage.hosts_waiting, started_at)
        ).items():
            self._host_backoff[host] = count
            wait = (timestamps.from_iso(not_before) - now).total_seconds()
            if wait > 0:
                self._gate.block(host, wait)
        timeout = poll.timeout.total_seconds()
        await fetch.warm_up()

        def client(
            allow_private: bool, connected: dict[str, str] | None = None
        ) -> httpx.AsyncClient:
            return fetch.make_client(
                timeout,
                poll.concurrency,
                allow_private=allow_private,
                agent=fetching.user_agent,
                connected=connected,
            )

        # feeds are the owner's choice (the LAN too); article pages only when allowed
        async with (
            client(True, self._connected) as feeds_client,
            client(fetching.allow_private) as pages,
            client(True) as lan_pages,
        ):
            self._clients = {"feeds": feeds_client, "pages": pages, "lan_pages": lan_pages}
            saver = None
            if self.save_every is not None:
                every = max(self.save_every.total_seconds(), 1.0)
                saver = asyncio.create_task(self._keep_saving(every))
            try:
                self.progress.start_feeds(len(feeds))
                # Bodies waiting for the parser count against the same bound as
                # downloads, so at most `concurrency` feed documents are in memory at once.
                in_memory = asyncio.Semaphore(poll.concurrency)
                keeper = asyncio.create_task(self._keep_holds())
                try:
                    await asyncio.gather(*(self._poll(f, in_memory) for f in feeds))
                    await self._sweep(in_memory, started_at, now)
                finally:
                    keeper.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await keeper
                await self._release_holds(self._holds.end())
                if self.extract:
                    self.progress.start_articles()
                    await self._drain_queue(due_before=started_at)
            finally:
                if saver is not None:
                    saver.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await saver

    async def _sweep(self, in_memory: asyncio.Semaphore, started_at: str, now: datetime) -> None:
        """Once more, the feeds this pass was refused that are still due and free now. A
        claim skips a feed that another transaction has locked at that instant (on
        PostgreSQL: another poller's claim or a daemon bringing its config's feeds in),
        and the one holding the lock may not poll it either: without this it waited a
        whole tick (found by bench scenario 10)."""
        refused = self._claims.refused
        if not refused or self.stopping:
            return
        listed = await self._on_lane(
            self.storage.feeds_to_poll, started_at, timestamps.to_iso(now - decide.WEEK)
        )
        again = [feed for feed in listed if feed.id in refused]
        if not again:
            return
        self.stats.busy -= len(again)
        self._claims = FeedClaims(again, self._claim_feeds, self._claim_ahead)
        await asyncio.gather(*(self._poll(f, in_memory) for f in again))

    async def _keep_saving(self, every: float) -> None:
        """Beside the pass: a save to the card every ``every`` seconds, on the lane
        between two transactions (the save of the live database is consistent at any
        of them). Its trouble is said, not raised: what is not saved stays in RAM for
        the next save."""
        while True:
            await asyncio.sleep(every)
            try:
                await self._on_lane(self.storage.snapshot)
            except StorageUnavailable:
                return
            except StorageError as exc:
                self.progress.problem(f"save during the pass: {exc}")

    # ------------------------------------------------------------ hosts

    def _host_block(self, host: str, error: fetch.FetchError) -> tuple[timedelta, HostWait | None]:
        """429/503: leave the host alone (Retry-After, capped, or doubling), in this pass
        at once and, through the database, in every other process: the returned HostWait
        is to be written (None: nothing new to write). A refusal while a block is in force
        (requests in flight together) is part of that block, not a further one
        (decide.host_block)."""
        left = timedelta(seconds=self._gate.blocked_for(host))
        count = self._host_backoff.get(host, 0)
        block = decide.host_block(left, count, error.retry_after, self.config.fetch.max_retry_after)
        if block.backoff_count == count and block.wait <= left:
            return block.wait, None
        self._gate.block(host, block.wait.total_seconds())
        self._host_backoff[host] = block.backoff_count
        until = timestamps.to_iso(self.clock() + block.wait)
        return block.wait, HostWait(host, until, block.backoff_count, str(error))

    async def _host_refused(self, host: str, error: fetch.FetchError) -> None:
        """An article's 429/503: the block, written at once (a feed's goes with its poll)."""
        _, wait = self._host_block(host, error)
        if wait is not None:
            await self._on_lane(
                self.storage.host_wait, wait.host, wait.not_before, wait.backoff_count, wait.reason
            )

    def _host_unblocked(self, host: str) -> str | None:
        """A good answer ends the host's backoff (the host to clear in the database, or
        None), unless the host is blocked right now: then the answer is from a request
        sent before the refusal, and the refusal stands (found by
        tests/test_pipeline_fuzz.py: a 200 arriving after a 429 of the same moment erased
        the wait from the database, so the next pass asked again)."""
        if self._gate.blocked(host):
            return None
        return host if self._host_backoff.pop(host, None) is not None else None

    async def _host_answered(self, host: str) -> None:
        """An article's good answer: the host's backoff ends at once (see _host_unblocked)."""
        if self._host_unblocked(host) is not None:
            await self._on_lane(self.storage.host_clear, host)

    async def _on_lan(self, feed_urls: tuple[str, ...]) -> bool:
        """Whether one of an article's feeds is on the LAN (addresses.on_the_lan: decided by
        where this pass reached it, once per pass)."""
        for url in feed_urls:
            host = host_of(url)
            if host not in self._lan_hosts:
                self._lan_hosts[host] = await addresses.on_the_lan(host, self._connected)
            if self._lan_hosts[host]:
                return True
        return False

    # ------------------------------------------------------------ stages 1-2

    async def _poll(self, feed: Feed, in_memory: asyncio.Semaphore) -> None:
        """One feed's poll, its failures contained: whatever goes wrong with it (any
        exception type: a parser, a header, a library bug on hostile input) is recorded
        on the feed and the pass goes on with the others."""
        held: list[tuple[str, int]] = []
        token = _HELD_SLOTS.set(held)
        try:
            await self._poll_feed(feed, in_memory)
        except StorageUnavailable:
            raise  # the server is down: the pass ends, the daemon waits for it
        except Exception as exc:
            reason = _unexpected(exc)
            logs.LOGGER.debug("feed %s: %s", feed.url, reason, exc_info=True)
            # this write failing too means the database's own trouble: that ends the pass
            intent = self._decide(feed, error=reason)
            record = await self._record(intent)
            self._count_feed(feed, intent, record)
        finally:
            _HELD_SLOTS.reset(token)
            for host, slot in held:  # not given back by a record: the poll went otherwise
                with contextlib.suppress(StorageError):
                    await self._on_lane(self.storage.host_done, host, self.owner, slot)

    async def _record(self, intent: PollIntent) -> PollRecord:
        """The poll's one write, with the host slots its request held."""
        held = _HELD_SLOTS.get()
        given = tuple(held or ())
        host = self._feed_hosts.get(intent.feed_id)
        held_host = host if host is not None and self._holds.holds(host) else None
        record = await self._on_lane(
            self.storage.record_poll, replace(intent, host_slots=given, held_host=held_host)
        )
        if held:
            del held[: len(given)]
        if record.host_wanted:
            # another process was refused a turn on the held host: nothing more is held
            await self._company_came()
        return record

    async def _poll_feed(self, feed: Feed, in_memory: asyncio.Semaphore) -> None:
        """fetch | parse | decide.poll | storage.record_poll: one write for the outcome."""
        poll = self.config.poll
        parsed: ParsedFeed | None = None
        by_308 = False
        host = host_of(feed.url)
        if self.stats.not_taking is not None:  # no room for new entries: poll it later
            self._defer()
            return
        if self._gate.blocked(host):  # it asked us to wait: not even a conditional GET
            self._defer()
            return
        async with contextlib.AsyncExitStack() as memory:
            try:
                # the claim before the host's turn: a feed another process is polling
                # spends no slot and no start of the host's; room for the body once the
                # turn has come: a feed waiting for its host holds none
                async with self._gate.slot(
                    host,
                    origin=fetch.origin_of(feed.url),
                    first=lambda: self._claims.take(feed),
                    ready=lambda: memory.enter_async_context(in_memory),
                ) as claimed:
                    if not claimed:
                        self.stats.busy += 1  # another process is polling it right now
                        self.progress.feed_done(0)
                        return
                    response = await fetch.get(
                        self._clients["feeds"],
                        feed.url,
                        max_bytes=poll.max_feed_bytes,
                        deadline=poll.timeout.total_seconds(),
                        accept=fetch.FEED_ACCEPT,
                        etag=feed.etag,
                        last_modified=feed.last_modified,
                    )
            except hosts.HostBlocked:  # it said 429/503 while this feed waited for its turn
                await self._on_lane(self.storage.release_feed, feed.id, self.owner)
                self._defer()
                return
            except fetch.FetchError as exc:
                host_wait = None
                hint = exc.retry_after
                if exc.host_busy:
                    hint, host_wait = self._host_block(host, exc)
                intent = self._decide(
                    feed, error=str(exc), hint=hint, gone=exc.status == 410, host_wait=host_wait
                )
            else:
                answer = Answer(
                    etag=response.etag,
                    last_modified=response.last_modified,
                    max_age=response.max_age,
                    moved_to=canonical_url(response.moved_to) if response.moved_to else None,
                    moved_by_308=response.moved_by_308,
                )
                by_308 = response.moved_by_308
                host_clear = self._host_unblocked(host)
                if response.not_modified:
                    intent = self._decide(feed, answer=answer, host_clear=host_clear)
                else:
                    intent, parsed = await self._parse_and_decide(
                        feed, response, answer, host_clear
                    )
        try:
            record = await self._record(intent)
        except StorageFull as exc:
            # the RAM disk is full and the card cannot take more: nothing of this poll
            # is recorded (the feed is polled again later), no further feed is polled
            # in this pass; extraction and the save go on
            if self.stats.not_taking is None:
                self.stats.not_taking = str(exc)
                self._problem(str(exc))
            await self._on_lane(self.storage.release_feed, feed.id, self.owner)
            self._defer()
            return
        self._count_feed(feed, intent, record, parsed, by_308)

    def _defer(self) -> None:
        self.stats.deferred += 1
        self.progress.feed_done(0)

    async def _parse_and_decide(
        self, feed: Feed, response: fetch.Response, answer: Answer, host_clear: str | None
    ) -> tuple[PollIntent, ParsedFeed | None]:
        """The document parsed on the parse thread; a parse that fails (not a feed, or a
        parser bug on hostile input) is the poll's failure, not the pass's."""
        fetched_at = self.clock()
        loop = asyncio.get_running_loop()
        try:
            parsed = await loop.run_in_executor(
                self._parser,
                parse_feed,
                response.body,
                response.url,
                fetched_at,
                response.content_type,
            )
        except NotAFeed as exc:
            return self._decide(feed, error=str(exc), host_clear=host_clear), None
        except Exception as exc:  # a parser bug on hostile input must not end the pass
            reason = f"cannot parse: {type(exc).__name__}: {exc}".splitlines()[0][:300]
            return self._decide(feed, error=reason, host_clear=host_clear), None
        intent = self._decide(
            feed, answer=answer, parsed=parsed, host_clear=host_clear, now=fetched_at
        )
        return intent, parsed

    def _decide(self, feed: Feed, *, now: datetime | None = None, **outcome: Any) -> PollIntent:
        return decide.poll(
            feed,
            now or self.clock(),
            self._rules,
            jitter=self.rng.uniform(-0.1, 0.1),
            owner=self.owner,
            **outcome,
        )

    def _count_feed(
        self,
        feed: Feed,
        intent: PollIntent,
        record: PollRecord,
        parsed: ParsedFeed | None = None,
        by_308: bool = False,
    ) -> None:
        s = self.stats
        s.polled += 1
        s.not_modified += intent.outcome == NOT_MODIFIED
        s.parsed += intent.outcome == STAGED
        if parsed is not None:
            s.entries_seen += len(parsed.entries) + parsed.skipped
            s.entries_skipped += parsed.skipped
        s.candidates += len(intent.entries)
        s.staged += len(record.created_ids)
        s.revisions += record.revisions
        error = intent.error
        if intent.outcome == GONE:
            error = f"{error} (disabled)"
        if error:
            s.feed_errors += 1
            self._problem(f"feed {feed.url}: {error}", feed.url)
        note = decide.move_note(intent, record.move_refused, by_308)
        if note:
            self.progress.problem(f"feed {feed.url}: {note}", feed.url)
        self.progress.feed_done(len(record.created_ids))

    async def _claim_feeds(self, ids: list[int]) -> FeedClaim:
        """One claim transaction (feedsync.claims), which also holds the feeds' hosts
        while the pass is alone (feedsync.holds)."""
        now = self.clock()
        claim = await self._on_lane(
            self.storage.claim_feeds,
            ids,
            self.owner,
            timestamps.to_iso(now),
            timestamps.to_iso(now + self.config.poll.lease),
            self._due_before,
            self._holds.wanted(self._feed_hosts[i] for i in ids if i in self._feed_hosts),
            self.config.fetch.host_delay.total_seconds(),
            self._hold_lease,
        )
        for host, ahead in claim.held:
            self._gate.pace_from(host, ahead)
        await self._release_holds(self._holds.granted(host for host, _ in claim.held))
        if claim.others:
            await self._company_came()
        return claim

    async def _company_came(self) -> None:
        """Another process is at work on the database: the pass holds nothing more, and
        gives back at once every held host with no request in flight (holds.HostHolds)."""
        if not self._holds.company:
            await self._release_holds(self._holds.join_company())

    async def _release_holds(self, hosts: list[str]) -> None:
        """Give back held hosts, each with its next start as this process paced it."""
        if not hosts:
            return
        aheads = {host: self._gate.pace_ahead(host) for host in hosts}
        self._holds.released(hosts)
        try:
            await self._on_lane(self.storage.host_holds_release, self.owner, aheads)
        except StorageError as exc:  # the holds lapse with their lease; the pass goes on
            logs.LOGGER.debug("hosts %s not released: %s", ", ".join(hosts), exc)

    async def _keep_holds(self) -> None:
        """While the polls run: the held hosts' lease renewed every third of it, in one
        transaction that also says whether company has come (then nothing is held)."""
        while not self._holds.company:
            await asyncio.sleep(self._hold_lease / 3)
            if not self._holds.held:
                continue
            try:
                others = await self._on_lane(
                    self.storage.host_holds_keep,
                    self.owner,
                    timestamps.to_iso(self.clock()),
                    self._hold_lease,
                )
            except StorageError as exc:
                # politeness, not data: should a hold lapse, another poller may send
                # to its host one request early. The pass goes on.
                self.progress.problem(f"held hosts: their lease was not renewed: {exc}")
                continue
            if others:
                await self._company_came()

    def _claim_ahead(self, alone: bool) -> int:
        poll = self.config.poll
        return ahead_for(poll.lease, self.config.fetch.host_delay, poll.per_host, alone=alone)

    # ------------------------------------------------------------ stage 3

    async def _drain_queue(self, due_before: str) -> None:
        """Claim and extract queue rows until none is left for this pass.

        At most ``concurrency`` articles are in work at once, and at most that many more
        are claimed ahead, so leases stay short. Cancelled (a stop), it cancels the
        articles in work and waits for them: none may run on after the pass, on clients
        it has closed.
        """
        running: set[asyncio.Task[None]] = set()
        try:
            await self._drain(due_before, running)
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running)

    async def _drain(self, due_before: str, running: set[asyncio.Task[None]]) -> None:
        width = self.config.poll.concurrency
        pending: deque[ArticleJob] = deque()
        after_id = 0
        exhausted = False
        while True:
            while len(running) < width:
                if not pending and not exhausted:
                    now = self.clock()
                    batch = await self._on_lane(
                        self.storage.claim_articles,
                        self.owner,
                        after_id,
                        due_before,
                        timestamps.to_iso(now),
                        timestamps.to_iso(now + self.config.extract.lease),
                        width,
                    )
                    if batch:
                        after_id = batch[-1].id
                        pending.extend(batch)
                        self.progress.articles_claimed(len(batch))
                    else:
                        exhausted = True
                if not pending:
                    break
                job = pending.popleft()
                running.add(asyncio.create_task(self._extract(job)))
            if not running:
                return
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            running -= done
            for task in done:
                task.result()  # a bug in _extract must surface, not vanish

    async def _extract(self, job: ArticleJob) -> None:
        """One article, its failures contained like a feed's (see _poll): recorded on the
        article as a failed attempt, retried later with the usual backoff."""
        try:
            await self._extract_article(job)
        except StorageUnavailable:
            raise
        except Exception as exc:
            reason = _unexpected(exc)
            logs.LOGGER.debug("article %s: %s", job.url, reason, exc_info=True)
            await self._record_extract_failure(job, reason, permanent=False)
            self.progress.article_done()

    async def _extract_article(self, job: ArticleJob) -> None:
        config = self.config
        host = host_of(job.url)
        if self._gate.blocked(host):  # the host asked us to wait: later, no attempt spent
            await self._on_lane(self.storage.release_job, job.id, self.owner)
            self.stats.deferred += 1
            self.progress.article_done()
            return
        lan = config.fetch.allow_private or await self._on_lan(job.feed_urls)
        try:
            async with self._gate.slot(host, origin=fetch.origin_of(job.url)):
                page = await fetch.get(
                    self._clients["lan_pages" if lan else "pages"],
                    job.url,
                    max_bytes=config.extract.max_page_bytes,
                    deadline=config.poll.timeout.total_seconds(),
                    accept=fetch.PAGE_ACCEPT,
                )
            kind = (page.content_type or "text/html").split(";")[0].strip().lower()
            if kind not in HTML_TYPES:
                raise ExtractError(f"not an HTML page ({kind}): skipped", permanent=True)
            article = await self._extractor.extract(page.body, page.url, page.content_type)
        except hosts.HostBlocked:  # it said 429/503 while this one waited for its turn
            await self._on_lane(self.storage.release_job, job.id, self.owner)
            self.stats.deferred += 1
        except fetch.FetchError as exc:
            if exc.host_busy:
                await self._host_refused(host, exc)
                await self._on_lane(self.storage.release_job, job.id, self.owner)
                self.stats.deferred += 1
            else:
                await self._record_extract_failure(job, str(exc), exc.permanent)
        except ExtractError as exc:
            if exc.crashed and not self.stopping:
                # A signal to the whole process group (Ctrl-C, systemd stopping the
                # service) kills the workers the instant it reaches feedsync, whose own
                # handler may run a moment after the dead worker is noticed: the crash
                # is judged once that moment has passed (a stop then gives the page back).
                await asyncio.sleep(CRASH_GRACE)
            await self._record_extract_failure(job, str(exc), exc.permanent)
        else:
            await self._host_answered(host)
            now = self.clock()
            article = replace(article, author=job.author or article.author)
            published = decide.article_published(job.published, article.date, now)
            window = timestamps.to_iso(now - config.identity.window) if job.heuristics else None
            link = await self._on_lane(
                self.storage.save_article,
                job.id,
                article,
                published,
                timestamps.to_iso(now),
                window,
            )
            if link is None:
                self.stats.extracted += 1
            else:
                self.stats.duplicates += 1
        self.progress.article_done()

    async def _record_extract_failure(self, job: ArticleJob, error: str, permanent: bool) -> None:
        if self.stopping:
            # A failure met while the pass stops is the stop's doing, not the page's: a
            # signal to the whole process group (Ctrl-C, systemd's SIGTERM) reaches the
            # extraction workers and the forkserver too. The article goes back to the
            # queue as it was, no attempt spent.
            await self._on_lane(self.storage.release_job, job.id, self.owner)
            return
        outcome = decide.after_failure(
            job.attempts,
            error,
            self.clock(),
            max_attempts=self.config.extract.max_attempts,
            backoff=self.config.extract.retry_backoff,
            permanent=permanent,
        )
        await self._on_lane(self.storage.record_extract_failure, job.id, self.owner, outcome)
        if outcome.state == "gone":
            self.stats.gone += 1
        else:
            self.stats.extract_failed += 1
        # every one in the stats (run --json); progress groups them by host and reason
        self.stats.errors.append(article_line(job.url, error, outcome))
        self.progress.article_failed(job.url, error, outcome)


def _unexpected(exc: BaseException) -> str:
    """A one-line reason for a failure no stage foresaw, fit for ``last_error``."""
    text = f"{exc}".strip().splitlines()[0][:300] if str(exc).strip() else ""
    return f"unexpected {type(exc).__name__}" + (f": {text}" if text else "")


class _SharedHosts:
    """hosts.SharedHosts through the pass's storage, on its lane: the host's turn in the
    database. Its slot is leased for ``[poll] lease`` but at most decide.SLOT_LEASE, renewed
    while the request runs: a poller that dies holds a host's slot no longer than that
    (a request may last ``[poll] timeout``, far too long to block the host for)."""

    def __init__(self, run: Pass):
        self._run = run
        poll = run.config.poll
        self._slots = poll.per_host
        self._delay = run.config.fetch.host_delay.total_seconds()
        self._lease = min(poll.lease, decide.SLOT_LEASE).total_seconds()
        self.renew_every = self._lease / 3

    async def take(self, host: str) -> tuple[int, float] | None:
        run = self._run
        return await run._on_lane(
            run.storage.host_turn, host, run.owner, self._slots, self._delay, self._lease
        )

    async def renew(self, host: str, slot: int) -> None:
        run = self._run
        try:
            await run._on_lane(run.storage.host_renew, host, run.owner, slot, self._lease)
        except StorageError as exc:
            # Politeness, not data: should the lease lapse meanwhile, another poller may
            # send to this host one request early. The pass goes on.
            run.progress.problem(f"host {host}: its slot's lease was not renewed: {exc}")

    def go_local(self, host: str) -> bool:
        return self._run._holds.go_local(host)

    async def left_local(self, host: str) -> None:
        run = self._run
        if run._holds.left_local(host):
            await run._release_holds([host])

    async def give_back(self, host: str, slot: int) -> None:
        """A feed poll's slot goes back with its record (one write, not two); an
        article's, or one outside a feed's poll, at once."""
        held = _HELD_SLOTS.get()
        if held is not None:
            held.append((host, slot))
            return
        run = self._run
        await run._on_lane(run.storage.host_done, host, run.owner, slot)


def run_pass(
    config: Config,
    storage: Storage,
    progress: Progress,
    *,
    due_only: bool = False,
    stop: threading.Event | None = None,
) -> RunStats:
    """One pass and a snapshot, synchronously: what ``feedsync run`` does."""
    return Pass(config, storage, progress, snapshot=True, due_only=due_only, stop=stop).run()
