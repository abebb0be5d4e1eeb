"""A pass's hosts: the one interface the two flows ask when a request may go to its host.

Feed polls (feedsync/polling.py) and article fetches (feedsync/articles.py) ask the same
:class:`Hosts` for each request's turn (:meth:`Hosts.turn`), tell it what a host answered
(a 429/503 block, a good answer ending a backoff) and, for the polls, the hosts their
claims hold. Behind it, each part of host politeness in its own module of this package:

- ``gate.py``: when a request may go, in this process (per-host cap, spacing, 429/503
  blocks, unreachable hosts) and across pollers (``SharedHosts``);
- ``shared.py``: a request's turn in the database, through the pass's lane;
- ``holds.py``: the hosts a pass alone on its database holds and paces in memory;
- ``rules.py``: the pure rules (a block's length, a turn, a hold), storage's too;
- ``ticket.py``: the slots a feed poll's turn held, handed to its record (its HostNote);
- ``pacing.py``: ``HostPacing``, what the package asks of storage (defined here, so the
  package imports nothing of storage).

It is built from what it needs of the pass, not from the pass: the config, the lane
(``PassContext.on_lane``), the storage as its host-pacing role, the pass's owner, clock
and problem lines.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from feedsync import clock as clocks
from feedsync import fetch, logs, timestamps
from feedsync.canonical import host_of
from feedsync.config import Config
from feedsync.politeness import rules
from feedsync.politeness.gate import HostGate
from feedsync.politeness.holds import HostHolds
from feedsync.politeness.shared import Lane, StorageHosts
from feedsync.politeness.ticket import Ticket
from feedsync.records import HostWait
from feedsync.storage_errors import StorageError

if TYPE_CHECKING:
    from feedsync.politeness.pacing import HostPacing


class Hosts:
    """Host politeness for one pass (see the module). :meth:`open` before the first
    request."""

    def __init__(
        self,
        config: Config,
        lane: Lane,
        storage: HostPacing,
        *,
        owner: str,
        clock: Callable[[], datetime],
        problem: Callable[[str], None],
    ):
        self._config = config
        self._lane = lane
        self._storage = storage
        self._owner = owner
        self._clock = clock
        self._problem = problem
        self._gate = HostGate(1, 1)  # the pass's own, set up by open
        # the hosts this pass holds while alone on the database, paced in memory
        self._holds = HostHolds()
        self.hold_lease = min(config.poll.lease, rules.SLOT_LEASE).total_seconds()
        self._backoff: dict[str, int] = {}  # hosts in a 429/503 backoff: its count

    async def open(self, started_at: str, now: datetime) -> None:
        """The pass's host gate, shared with other processes through the database, and
        the 429/503 waits other passes left, in force from the start. A wait longer than
        any block lasts (``[fetch] max_retry_after``, a backoff's cap too) was written by
        a clock ahead of this one, or this one stepped back since: it is over."""
        poll, fetching = self._config.poll, self._config.fetch
        shared = StorageHosts(
            self._lane,
            self._storage,
            self._owner,
            slots=poll.per_host,
            delay=fetching.host_delay.total_seconds(),
            lease=self.hold_lease,
            holds=self._holds,
            release=self._release_holds,
            problem=self._problem,
        )
        self._gate = HostGate(poll.concurrency, poll.per_host, fetching.host_delay, shared=shared)
        waiting = await self._lane(self._storage.hosts_waiting, started_at)
        longest = fetching.max_retry_after + clocks.SLACK
        for host, (not_before, count) in waiting.items():
            self._backoff[host] = count
            wait = timestamps.from_iso(not_before) - now
            if timedelta(0) < wait <= longest:
                self._gate.block(host, wait.total_seconds())

    # ------------------------------------------------------------ a request's turn

    def blocked(self, host: str) -> bool:
        """Whether the host said 429/503 and its block is not over: ask it nothing."""
        return self._gate.blocked(host)

    @asynccontextmanager
    async def turn(
        self,
        url: str,
        *,
        first: Callable[[], Awaitable[bool]] | None = None,
        ready: Callable[[], Awaitable[object]] | None = None,
        ticket: Ticket | None = None,
    ) -> AsyncIterator[Ticket | None]:
        """The right to send one request for ``url`` to its host now, until the block
        ends (the gate's ``slot``: ``first``, ``ready`` and what it raises are its; the
        host and the origin known unreachable are the URL's, found here so that the
        flows hand over the URL and nothing derived from it). None instead when
        ``first`` said False (a feed another process is polling).

        ``ticket``: a feed poll's, where the shared slots its turn held are kept when the
        block ends, for its record to give back (``HostNote.slots``), or
        :meth:`give_back` if it writes none. Without one, they go back at once and the
        ticket yielded holds none."""
        host, origin = host_of(url), fetch.origin_of(url)
        own = ticket if ticket is not None else Ticket()
        async with self._gate.slot(
            host, first=first, ready=ready, origin=origin, ticket=ticket
        ) as go:
            yield own if go else None

    async def give_back(self, ticket: Ticket) -> None:
        """The slots still on ``ticket`` back, each in a transaction of its own: a poll
        whose record did not take them (it went otherwise)."""
        for host, slot in ticket.slots:
            with contextlib.suppress(StorageError):  # the slot lapses with its lease
                await self._lane(self._storage.host_done, host, self._owner, slot)
            ticket.handed_in(((host, slot),))

    # ------------------------------------------------------------ what a host answered

    def block(self, host: str, error: fetch.FetchError) -> tuple[timedelta, HostWait | None]:
        """429/503: leave the host alone (Retry-After, capped, or doubling), in this pass
        at once and, through the database, in every other process: the returned HostWait
        is to be written (None: nothing new to write). A refusal while a block is in force
        (requests in flight together) is part of that block, not a further one
        (rules.host_block)."""
        left = timedelta(seconds=self._gate.blocked_for(host))
        count = self._backoff.get(host, 0)
        block = rules.host_block(left, count, error.retry_after, self._config.fetch.max_retry_after)
        if block.backoff_count == count and block.wait <= left:
            return block.wait, None
        self._gate.block(host, block.wait.total_seconds())
        self._backoff[host] = block.backoff_count
        until = timestamps.to_iso(self._clock() + block.wait)
        return block.wait, HostWait(host, until, block.backoff_count, str(error))

    async def refused(self, host: str, error: fetch.FetchError) -> None:
        """A 429/503 outside a feed's poll: the block, written at once (a feed's goes
        with its poll)."""
        _, wait = self.block(host, error)
        if wait is not None:
            await self._lane(
                self._storage.host_wait,
                wait.host,
                wait.not_before,
                wait.backoff_count,
                wait.reason,
            )

    def unblocked(self, host: str) -> str | None:
        """A good answer ends the host's backoff (the host to clear in the database, or
        None), unless the host is blocked right now: then the answer is from a request
        sent before the refusal, and the refusal stands (found by
        tests/test_pipeline_fuzz.py: a 200 arriving after a 429 of the same moment erased
        the wait from the database, so the next pass asked again)."""
        if self._gate.blocked(host):
            return None
        return host if self._backoff.pop(host, None) is not None else None

    async def answered(self, host: str) -> None:
        """A good answer outside a feed's poll: the host's backoff ends at once (see
        :meth:`unblocked`)."""
        if self.unblocked(host) is not None:
            await self._lane(self._storage.host_clear, host)

    # ------------------------------------------------------------ held hosts

    def holding(self, host: str) -> str | None:
        """``host`` if this pass holds it now (a feed's record there then says whether
        another process wants it: ``HostNote.held``), else None."""
        return host if self._holds.holds(host) else None

    def to_hold(self, hosts: Iterable[str]) -> list[str]:
        """The hosts a claim transaction should try to hold (holds.HostHolds.wanted)."""
        return self._holds.wanted(hosts)

    async def claimed(self, held: Sequence[tuple[str, float]], others: bool) -> None:
        """A claim transaction held ``held`` (each with the seconds until its next start,
        the pace the database had for it) and saw ``others`` at work or not."""
        for host, ahead in held:
            self._gate.pace_from(host, ahead)
        await self._release_holds(self._holds.granted(host for host, _ in held))
        if others:
            await self.company_came()

    async def company_came(self) -> None:
        """Another process is at work on the database: the pass holds nothing more, and
        gives back at once every held host with no request in flight (holds.HostHolds)."""
        if not self._holds.company:
            await self._release_holds(self._holds.join_company())

    async def keep_holds(self) -> None:
        """While the polls run: the held hosts' lease renewed every third of it, in one
        transaction that also says whether company has come (then nothing is held).
        Runs until company comes, or until cancelled."""
        while not self._holds.company:
            await asyncio.sleep(self.hold_lease / 3)
            if not self._holds.held:
                continue
            try:
                others = await self._lane(
                    self._storage.host_holds_keep,
                    self._owner,
                    timestamps.to_iso(self._clock()),
                    self.hold_lease,
                )
            except StorageError as exc:
                # politeness, not data: should a hold lapse, another poller may send
                # to its host one request early. The pass goes on.
                self._problem(f"held hosts: their lease was not renewed: {exc}")
                continue
            if others:
                await self.company_came()

    async def end(self) -> None:
        """The polls are over: every held host given back."""
        await self._release_holds(self._holds.end())

    async def _release_holds(self, hosts: list[str]) -> None:
        """Give back held hosts, each with its next start as this process paced it."""
        if not hosts:
            return
        aheads = {host: self._gate.pace_ahead(host) for host in hosts}
        self._holds.released(hosts)
        try:
            await self._lane(self._storage.host_holds_release, self._owner, aheads)
        except StorageError as exc:  # the holds lapse with their lease; the pass goes on
            logs.LOGGER.debug("hosts %s not released: %s", ", ".join(hosts), exc)
