"""Host politeness: when a request may go to its host, for feed polls and article fetches
alike.

:class:`HostGate` bounds concurrent requests per host (``[poll] per_host``) and overall
(``[poll] concurrency``), spaces a host's starts by ``[fetch] host_delay``, keeps off a host
that said 429/503 until its block ends, and stops asking a host that could not be reached
in this pass. In this process it is semaphores and a clock; across every poller on the
database it takes each request's turn through :class:`SharedHosts` (storage calls on
the pass's lane: feedsync/politeness/shared.py). A process alone on its database holds
the hosts it polls (feedsync/politeness/holds.py) and paces them in memory. No network
I/O here: fetch.py sends. The flows do not use the gate directly: they ask
feedsync/politeness/hosts.py.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Protocol

from feedsync.fetch import FetchError
from feedsync.politeness.ticket import Ticket


class SharedHosts(Protocol):
    """The hosts' politeness shared with every process on the database (the pipeline's
    storage calls, run off the event loop): ``take`` a host's turn, a concurrency slot and
    the seconds to wait before starting (None: every slot is in use), ``give_back`` the
    slot once the request is over. A slot is leased for a short while, so that a poller
    that dies frees its slots soon; ``renew`` it every ``renew_every`` seconds while
    the request runs."""

    renew_every: float

    async def take(self, host: str) -> tuple[int, float] | None: ...

    async def renew(self, host: str, slot: int) -> None: ...

    async def give_back(self, host: str, slot: int) -> None: ...

    def go_local(self, host: str) -> bool:
        """True: this process holds ``host`` (feedsync/politeness/holds.py) and paces it in
        memory;
        the request is counted in flight until :meth:`left_local`."""
        ...

    def still_local(self, host: str) -> bool:
        """Whether a request that went in memory (:meth:`go_local`) and waited there for
        its start may still go that way: False once another process came meanwhile."""
        ...

    async def left_local(self, host: str) -> None: ...


# Asking again for a turn while another process holds every slot of a host: from this
# wait, doubling, up to the last (each ask is one short write transaction).
SHARED_RETRY_S = (0.05, 0.5)
# Sending this much after a shared turn's start is late (see HostGate._turn_and_total),
# and how many times a late turn is taken again before going ahead anyway.
LATE_S = 0.02
LATE_RETRIES = 3


class HostBlocked(Exception):
    """Raised by :meth:`HostGate.slot` instead of a go: the host said 429/503 while this
    request waited for its turn. Nothing was sent; the feed or article waits for the end
    of the block, no attempt spent."""


class HostGate:
    """Per host: at most ``per_host`` requests at once, ``delay`` between two starts,
    nothing at all before ``not_before`` (a host that said 429/503), and nothing more once
    it could not be reached in this pass. ``total`` requests in flight overall.

    A request queues for its host first (the host's slot and turn) and only then for one
    of the ``total`` slots, so a request waiting for its host holds nothing other hosts
    need: one busy host (thirty feeds, a ``delay`` apart) does not keep the others
    waiting. Whether the host may still be asked is checked once the turn has come, right
    before sending: a 429/503, or a failure to reach the host, that another request met
    meanwhile settles every request still queued for it, with no turn and no network
    spent on them (a block: :class:`HostBlocked`; an unreachable host: the
    :class:`FetchError` it gave, marked "not tried").

    In this process the semaphores are the fast local layer. With ``shared``, the cap and
    the delay also hold across processes: each request takes the host's turn from the
    database (a slot of ``per_host``, a start spaced ``delay`` from every other poller's)
    and sleeps until its start outside any transaction; the database's reservation then
    replaces the local spacing. A process alone on its database holds the hosts it polls
    (feedsync/politeness/holds.py): for those, the local layer is all there is."""

    def __init__(
        self,
        total: int,
        per_host: int,
        delay: timedelta = timedelta(0),
        not_before: dict[str, float] | None = None,
        shared: SharedHosts | None = None,
    ):
        self._total = asyncio.Semaphore(total)
        # No more of a host's requests past this point than can be sent at once: with a
        # shared database each of them holds one of the host's ``per_host`` slots there
        # while it waits for a global one, and slots held by requests that cannot go
        # yet are slots refused to the other pollers (asking again costs them a write).
        local = min(per_host, total)
        self._per_host: defaultdict[str, asyncio.Semaphore] = defaultdict(
            lambda: asyncio.Semaphore(local)
        )
        self._delay = delay.total_seconds()
        self._next_start: dict[str, float] = {}
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._shared = shared
        # monotonic times before which a host must not be asked
        self.not_before: dict[str, float] = dict(not_before or {})
        # hosts that could not be reached in this pass: the reason
        self.unreachable: dict[str, str] = {}

    def blocked(self, host: str) -> bool:
        return self.blocked_for(host) > 0

    def blocked_for(self, host: str) -> float:
        """Seconds left of the host's block (zero or less: none)."""
        return self.not_before.get(host, 0.0) - time.monotonic()

    def block(self, host: str, seconds: float) -> None:
        self.not_before[host] = max(self.not_before.get(host, 0.0), time.monotonic() + seconds)

    def _may_send(self, host: str, origin: str | None) -> None:
        """Raise instead of letting a request go to a host that said 429/503 or to an
        origin (host and port) that could not be reached in this pass."""
        if self.blocked(host):
            raise HostBlocked(host)
        if origin and origin in self.unreachable:
            raise FetchError(
                f"{self.unreachable[origin]} (not tried: {origin} could not be reached "
                "earlier in this pass)"
            )

    @asynccontextmanager
    async def slot(
        self,
        host: str,
        first: Callable[[], Awaitable[bool]] | None = None,
        ready: Callable[[], Awaitable[object]] | None = None,
        origin: str | None = None,
        ticket: Ticket | None = None,
    ) -> AsyncIterator[bool]:
        """The right to start one request to ``host`` now, until the block ends.

        ``first``: run once the host's local slot is ours, before the turn is taken; when
        it says False (a feed another process is polling) the block gets False and no
        turn is spent. ``ready``: what else the request needs before it goes (a feed: room
        in memory for its body, the caller's to give back), awaited with the global slot
        once the turn has come: waiting for the host holds none of it either.
        ``origin``: the request's :func:`origin_of`, for what is known unreachable.
        ``ticket``: where the shared slots the turn held go when the block ends, instead
        of back to the database at once (a feed poll's: they go with its record,
        feedsync/politeness/ticket.py).

        Raises :class:`HostBlocked`, or the :class:`FetchError` of an unreachable host,
        instead of a go (see the class); a :class:`FetchError` from the block that says
        the host is unreachable settles the host's other requests of the pass."""
        async with self._per_host[host]:
            if self.blocked(host):  # blocked while queued: not even `first`
                raise HostBlocked(host)
            if first is not None and not await first():
                yield False
                return
            self._may_send(host, origin)
            async with self._turn_and_total(host, ready, ticket):
                # the turn took time: what other requests met meanwhile
                self._may_send(host, origin)
                try:
                    yield True
                except FetchError as exc:
                    if exc.unreachable and exc.unreachable not in self.unreachable:
                        self.unreachable[exc.unreachable] = str(exc)
                    raise

    @asynccontextmanager
    async def _turn_and_total(
        self, host: str, ready: Callable[[], Awaitable[object]] | None, ticket: Ticket | None
    ) -> AsyncIterator[None]:
        """The host's turn, waited for, then a slot of ``total`` (and ``ready``), held
        until the block ends. The global slot comes last: waiting for a turn holds none.

        Shared: a turn from the database. A request that gets to send late (a busy
        machine, its event loop held up, every global slot in use) would start closer
        than ``delay`` to the next poller's start, reserved meanwhile: it gives the turn
        back and takes a new one, keeping its global slot. A host this process holds
        whole (feedsync/politeness/holds.py) is paced in memory, as without a database to
        share."""
        shared = self._shared
        if shared is not None and not shared.go_local(host):
            holding = False
            try:
                for attempt in range(LATE_RETRIES + 1):
                    turn = await self._turn(shared, host)
                    if turn is None:
                        break  # the host became this process's to hold: paced below
                    number, wait = turn
                    async with self._leased(shared, host, number, ticket):
                        due = time.monotonic() + max(wait, 0.0)
                        if wait > 0:
                            await asyncio.sleep(wait)
                        if not holding:
                            await self._total.acquire()
                            holding = True
                            if ready is not None:
                                await ready()
                        late = time.monotonic() - due > LATE_S
                        if not self._delay or not late or attempt == LATE_RETRIES:
                            yield
                            return
            finally:
                if holding:
                    self._total.release()
        # in memory: no database shared, or a host this process holds
        try:
            went = await self._local_turn(
                host, ready, still=None if shared is None else shared.still_local
            )
            if went:
                try:
                    yield
                finally:
                    self._total.release()
        finally:
            if shared is not None:
                await shared.left_local(host)
        if not went:
            # Another process came while this request waited its start in memory: the
            # hold ends with the requests already sent, not with every one queued (a
            # pass that began alone may have dozens), so the newcomer waits one request
            # long, not the whole queue. This one takes its turn from the database.
            async with self._turn_and_total(host, ready, ticket):
                yield

    def pace_from(self, host: str, ahead: float) -> None:
        """The host's next start in this process no earlier than ``ahead`` seconds from
        now (a hold's start: the pace the database had for it)."""
        start = time.monotonic() + max(ahead, 0.0)
        self._next_start[host] = max(self._next_start.get(host, 0.0), start)

    def pace_ahead(self, host: str) -> float:
        """Seconds until the host's next start may go, by this process's pace."""
        return self._next_start.get(host, 0.0) - time.monotonic()

    async def _local_turn(
        self,
        host: str,
        ready: Callable[[], Awaitable[object]] | None,
        still: Callable[[str], bool] | None = None,
    ) -> bool:
        """This process's own spacing of the host's starts, then a slot of ``total`` and
        ``ready``; the next start is counted from the moment this one may really go.
        ``still``: asked once the slot is ours, whether the request may still go in
        memory; if not, it gives the slot back and returns False, ``ready`` not awaited
        and no start counted."""
        async with self._locks[host]:
            wait = self._next_start.get(host, 0.0) - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await self._total.acquire()
            if still is not None and not still(host):
                self._total.release()
                return False
            try:
                if ready is not None:
                    await ready()
            except BaseException:
                self._total.release()
                raise
            if self._delay:
                self._next_start[host] = time.monotonic() + self._delay
            return True

    @staticmethod
    @asynccontextmanager
    async def _leased(
        shared: SharedHosts, host: str, number: int, ticket: Ticket | None
    ) -> AsyncIterator[None]:
        """The host's shared slot ``number``, its lease kept running until the block ends,
        then given back, or kept on the ``ticket`` for the caller to give back. Most
        requests end long before the first renewal is due: a timer costs them less than a
        task each; only a slow one gets the renewing task."""
        keeper: list[asyncio.Task[None]] = []
        timer = asyncio.get_running_loop().call_later(
            shared.renew_every,
            lambda: keeper.append(asyncio.create_task(HostGate._keep(shared, host, number))),
        )
        try:
            yield
        finally:
            timer.cancel()
            for task in keeper:
                task.cancel()
            if keeper:
                await asyncio.wait(keeper)
            if ticket is not None:
                ticket.took(host, number)
            else:
                await shared.give_back(host, number)

    @staticmethod
    async def _keep(shared: SharedHosts, host: str, number: int) -> None:
        """The slot's lease kept running while a slow request does: renewed now (the
        timer that started this said it is due), then every ``renew_every``."""
        while True:
            await shared.renew(host, number)
            await asyncio.sleep(shared.renew_every)

    @staticmethod
    async def _turn(shared: SharedHosts, host: str) -> tuple[int, float] | None:
        """A turn from the database, asked for again while refused; None once this
        process holds the host meanwhile (then it is paced in memory)."""
        pause, longest = SHARED_RETRY_S
        while (turn := await shared.take(host)) is None:
            await asyncio.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 2, longest)
            if shared.go_local(host):
                return None
        return turn
