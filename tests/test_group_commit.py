"""The polls' group commit (feedsync/group_commit.py) over a real SQLite file, on a lane
thread as a pass runs it: polls that finish together cost one transaction, and one
broken poll costs the others nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from feedsync.group_commit import GroupCommit
from feedsync.records import NOT_MODIFIED, HostNote, PollIntent, PollRecord
from feedsync.storage import StorageUnavailable
from feedsync.storage.sqlite import SQLiteStorage

T0 = "2026-11-22T10:00:00Z"
LATER = "2026-11-22T11:00:00Z"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStorage]:
    storage = SQLiteStorage.open(tmp_path / "feedsync.db")
    yield storage
    storage.close()


def feeds(store: SQLiteStorage, n: int) -> list[int]:
    for i in range(n):
        store.add_feed(f"https://e.com/feed{i}", T0)
    return [feed.id for feed in store.feeds_to_poll()]


def not_modified(fid: int, outcome: str = NOT_MODIFIED) -> PollIntent:
    return PollIntent(fid, T0, LATER, outcome, etag=f'"{fid}"')


async def record_all(
    store: SQLiteStorage, intents: list[PollIntent], whole: tuple[type[BaseException], ...] = ()
) -> list[Any]:
    """Every intent recorded by its own task, as the polls of a pass are: the results
    (a record or the exception)."""
    lane = ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()
    group: GroupCommit[PollIntent, PollRecord] = GroupCommit(
        lambda many: loop.run_in_executor(
            lane, store.record_polls, [(intent, HostNote()) for intent in many]
        ),
        whole=whole,
    )
    try:
        results = await asyncio.gather(*(group(i) for i in intents), return_exceptions=True)
    finally:
        lane.shutdown()
    return list(results)


def test_polls_that_finish_together_are_one_transaction(store: SQLiteStorage) -> None:
    ids = feeds(store, 10)
    writes = store.writes
    results = asyncio.run(record_all(store, [not_modified(f) for f in ids]))
    assert all(isinstance(r, PollRecord) for r in results), results
    assert store.writes == writes + 1
    assert {h.next_poll_at for h in store.feed_health()} == {LATER}  # every one written
    assert {f.etag for f in store.feeds_to_poll()} == {f'"{f}"' for f in ids}


def test_one_broken_poll_fails_alone(store: SQLiteStorage) -> None:
    """The group's transaction fails on the broken one; each is then written alone, so
    the others are recorded and only the broken one's poll hears of the error."""
    ids = feeds(store, 5)
    intents = [not_modified(f, "exploded" if f == ids[2] else NOT_MODIFIED) for f in ids]
    writes = store.writes
    results = asyncio.run(record_all(store, intents))
    assert isinstance(results[2], ValueError)
    assert all(isinstance(r, PollRecord) for i, r in enumerate(results) if i != 2), results
    assert store.writes == writes + 1 + 5  # the group, then each alone
    written = {h.id for h in store.feed_health() if h.next_poll_at == LATER}
    assert written == set(ids) - {ids[2]}


def test_a_database_down_is_every_polls_error_at_once() -> None:
    """The server gone is no poll's fault: each hears of it, none is tried again alone
    (each try could wait for a connection timeout)."""
    tried: list[list[int]] = []

    async def down(many: list[int]) -> list[int]:
        tried.append(many)
        raise StorageUnavailable("cannot reach the database server")

    async def main() -> list[Any]:
        group: GroupCommit[int, int] = GroupCommit(down, whole=(StorageUnavailable,))
        return await asyncio.gather(*(group(i) for i in range(4)), return_exceptions=True)

    results = asyncio.run(main())
    assert all(isinstance(r, StorageUnavailable) for r in results), results
    assert tried == [[0, 1, 2, 3]]
