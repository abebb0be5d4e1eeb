"""One pass of feedsync: poll every enabled feed, stage what is new, extract it.

As a pipe::

    storage.feeds_to_poll
      | fetch.get (conditional GET, concurrent, per-host cap)      -- network
      | parse.parse_feed                                           -- CPU, one feed at a time
      | decide.candidates / decide.newest_published                -- pure
      | storage.stage (INSERT OR IGNORE ... RETURNING, 1 txn/feed) -- dedup happens here
    then, until the queue has nothing more for this pass:
      storage.claim_articles (lease)                               -- short txn
      | fetch.get (article page)                                   -- network, no txn open
      | extract.Extractor (trafilatura in worker processes)        -- CPU, bounded
      | storage.save_article / decide.after_failure + storage.record_extract_failure
    and, for a one-shot run, at the end:
      storage.snapshot (a save: what changed, to the card)         -- the SD card's only writes

Threads: the event loop does the network; every storage call and every parse runs on
one "lane" thread, in order, so the database connection is used by one thread and the
loop never blocks on SQLite or feedparser. No network I/O happens inside a transaction:
each storage method is a whole transaction by itself.

Exactly once across overlapping processes: the staging insert names the rows it really
created and leases them to this process; claims skip rows leased to someone else. A run
walks the queue once, in id order (``after_id``), so a row that fails is not retried in
the same pass but on a later one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import ParamSpec, TypeVar

import httpx

from feedsync import decide, fetch, logs, timestamps
from feedsync.canonical import canonical_url, host_of
from feedsync.config import Config
from feedsync.extract import ExtractError, Extractor
from feedsync.parse import NotAFeed, parse_feed
from feedsync.progress import Progress
from feedsync.records import ArticleJob, Feed, RunStats, StageIntent
from feedsync.storage import CardReadOnly, Storage, StorageError, StorageFull, StorageUnavailable

P = ParamSpec("P")
T = TypeVar("T")

ZERO = timedelta(0)
NO_LEASE = "1970-01-01T00:00:00Z"  # a lease already over
# how long a worker's crash waits to be judged: a stop signal it died of is known by then
CRASH_GRACE = 1.0
HTML_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "application/xml", "text/xml")


def new_owner() -> str:
    """An identity for leases, unique across hosts, processes and passes."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


