"""One pass of feedsync: poll every enabled feed, stage what is new, extract it.

As a pipe::

    storage.feeds_to_poll | claims.FeedClaims | fetch.get | parse.parse_feed
      | decide.poll | storage.record_poll                     -- polling.FeedPolls
    then
    storage.claim_articles | fetch.get | extract.Extractor
      | storage.save_article (or decide.after_failure)        -- articles.ArticleQueue
    and, for a one-shot run, at the end
    storage.snapshot                                          -- the SD card's only writes

Each flow is a module of its own, drawn in full in its docstring: the feeds' polls
(feedsync/polling.py: one write per feed, whatever its outcome) and the article queue
(feedsync/articles.py: each page fetched once, extracted in worker processes). What they
share, and nothing else, is in feedsync/context.py: the database lane (every storage
call on one thread, in order; each a whole transaction, so no network I/O inside one),
the hosts' politeness (feedsync/politeness/), the HTTP clients and the counters. This module only
puts them in order, saves on the way for a long pass, and ends a pass cleanly when it
is stopped or broken.

A pass with nothing to do (:func:`has_work`: no feed due, no article to extract: what
cron's ``run --due`` every few minutes mostly finds) starts none of it: no event loop,
HTTP client or extraction worker, and their modules (asyncio, httpx, the flows) are not
even imported, which were most of such a run's cost (see :func:`run_pass`).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from feedsync import clock as clocks
from feedsync import timestamps
from feedsync.clock import horizon
from feedsync.records import RunStats
from feedsync.storage import CardReadOnly, Storage, StorageError, StorageFull, StorageUnavailable

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.fetch import Response
    from feedsync.guard import Guard
    from feedsync.progress import Progress


class Pass:
    """One pass over the feeds and the extraction queue."""

    def __init__(
        self,
        config: Config,
        storage: Storage,
        progress: Progress,
        *,
        # what the pass does
        due_only: bool = False,
        only: set[int] | None = None,
        prefetched: dict[int, tuple[Response, Guard]] | None = None,
        extract: bool = True,
        own_only: bool = False,
        snapshot: bool = False,
        save_every: timedelta | None = None,
        say_clock: bool = True,
        # what it runs in (feedsync.context.PassContext)
        stop: threading.Event | None = None,
        clock: Callable[[], datetime] = timestamps.now,
        owner: str | None = None,
        rng: random.Random | None = None,
    ):
        """Which feeds (``due_only``, ``only``) is the polls' to know
        (:class:`~feedsync.polling.FeedPolls`, as ``prefetched``); ``extract=False`` runs no
        article queue (stage only: the rows claimable by anyone at once); ``own_only``:
        the queue takes only the rows this pass staged (``run --feed``: that feed's new
        articles, not the whole queue's). ``stop``: when set, the pass
        stops taking new work, lets the transaction in progress finish, gives back the
        rows it holds and ends early. ``snapshot``: a save to the card at the end.
        ``save_every`` (the daemon's ``snapshot_interval``): a pass that runs longer
        saves to the card on its way, between feeds and between articles, so a long pass
        never holds back the save (the daemon's own save job waits for it).
        ``say_clock``: a clock that cannot be right is a problem line of the pass (the
        daemon says it once in its log instead)."""
        # The flows and what they run on (asyncio, httpx), imported by a pass that has
        # work: has_work() and an idle run need none of them (the module's docstring).
        from feedsync.articles import ArticleQueue
        from feedsync.context import PassContext
        from feedsync.polling import FeedPolls

        self.context = PassContext(
            config, storage, progress, clock=clock, owner=owner, stop=stop, rng=rng
        )
        self.polls = FeedPolls(
            self.context,
            due_only=due_only,
            only=only,
            for_extraction=extract,
            prefetched=prefetched,
        )
        self.articles = ArticleQueue(self.context, own_only=own_only) if extract else None
        self.take_snapshot = snapshot
        self.save_every = save_every
        self.say_clock = say_clock

    @property
    def owner(self) -> str:
        """The pass's identity on its leases."""
        return self.context.owner

    @property
    def stopping(self) -> bool:
        return self.context.stopping

    def run(self) -> RunStats:
        """The pass, then (``snapshot=True``) a snapshot. A failed snapshot is raised after
        the summary has been printed: the pass itself is done and recorded."""
        import asyncio

        c = self.context
        started = time.monotonic()
        ended_early = True
        broken: Exception | None = None  # what ended the pass (the database's own trouble)
        try:
            asyncio.run(self._run_until_stopped())
            ended_early = self.stopping
        except Exception as exc:  # the save below is still tried: what was done is kept
            broken = exc
        finally:
            if self.articles is not None:
                self.articles.close(kill=ended_early)
            c.close_lane()  # the transaction in progress finishes
            # Give back whatever this pass still holds: after a stop or an exception, the
            # claims in progress; after a whole pass, a row it staged for itself that its
            # claim skipped (on PostgreSQL, another poller had it locked that instant), so
            # nobody waits for its lease to end. After the lane is done: the connection
            # has one user at a time.
            with contextlib.suppress(StorageError):
                c.storage.release_leases(c.owner)
        c.stats.stopped = self.stopping
        failure = _save(c.storage, c.stats, c.problem) if self.take_snapshot else None
        c.progress.finish(c.stats, time.monotonic() - started)
        if broken is not None:
            raise broken
        if failure is not None:
            raise failure
        return c.stats

    async def _run_until_stopped(self) -> None:
        """The pass, cancelled when ``stop`` is set. Cancelling abandons network I/O; a
        storage call already running on the lane completes (run() waits for the lane)."""
        import asyncio

        work = asyncio.create_task(self._run())
        if self.context.stop is None:
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
        """The polls, then the article queue, over one lane, one politeness, one set of
        clients."""
        import asyncio

        c = self.context
        now = c.clock()
        started_at = timestamps.to_iso(now)
        await self._judge_clock(now)
        feeds = await self.polls.listed(started_at, now)
        await c.hosts.open(started_at, now)
        async with c.http_clients():
            saver = None
            if self.save_every is not None:
                every = max(self.save_every.total_seconds(), 1.0)
                saver = asyncio.create_task(self._keep_saving(every))
            try:
                await self.polls.poll_all(feeds, started_at, now)
                if self.articles is not None:
                    await self.articles.drain(due_before=started_at)
            finally:
                if saver is not None:
                    saver.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await saver

    async def _judge_clock(self, now: datetime) -> None:
        """Whether the pass's clock can be believed (feedsync/clock.py). If not, the
        articles it stores are marked (``storage.clock_suspect``): retention, on a clock
        it believes, takes its own time as their fetch time instead of this one. A clock
        that cannot be right at all (1970) is said (``say_clock``); one not synchronized
        yet is not, at every cron run: ``feedsync status`` says it."""
        c = self.context
        newest = await c.on_lane(c.storage.newest_poll)
        sync = await c.on_lane(clocks.system_synchronization)  # may run timedatectl
        verdict = clocks.judge(now, newest, sync)
        if not verdict.believed:
            await c.on_lane(c.storage.clock_suspect)
        if verdict.state == clocks.WRONG and self.say_clock:
            c.progress.problem(f"the clock cannot be right: {verdict.why}")

    async def _keep_saving(self, every: float) -> None:
        """Beside the pass: a save to the card every ``every`` seconds, on the lane
        between two transactions (the save of the live database is consistent at any
        of them). Its trouble is said, not raised: what is not saved stays in RAM for
        the next save."""
        import asyncio

        c = self.context
        while True:
            await asyncio.sleep(every)
            try:
                await c.on_lane(c.storage.snapshot)
            except StorageUnavailable:
                return
            except StorageError as exc:
                c.progress.problem(f"save during the pass: {exc}")


def _save(storage: Storage, stats: RunStats, problem: Callable[[str], None]) -> StorageError | None:
    """The save to the card at the end of a run, said in ``stats``; what to raise once
    the summary is out (the run itself is done and recorded)."""
    try:
        result = storage.snapshot()
        stats.snapshot = result.detail if result else None
    except StorageFull as exc:  # the card has no room: said, and lived through
        stats.snapshot = "not saved"
        problem(str(exc))
    except CardReadOnly as exc:  # the pass ran in RAM; nothing of it is kept
        stats.snapshot = "not saved: the card is read-only"
        return exc
    except StorageError as exc:
        stats.snapshot = "failed"
        return exc
    return None


def load_pass_modules() -> None:
    """Import now what a pass runs on: the flows, asyncio, httpx and the feed parser
    (fastfeedparser; feedparser's parts as documents need them). The daemon does this
    once, before it says it is ready: an install that cannot import them stops it at
    start, in one line, rather than failing every pass after a "started" and READY; and
    its first pass runs at the speed of the others (~0.1 s of CPU here, several times
    that on a Pi, paid before the first poll rather than during it). ``feedsync run``
    does not: cron's runs mostly find nothing due and need none of it."""
    from feedsync import articles, context, polling  # noqa: F401
    from feedsync.parse import fast

    fast.load()


def has_work(
    storage: Storage,
    config: Config,
    *,
    due_only: bool,
    extract: bool = True,
    clock: Callable[[], datetime] = timestamps.now,
) -> bool:
    """Whether a pass would find anything to do now: a feed to poll (``due_only``: one
    whose next poll time has come) or, when it extracts, an article to fetch (new, or
    failed and due for its retry, and not leased to a process at work), as the pass's
    claims would judge them (a lease or a retry time further ahead than the config lets
    one be was set by a clock ahead: it has come). One read."""
    from feedsync import decide

    moment = clock()
    now = timestamps.to_iso(moment)
    extracting = config.extract
    return storage.has_work(
        now if due_only else None,
        now if extract else None,
        now,
        lease_horizon=horizon(timestamps.to_iso(moment + extracting.lease)),
        retry_horizon=decide.retry_horizon(moment, extracting.retry_backoff),
    )


def run_pass(
    config: Config,
    storage: Storage,
    progress: Progress,
    *,
    due_only: bool = False,
    stop: threading.Event | None = None,
) -> RunStats:
    """One pass and a snapshot, synchronously: what ``feedsync run`` does.

    With nothing to do (:func:`has_work`), only the snapshot and the summary: cron's
    ``run --due`` every 5 minutes mostly finds no feed due, and the event loop, the HTTP
    clients and their imports were ~3/4 of its CPU (0.40 s here, seconds on a Pi 3)."""
    if not has_work(storage, config, due_only=due_only):
        started = time.monotonic()
        stats = RunStats()

        def problem(message: str) -> None:
            stats.errors.append(message)
            progress.problem(message)

        failure = _save(storage, stats, problem)
        progress.finish(stats, time.monotonic() - started)
        if failure is not None:
            raise failure
        return stats
    return Pass(config, storage, progress, snapshot=True, due_only=due_only, stop=stop).run()
