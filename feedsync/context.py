"""What the two flows of a pass share: the database lane, the host gate, the HTTP
clients, the counters.

A pass has two flows (feedsync/pipeline.py draws them): the feeds' polls
(feedsync/polling.py) and the article queue (feedsync/articles.py). Both talk to the
same database through one "lane" thread, ask the same :class:`~feedsync.hosts.HostGate`
when a request to a host may go (a host that said 429/503 to a feed is left alone by
its articles too), use the pass's HTTP clients and add to one :class:`RunStats`. This
module is that common ground, and nothing of either flow.

The lane: every storage call runs on one thread, in order, so the database connection
is used by one thread and the event loop never blocks on SQLite. Each storage method is
a whole transaction by itself, so no network I/O ever happens inside one.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import random
import socket
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import httpx

from feedsync import clock, fetch, host_rules, logs, timestamps
from feedsync.group_commit import GroupCommit
from feedsync.holds import HostHolds
from feedsync.hosts import HostGate
from feedsync.records import HostWait, RunStats
from feedsync.storage import StorageError, StorageUnavailable

if TYPE_CHECKING:
    from feedsync.pass_plan import PassRuntime

P = ParamSpec("P")
T = TypeVar("T")

# A feed poll's shared host slots, given back by its record_poll rather than by a
# transaction of their own (StorageHosts.give_back): set per feed task by polling.
HELD_SLOTS: contextvars.ContextVar[list[tuple[str, int]] | None] = contextvars.ContextVar(
    "feedsync_held_slots", default=None
)


def new_owner() -> str:
    """An identity for leases, unique across hosts, processes and passes."""
    # os.urandom is what secrets.token_hex reads; importing secrets loads hmac and
    # hashlib (OpenSSL, ~7 ms of every start, a cron run's included)
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def unexpected(exc: BaseException) -> str:
    """A one-line reason for a failure no stage foresaw, fit for ``last_error``."""
    text = f"{exc}".strip().splitlines()[0][:300] if str(exc).strip() else ""
    return f"unexpected {type(exc).__name__}" + (f": {text}" if text else "")


class PassContext:
    """One pass's shared ground (see the module), built from what the pass runs with
    (feedsync/pass_plan.py): what it is asked to do is the flows' own. ``stop``: when
    set, the flows take no new work and give back what they hold."""

    def __init__(self, runtime: PassRuntime):
        config = runtime.config
        self.config = config
        self.storage = runtime.storage
        self.progress = runtime.progress
        self.clock = runtime.clock
        self.owner = runtime.owner or new_owner()
        self.stop = runtime.stop
        self.rng = runtime.rng or random.Random()
        self.stats = RunStats()
        self.gate = HostGate(1, 1)  # the pass's own, set up by open_gate
        self.clients: dict[str, httpx.AsyncClient] = {}  # while http_clients is open
        # the hosts this pass holds while alone on the database, paced in memory
        self.holds = HostHolds()
        self.hold_lease = min(config.poll.lease, host_rules.SLOT_LEASE).total_seconds()
        self._host_backoff: dict[str, int] = {}  # hosts in a 429/503 backoff: its count
        self._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="feedsync-lane")

    async def on_lane(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn`` (a storage call: one transaction) on the lane, awaited."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._lane, lambda: fn(*args, **kwargs))

    def close_lane(self) -> None:
        """Wait for the transaction in progress; after this the lane takes no more."""
        self._lane.shutdown(wait=True)

    def problem(self, message: str, url: str | None = None) -> None:
        self.stats.errors.append(message)
        self.progress.problem(message, url)

    @property
    def stopping(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    # ------------------------------------------------------------ HTTP

    @asynccontextmanager
    async def http_clients(self) -> AsyncIterator[None]:
        """The pass's clients, open while the flows run, one for feeds and one for
        pages, each with its own connections; where a request may connect is its own
        guard's (feedsync/guard.py), not the client's."""
        poll, fetching = self.config.poll, self.config.fetch
        timeout = poll.timeout.total_seconds()

        await fetch.warm_up()
        async with (
            fetch.make_client(timeout, poll.concurrency, agent=fetching.user_agent) as feeds_client,
            fetch.make_client(timeout, poll.concurrency, agent=fetching.user_agent) as pages,
        ):
            self.clients = {"feeds": feeds_client, "pages": pages}
            try:
                yield
            finally:
                self.clients = {}

    # ------------------------------------------------------------ hosts

    async def open_gate(self, started_at: str, now: datetime) -> None:
        """The pass's host gate, shared with other processes through the database, and
        the 429/503 waits other passes left, in force from the start. A wait longer than
        any block lasts (``[fetch] max_retry_after``, a backoff's cap too) was written by
        a clock ahead of this one, or this one stepped back since: it is over."""
        poll = self.config.poll
        self.gate = HostGate(
            poll.concurrency,
            poll.per_host,
            self.config.fetch.host_delay,
            shared=StorageHosts(self),
        )
        waiting = await self.on_lane(self.storage.hosts_waiting, started_at)
        longest = self.config.fetch.max_retry_after + clock.SLACK
        for host, (not_before, count) in waiting.items():
            self._host_backoff[host] = count
            wait = timestamps.from_iso(not_before) - now
            if timedelta(0) < wait <= longest:
                self.gate.block(host, wait.total_seconds())

    def host_block(self, host: str, error: fetch.FetchError) -> tuple[timedelta, HostWait | None]:
        """429/503: leave the host alone (Retry-After, capped, or doubling), in this pass
        at once and, through the database, in every other process: the returned HostWait
        is to be written (None: nothing new to write). A refusal while a block is in force
        (requests in flight together) is part of that block, not a further one
        (host_rules.host_block)."""
        left = timedelta(seconds=self.gate.blocked_for(host))
        count = self._host_backoff.get(host, 0)
        block = host_rules.host_block(
            left, count, error.retry_after, self.config.fetch.max_retry_after
        )
        if block.backoff_count == count and block.wait <= left:
            return block.wait, None
        self.gate.block(host, block.wait.total_seconds())
        self._host_backoff[host] = block.backoff_count
        until = timestamps.to_iso(self.clock() + block.wait)
        return block.wait, HostWait(host, until, block.backoff_count, str(error))

    async def host_refused(self, host: str, error: fetch.FetchError) -> None:
        """A 429/503 outside a feed's poll: the block, written at once (a feed's goes
        with its poll)."""
        _, wait = self.host_block(host, error)
        if wait is not None:
            await self.on_lane(
                self.storage.host_wait, wait.host, wait.not_before, wait.backoff_count, wait.reason
            )

    def host_unblocked(self, host: str) -> str | None:
        """A good answer ends the host's backoff (the host to clear in the database, or
        None), unless the host is blocked right now: then the answer is from a request
        sent before the refusal, and the refusal stands (found by
        tests/test_pipeline_fuzz.py: a 200 arriving after a 429 of the same moment erased
        the wait from the database, so the next pass asked again)."""
        if self.gate.blocked(host):
            return None
        return host if self._host_backoff.pop(host, None) is not None else None

    async def host_answered(self, host: str) -> None:
        """A good answer outside a feed's poll: the host's backoff ends at once (see
        host_unblocked)."""
        if self.host_unblocked(host) is not None:
            await self.on_lane(self.storage.host_clear, host)

    async def company_came(self) -> None:
        """Another process is at work on the database: the pass holds nothing more, and
        gives back at once every held host with no request in flight (holds.HostHolds)."""
        if not self.holds.company:
            await self.release_holds(self.holds.join_company())

    async def release_holds(self, hosts: list[str]) -> None:
        """Give back held hosts, each with its next start as this process paced it."""
        if not hosts:
            return
        aheads = {host: self.gate.pace_ahead(host) for host in hosts}
        self.holds.released(hosts)
        try:
            await self.on_lane(self.storage.host_holds_release, self.owner, aheads)
        except StorageError as exc:  # the holds lapse with their lease; the pass goes on
            logs.LOGGER.debug("hosts %s not released: %s", ", ".join(hosts), exc)


class StorageHosts:
    """hosts.SharedHosts through the pass's storage, on its lane: the host's turn in the
    database. Its slot is leased for ``[poll] lease`` but at most host_rules.SLOT_LEASE, renewed
    while the request runs: a poller that dies holds a host's slot no longer than that
    (a request may last ``[poll] timeout``, far too long to block the host for)."""

    def __init__(self, context: PassContext):
        self._context = context
        poll = context.config.poll
        self._slots = poll.per_host
        self._delay = context.config.fetch.host_delay.total_seconds()
        self._lease = min(poll.lease, host_rules.SLOT_LEASE).total_seconds()
        self.renew_every = self._lease / 3
        # with company every request takes its turn here: the turns asked for while the
        # lane is busy are taken in its next transaction together (feedsync/group_commit.py)
        self._turns: GroupCommit[str, tuple[int, float] | None] = GroupCommit(
            self._take_many, whole=(StorageUnavailable,)
        )

    async def take(self, host: str) -> tuple[int, float] | None:
        return await self._turns(host)

    async def _take_many(self, hosts: list[str]) -> list[tuple[int, float] | None]:
        c = self._context
        return await c.on_lane(
            c.storage.host_turns, hosts, c.owner, self._slots, self._delay, self._lease
        )

    async def renew(self, host: str, slot: int) -> None:
        c = self._context
        try:
            await c.on_lane(c.storage.host_renew, host, c.owner, slot, self._lease)
        except StorageError as exc:
            # Politeness, not data: should the lease lapse meanwhile, another poller may
            # send to this host one request early. The pass goes on.
            c.progress.problem(f"host {host}: its slot's lease was not renewed: {exc}")

    def go_local(self, host: str) -> bool:
        return self._context.holds.go_local(host)

    def still_local(self, host: str) -> bool:
        return self._context.holds.still_local(host)

    async def left_local(self, host: str) -> None:
        c = self._context
        if c.holds.left_local(host):
            await c.release_holds([host])

    async def give_back(self, host: str, slot: int) -> None:
        """A feed poll's slot goes back with its record (one write, not two); an
        article's, or one outside a feed's poll, at once."""
        held = HELD_SLOTS.get()
        if held is not None:
            held.append((host, slot))
            return
        c = self._context
        await c.on_lane(c.storage.host_done, host, c.owner, slot)