@dataclass(frozen=True)
class _FeedOutcome:
    staged: int = 0
    seen: int = 0
    skipped: int = 0
    candidates: int = 0
    parsed: bool = False
    not_modified: bool = False
    error: str | None = None
    note: str | None = None  # worth telling, not an error (the feed moved)
    revisions: int = 0


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
        self._gate = fetch.HostGate(1, 1)  # the pass's own, set up in _run
        self._due_before: str | None = None  # due-only passes: the feeds' due time, in _run
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._host_backoff: dict[str, int] = {}  # hosts in a 429/503 backoff: its count
        self._lan_hosts: dict[str, bool] = {}
        # where the feeds client reached each host in this pass (fetch.on_the_lan)
        self._connected: dict[str, str] = {}
        self._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="feedsync-lane")
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
        if feeds:
            # no room in RAM for what the polls would bring: none is polled (each is
            # polled when there is room again), extraction and the save go on
            full = await self._on_lane(self.storage.room_for_entries)
            if full is not None:
                self.stats.not_taking = full
                self._problem(full)
        fetching = self.config.fetch
        self._gate = fetch.HostGate(
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
                await asyncio.gather(*(self._poll(f, in_memory) for f in feeds))
                if self.extract:
                    self.progress.start_articles()
                    await self._drain_queue(due_before=started_at)
            finally:
                if saver is not None:
                    saver.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await saver

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

    async def _host_refused(self, host: str, error: fetch.FetchError) -> timedelta:
        """429/503: leave the host alone (Retry-After, capped, or doubling), in this pass
        and, through the database, in every other process. A refusal while a block is
        in force (requests in flight together) is part of that block, not a further one
        (decide.host_block)."""
        left = timedelta(seconds=self._gate.blocked_for(host))
        count = self._host_backoff.get(host, 0)
        block = decide.host_block(left, count, error.retry_after, self.config.fetch.max_retry_after)
        if block.backoff_count != count or block.wait > left:
            self._gate.block(host, block.wait.total_seconds())
            self._host_backoff[host] = block.backoff_count
            until = timestamps.to_iso(self.clock() + block.wait)
            await self._on_lane(
                self.storage.host_wait, host, until, block.backoff_count, str(error)
            )
        return block.wait

    async def _host_answered(self, host: str) -> None:
        """A good answer ends the host's backoff, unless the host is blocked right now:
        then the answer is from a request sent before the refusal, and the refusal
        stands (found by tests/test_pipeline_fuzz.py: a 200 arriving after a 429 of the
        same moment erased the wait from the database, so the next pass asked again)."""
        if self._gate.blocked(host):
            return
        if self._host_backoff.pop(host, None) is not None:
            await self._on_lane(self.storage.host_clear, host)

    async def _on_lan(self, feed_urls: tuple[str, ...]) -> bool:
        """Whether one of an article's feeds is on the LAN (fetch.on_the_lan: decided by
        where this pass reached it, once per pass)."""
        for url in feed_urls:
            host = host_of(url)
            if host not in self._lan_hosts:
                self._lan_hosts[host] = await fetch.on_the_lan(host, self._connected)
            if self._lan_hosts[host]:
                return True
        return False

    # ------------------------------------------------------------ stages 1-2

    async def _poll(self, feed: Feed, in_memory: asyncio.Semaphore) -> None:
        """One feed's poll, its failures contained: whatever goes wrong with it (any
        exception type: a parser, a header, a library bug on hostile input) is recorded
        on the feed and the pass goes on with the others."""
        try:
            await self._poll_feed(feed, in_memory)
        except StorageUnavailable:
            raise  # the server is down: the pass ends, the daemon waits for it
        except Exception as exc:
            reason = _unexpected(exc)
            logs.LOGGER.debug("feed %s: %s", feed.url, reason, exc_info=True)
            # this write failing too means the database's own trouble: that ends the pass
            await self._on_lane(self._record_failure, feed, reason)
            self._count_feed(feed, _FeedOutcome(error=reason))

    async def _poll_feed(self, feed: Feed, in_memory: asyncio.Semaphore) -> None:
        poll = self.config.poll
        host = host_of(feed.url)
        if self.stats.not_taking is not None:  # no room for new entries: poll it later
            self.stats.deferred += 1
            self.progress.feed_done(0)
            return
        if self._gate.blocked(host):  # it asked us to wait: not even a conditional GET
            self.stats.deferred += 1
            self.progress.feed_done(0)
            return
        async with contextlib.AsyncExitStack() as memory:
            try:
                # the claim before the host's turn: a feed another process is polling
                # spends no slot and no start of the host's; room for the body once the
                # turn has come: a feed waiting for its host holds none
                async with self._gate.slot(
                    host,
                    origin=fetch.origin_of(feed.url),
                    first=lambda: self._on_lane(self._claim_feed, feed),
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
            except fetch.HostBlocked:  # it said 429/503 while this feed waited for its turn
                await self._on_lane(self.storage.release_feed, feed.id, self.owner)
                self.stats.deferred += 1
                self.progress.feed_done(0)
                return
            except fetch.FetchError as exc:
                hint = exc.retry_after
                if exc.host_busy:
                    hint = await self._host_refused(host, exc)
                if exc.status == 410:
                    reason = f"{exc}: the publisher removed this feed"
                    await self._on_lane(
                        self.storage.disable_feed, feed.id, reason, timestamps.to_iso(self.clock())
                    )
                    outcome = _FeedOutcome(error=f"{reason} (disabled)")
                else:
                    await self._on_lane(self._record_failure, feed, str(exc), hint)
                    outcome = _FeedOutcome(error=str(exc))
            else:
                await self._host_answered(host)
                try:
                    outcome = await self._on_lane(self._stage_feed, feed, response)
                except StorageFull as exc:
                    # the RAM disk is full and the card cannot take more: nothing of this
                    # poll is recorded (the feed is polled again later), no further feed
                    # is polled in this pass; extraction and the save go on
                    if self.stats.not_taking is None:
                        self.stats.not_taking = str(exc)
                        self._problem(str(exc))
                    self.stats.deferred += 1
                    self.progress.feed_done(0)
                    return
        self._count_feed(feed, outcome)

    def _count_feed(self, feed: Feed, outcome: _FeedOutcome) -> None:
        s = self.stats
        s.polled += 1
        s.not_modified += outcome.not_modified
        s.parsed += outcome.parsed
        s.entries_seen += outcome.seen
        s.entries_skipped += outcome.skipped
        s.candidates += outcome.candidates
        s.staged += outcome.staged
        s.revisions += outcome.revisions
        if outcome.error:
            s.feed_errors += 1
            self._problem(f"feed {feed.url}: {outcome.error}", feed.url)
        if outcome.note:
            self.progress.problem(f"feed {feed.url}: {outcome.note}", feed.url)
        self.progress.feed_done(outcome.staged)

    def _next_poll_at(
        self, feed: Feed, now: datetime, *, ok: bool, hint: timedelta | None = None
    ) -> str:
        poll = self.config.poll
        return decide.next_poll_at(
            feed,
            now,
            ok=ok,
            hint=hint,
            base=poll.interval,
            min_interval=poll.min_interval,
            max_interval=poll.max_interval,
            jitter=self.rng.uniform(-0.1, 0.1),
        )

    def _claim_feed(self, feed: Feed) -> bool:
        now = self.clock()
        until = timestamps.to_iso(now + self.config.poll.lease)
        # still due: on a shared database another poller may have polled it since we listed it
        return self.storage.claim_feed(
            feed.id, self.owner, timestamps.to_iso(now), until, self._due_before
        )

    def _record_failure(self, feed: Feed, error: str, hint: timedelta | None = None) -> None:
        now = self.clock()
        self.storage.record_poll_failure(
            feed.id,
            error,
            timestamps.to_iso(now),
            self._next_poll_at(feed, now, ok=False, hint=hint),
        )

    def _follow_redirect(self, feed: Feed, response: fetch.Response) -> str | None:
        """Runs on the lane: a feed that answered through permanent redirects moves (308 at
        once, 301 on the second poll in a row: decide.redirect). Returns a note."""
        moved_to = canonical_url(response.moved_to) if response.moved_to else None
        state = decide.redirect(
            feed.url, feed.redirect_to, feed.redirect_seen, moved_to, response.moved_by_308
        )
        if state == decide.RedirectState(None, feed.redirect_to, feed.redirect_seen):
            return None  # nothing new to write
        trouble = self.storage.record_redirect(feed.id, state)
        if trouble:
            return f"cannot follow its move: {trouble}; disabled"
        if state.move_to:
            how = "308" if response.moved_by_308 else "301, seen twice"
            return f"moved permanently to {state.move_to} ({how}): the feed now uses it"
        return None

    def _stage_feed(self, feed: Feed, response: fetch.Response) -> _FeedOutcome:
        """Runs on the lane: parse, decide, stage in one transaction."""
        fetched_at = self.clock()
        now = timestamps.to_iso(fetched_at)
        if response.not_modified:
            self.storage.record_not_modified(
                feed.id,
                response.etag,
                response.last_modified,
                now,
                self._next_poll_at(feed, fetched_at, ok=True, hint=response.max_age),
            )
            return _FeedOutcome(not_modified=True, note=self._follow_redirect(feed, response))
        try:
            parsed = parse_feed(response.body, response.url, fetched_at, response.content_type)
        except NotAFeed as exc:
            self._record_failure(feed, str(exc))
            return _FeedOutcome(error=str(exc))
        except Exception as exc:  # a parser bug on hostile input must not end the pass
            reason = f"cannot parse: {type(exc).__name__}: {exc}".splitlines()[0][:300]
            self._record_failure(feed, reason)
            return _FeedOutcome(error=reason)
        note = self._follow_redirect(feed, response)  # only now: it really is a feed
        chosen = decide.candidates(parsed.entries, feed.latest_published, self.config.poll.lookback)
        intent = StageIntent(
            feed_id=feed.id,
            polled_at=now,
            entries=chosen,
            newest_published=decide.newest_published(chosen),
            warning=parsed.warning,
            feed_title=parsed.title,
            etag=response.etag,
            last_modified=response.last_modified,
            next_poll_at=self._next_poll_at(
                feed, fetched_at, ok=True, hint=max(parsed.ttl or ZERO, response.max_age or ZERO)
            ),
            owner=self.owner,
            identity=feed.identity,
            window_start=timestamps.to_iso(fetched_at - self.config.identity.window),
            # rows this pass will not extract are left free for whoever extracts next
            lease_until=(
                timestamps.to_iso(fetched_at + self.config.extract.lease)
                if self.extract
                else NO_LEASE
            ),
        )
        result = self.storage.stage(intent)
        return _FeedOutcome(
            staged=len(result.created_ids),
            revisions=result.revisions,
            seen=len(parsed.entries) + parsed.skipped,
            skipped=parsed.skipped,
            candidates=len(chosen),
            parsed=True,
            note=note,
        )

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
        except fetch.HostBlocked:  # it said 429/503 while this one waited for its turn
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
            self._problem(
                f"article {job.url}: {error} (attempt {outcome.attempts}, given up)", job.url
            )
        else:
            self.stats.extract_failed += 1
            self._problem(
                f"article {job.url}: {error} (attempt {outcome.attempts}, "
                f"retried after {outcome.next_attempt_at})",
                job.url,
            )


def _unexpected(exc: BaseException) -> str:
    """A one-line reason for a failure no stage foresaw, fit for ``last_error``."""
    text = f"{exc}".strip().splitlines()[0][:300] if str(exc).strip() else ""
    return f"unexpected {type(exc).__name__}" + (f": {text}" if text else "")


class _SharedHosts:
    """fetch.SharedHosts through the pass's storage, on its lane: the host's turn in the
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

    async def give_back(self, host: str, slot: int) -> None:
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
