"""What the two flows of a pass share: the database lane, the hosts' politeness, the
HTTP clients, the counters.

A pass has two flows (feedsync/pipeline.py draws them): the feeds' polls
(feedsync/polling.py) and the article queue (feedsync/articles.py). Both talk to the
same database through one "lane" thread, ask the same
:class:`~feedsync.politeness.hosts.Hosts` when a request to a host may go (a host that
said 429/503 to a feed is left alone by its articles too), use the pass's HTTP clients
and add to one :class:`RunStats`. This module is that common ground, and nothing of
either flow; the politeness is its package's (feedsync/politeness/), built here from the
lane and the storage.

The lane: every storage call runs on one thread, in order, so the database connection
is used by one thread and the event loop never blocks on SQLite. Each storage method is
a whole transaction by itself, so no network I/O ever happens inside one.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import httpx

from feedsync import fetch
from feedsync.politeness.hosts import Hosts
from feedsync.records import RunStats

if TYPE_CHECKING:
    from feedsync.pass_plan import PassRuntime

P = ParamSpec("P")
T = TypeVar("T")


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
    set, the flows take no new work and give back what they hold. ``hosts``: the hosts'
    politeness, the one thing of it the flows hold (opened by the pass before its first
    request)."""

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
        self.clients: dict[str, httpx.AsyncClient] = {}  # while http_clients is open
        self._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="feedsync-lane")
        self.hosts = Hosts(
            config,
            self.on_lane,
            self.storage,
            owner=self.owner,
            clock=self.clock,
            problem=self.progress.problem,
        )

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
