"""Claims in batches (feedsync.claims): how many transactions a pass's feeds cost."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from feedsync.claims import FeedClaims, ahead_for
from feedsync.records import Feed, FeedClaim


def feeds(host: str, count: int, first: int = 0) -> list[Feed]:
    return [Feed(first + n, f"https://{host}/feed{n}", "", None, None) for n in range(count)]


class Database:
    """The claim transaction's rule, in memory: ids held by another process are refused."""

    def __init__(self, held_elsewhere: set[int] = frozenset(), others: bool = False):  # type: ignore[assignment]
        self.held_elsewhere = held_elsewhere
        self.others = others
        self.batches: list[list[int]] = []

    async def claim(self, ids: list[int]) -> FeedClaim:
        self.batches.append(ids)
        await asyncio.sleep(0)  # a transaction takes a while: others ask meanwhile
        return FeedClaim(frozenset(set(ids) - self.held_elsewhere), self.others)


def test_a_hosts_next_feeds_are_claimed_with_the_first() -> None:
    async def scenario() -> list[bool]:
        listed = feeds("a.com", 10)
        claims = FeedClaims(listed, db.claim, lambda alone: 4)
        return [await claims.take(feed) for feed in listed]

    db = Database()
    assert asyncio.run(scenario()) == [True] * 10
    assert db.batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_feeds_asking_together_share_one_transaction() -> None:
    async def scenario() -> list[bool]:
        listed = feeds("a.com", 1) + feeds("b.com", 1, 1) + feeds("c.com", 1, 2)
        claims = FeedClaims(listed, db.claim, lambda alone: 1)
        return list(await asyncio.gather(*(claims.take(feed) for feed in listed)))

    db = Database()
    assert asyncio.run(scenario()) == [True, True, True]
    assert len(db.batches) == 2  # the first asks alone; the two asking meanwhile together
    assert sorted(db.batches[1]) == [1, 2]


def test_a_feed_another_process_holds_is_not_ours_and_company_is_noticed() -> None:
    async def scenario() -> tuple[list[bool], bool]:
        listed = feeds("a.com", 3)
        claims = FeedClaims(listed, db.claim, lambda alone: 3)
        return [await claims.take(feed) for feed in listed], claims.alone

    db = Database(held_elsewhere={1}, others=True)
    taken, alone = asyncio.run(scenario())
    assert taken == [True, False, True] and not alone
    assert db.batches == [[0, 1, 2]]


def test_a_hosts_pace_bounds_how_far_ahead_its_feeds_are_claimed() -> None:
    five_minutes = timedelta(minutes=5)
    # a second between two requests: the 150th would start after half the lease
    assert ahead_for(five_minutes, timedelta(seconds=10), 1, 8, alone=True) == 15
    assert ahead_for(five_minutes, timedelta(0), 2, 8, alone=True) == 64
    assert ahead_for(five_minutes, timedelta(0), 2, 8, alone=False) == 4  # share with others
    assert ahead_for(timedelta(seconds=10), timedelta(seconds=30), 1, 8, alone=True) == 1


def test_with_company_a_pass_claims_no_more_ahead_than_it_polls_at_once() -> None:
    # per_host counts every poller's requests: 4 pollers of 8 share a host's 32 slots
    assert ahead_for(timedelta(minutes=5), timedelta(0), 32, 8, alone=False) == 8
    assert ahead_for(timedelta(minutes=5), timedelta(0), 32, 8, alone=True) == 64


def test_a_pass_alone_claims_in_batches_that_grow_from_a_small_first() -> None:
    """A pass cannot know at its first claim whether other pollers started with it: the
    first batch is small, and the next ones double while it finds itself alone."""

    async def scenario() -> list[bool]:
        listed = feeds("a.com", 100)
        claims = FeedClaims(listed, db.claim, lambda alone: 64)
        return [await claims.take(feed) for feed in listed]

    db = Database()
    assert asyncio.run(scenario()) == [True] * 100
    assert [len(batch) for batch in db.batches] == [8, 16, 32, 44]
