"""One pass of feedsync: poll every enabled feed, stage what is new, extract it.

The pass is drawn as a pipe once, in docs/architecture.md ("One pass"), each stage with
its module; in short: the feeds' polls (storage.feeds_to_poll | claims | politeness turn
| fetch.get | parse | decide.poll | storage.record_polls), then the article queue
(storage.claim_articles | politeness turn | fetch.get | extract | storage.save_article),
and for a one-shot run a save to the card at the end (storage.save: the SD card's only
writes).

Each flow is a module of its own: the feeds' polls
(feedsync/polling.py: one write per feed, whatever its outcome) and the article queue
(feedsync/articles.py: each page fetched once, extracted in worker processes). What they
share, and nothing else, is in feedsync/context.py: the database lane (every storage
call on one thread, in order; each a whole transaction, so no network I/O inside one),
the hosts' politeness (feedsync/politeness/), the HTTP clients and the counters. This module only
puts them in order, saves on the way for a long pass, and ends a pass cleanly when it
is stopped or broken. What a pass does and what it runs with come in two records
(feedsync/pass_plan.py), ``Pass(plan, runtime)``: each command says the one and hands
over the other.

A pass with nothing to do (:func:`has_work`: no feed due, no article to extract: what
cron's ``run --due`` every few minutes mostly finds) starts none of it: no event loop,
HTTP client or extraction worker, and their modules (asyncio, httpx, the flows) are not
even imported, which were most of such a run's cost (see :func:`run_pass`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from feedsync import clock as clocks
from feedsync import logs, timestamps
from feedsync.clock import horizon
from feedsync.records import RunStats
from feedsync.storage import CardReadOnly, Storage, StorageError, StorageFull, StorageUnavailable

if TYPE_CHECKING:
    from feedsync.pass_plan import PassPlan, PassRuntime


class Pass:
    """One pass over the feeds and the extraction queue: what it does is its ``plan``,
    what it does it with its ``runtime`` (feedsync/pass_plan.py)."""

    def __init__(self, plan: PassPlan, runtime: PassRuntime):
        """The flows are built here, each given the shared context (made from the
        runtime) and the plan, of which it reads its own part; the pass keeps the plan
        for what is its own: the saves and its word on the clock."""
        # The flows and what they run on (asyncio, httpx), imported by a pass that has
        # work: has_work() and an idle run need none of them (the module's docstring).
        from feedsync.articles import ArticleQueue
        from feedsync.context import PassContext
        from feedsync.polling import FeedPolls

        self.plan = plan
        self.context = PassContext(runtime)
        self.polls = FeedPolls(self.context, plan)
        self.articles = ArticleQueue(self.context, plan) if plan.extract else None

    @property
    def owner(self) -> str:
        """The pass's identity on its leases."""
        return self.context.owner

    @property
    def stopping(self) -> bool:
        return self.context.stopping

    def run(self) -> RunStats:
        """The pass, then (the plan's ``save``) a save to the card. A failed save is
        raised after the summary has been printed: the pass itself is done and recorded."""
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
        failure = _save(c.storage, c.stats, c.problem) if self.plan.save else None
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
            if self.plan.save_every is not None:
                every = max(self.plan.save_every.total_seconds(), 1.0)
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
        if verdict.state == clocks.WRONG and self.plan.say_clock:
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
                await c.on_lane(c.storage.save)
            except StorageUnavailable:
                return
            except CardReadOnly as exc:
                # The daemon's own save job says a read-only card once while it lasts
                # and tries again at each interval; said here too, every interval of a
                # long pass would repeat it (found under load: a 3 s pass, a 1 s
                # interval, the line twice). The pass saves no more on its way.
                logs.LOGGER.debug("save during the pass: %s", exc)
                return
            except StorageError as exc:
                c.progress.problem(f"save during the pass: {exc}")


def _save(storage: Storage, stats: RunStats, problem: Callable[[str], None]) -> StorageError | None:
    """The save to the card at the end of a run, said in ``stats``; what to raise once
    the summary is out (the run itself is done and recorded)."""
    try:
        result = storage.save()
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


def has_work(plan: PassPlan, runtime: PassRuntime) -> bool:
    """Whether the pass ``plan`` asks for would find anything to do now: a feed to poll
    (``due_only``: one whose next poll time has come) or, when it extracts, an article to
    fetch (new, or failed and due for its retry, and not leased to a process at work), as
    the pass's claims would judge them (a lease or a retry time further ahead than the
    config lets one be was set by a clock ahead: it has come). One read. A plan's
    ``only`` is not looked at: the feeds it names are enabled ones, so there is work."""
    from feedsync import decide

    moment = runtime.clock()
    now = timestamps.to_iso(moment)
    extracting = runtime.config.extract
    return runtime.storage.has_work(
        now if plan.due_only else None,
        now if plan.extract else None,
        now,
        lease_horizon=horizon(timestamps.to_iso(moment + extracting.lease)),
        retry_horizon=decide.retry_horizon(moment, extracting.retry_backoff),
    )


def run_pass(plan: PassPlan, runtime: PassRuntime) -> RunStats:
    """The pass ``plan`` asks for, synchronously: what ``feedsync run`` does.

    With nothing to do (:func:`has_work`), only the save (the plan's ``save``) and the
    summary: cron's ``run --due`` every 5 minutes mostly finds no feed due, and the event
    loop, the HTTP clients and their imports were ~3/4 of its CPU (0.40 s here, seconds on
    a Pi 3)."""
    if not has_work(plan, runtime):
        started = time.monotonic()
        stats = RunStats()
        progress = runtime.progress

        def problem(message: str) -> None:
            stats.errors.append(message)
            progress.problem(message)

        failure = _save(runtime.storage, stats, problem) if plan.save else None
        progress.finish(stats, time.monotonic() - started)
        if failure is not None:
            raise failure
        return stats
    return Pass(plan, runtime).run()
