"""Which feeds a pass takes, and when: claims in batches, host by host, ahead of the turn.

A feed is claimed before it is polled, so another process (the daemon, a manual run,
cron, another poller on PostgreSQL) skips it meanwhile. One write transaction per feed
for that would double what a steady-state pass writes (every feed 304: one record per
feed), so claims are batched two ways:

- **Ahead, by host.** When a feed's turn to be claimed comes (its host's slot is free),
  the next feeds of the same host are claimed with it: they will be polled one after the
  other, at the host's pace, soon enough for their claim (``[poll] lease``) to hold.
- **Together.** Every feed that asks while a claim transaction is running is claimed by
  the next one: at the start of a pass, the first feed of every host in one transaction.

The same transaction says whether another process is at work on the database
(:meth:`feedsync.storage.Storage.claim_feeds`): with company, a pass claims fewer feeds
ahead, so that pollers share the work.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

from feedsync.canonical import host_of
from feedsync.records import Feed, FeedClaim

# Claimed ahead of a host's turn, at most: alone, and with other processes at work.
AHEAD_ALONE = 64
AHEAD_SHARED = 4
# The first claim of a pass takes at most this many feeds of a host, and each next one
# twice as many as the one before, up to the cap: a pass that finds itself alone claims
# in a few big batches, but one that started together with other pollers (it cannot
# know at its first claim) has not taken a long run of feeds that it alone then polls
# while the others, out of feeds, wait for it.
FIRST_AHEAD = 8


def ahead_for(
    lease: timedelta, host_delay: timedelta, per_host: int, concurrency: int, *, alone: bool
) -> int:
    """How many of a host's feeds one claim takes: never so many that the last one's
    claim could lapse before the host's pace reaches it (half the lease, to spare). With
    company, no more than the pass can poll at once (``per_host`` is every poller's
    together), so that the last feeds of a round are not queued behind one poller."""
    cap = AHEAD_ALONE if alone else max(AHEAD_SHARED, min(per_host, concurrency))
    delay = host_delay.total_seconds()
    if delay <= 0:
        return cap
    reachable = int(lease.total_seconds() / 2 / delay) * per_host
    return max(1, min(cap, reachable))


class FeedClaims:
    """The listed feeds of one pass, claimed on demand in batches (see the module)."""

    def __init__(
        self,
        feeds: Sequence[Feed],
        claim: Callable[[list[int]], Awaitable[FeedClaim]],
        ahead: Callable[[bool], int],
    ):
        """``claim``: one storage transaction for the ids (``Storage.claim_feeds`` on the
        lane). ``ahead(alone)``: how many of a host's feeds to claim at once."""
        self._claim = claim
        self._ahead = ahead
        self._queues: defaultdict[str, deque[int]] = defaultdict(deque)
        for feed in feeds:
            self._queues[host_of(feed.url)].append(feed.id)
        self._held: set[int] = set()  # claimed, not yet polled
        self._refused: set[int] = set()  # another process has it, or it is no longer due
        self._asked: dict[int, str] = {}  # waiting for the next claim transaction: host
        self._lock = asyncio.Lock()
        self.alone = False  # until a claim says so: the safe assumption
        self._ramp = FIRST_AHEAD  # the most of a host's feeds the next claim takes

    async def take(self, feed: Feed) -> bool:
        """Whether ``feed`` is ours to poll now (False: another process is polling it)."""
        if self._settled(feed.id):
            return self._hand_out(feed.id)
        self._asked[feed.id] = host_of(feed.url)
        async with self._lock:
            if self._settled(feed.id):  # claimed ahead by the transaction we waited for
                self._asked.pop(feed.id, None)  # not asked for again by the next one
            else:
                await self._claim_asked()
        return self._hand_out(feed.id)

    @property
    def refused(self) -> frozenset[int]:
        """The feeds refused so far: another process held them, or had them locked."""
        return frozenset(self._refused)

    def _settled(self, feed_id: int) -> bool:
        return feed_id in self._held or feed_id in self._refused

    def _hand_out(self, feed_id: int) -> bool:
        if feed_id in self._held:
            self._held.discard(feed_id)
            return True
        return False

    async def _claim_asked(self) -> None:
        """One transaction: every feed asked for so far, and the next ones of their hosts."""
        asked, self._asked = self._asked, {}
        ids = list(asked)
        more = min(self._ahead(self.alone), self._ramp) - 1
        self._ramp = min(self._ramp * 2, AHEAD_ALONE)  # no claim ever takes more
        for host in dict.fromkeys(asked.values()):
            queue = self._queues[host]
            taken = 0
            while queue and taken < more:
                feed_id = queue.popleft()
                if feed_id not in asked and not self._settled(feed_id):
                    ids.append(feed_id)
                    taken += 1
        claim = await self._claim(ids)
        self.alone = not claim.others
        self._held.update(claim.ids)
        self._refused.update(set(ids) - claim.ids)
