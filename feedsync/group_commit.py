"""Group commit: writes that wait together go in one transaction.

A pass's feed polls each end in one write (``Storage.record_poll``). In the steady
state (every feed 304) that write is all the database work a poll does, so a pass of N
feeds would be N transactions, and on SQLite each one is a lock, a journal and a commit.
Polls finish in bursts while the lane (feedsync/context.py) is busy with a transaction:
the ones that queue up meanwhile are written together, in the lane's next transaction
(``Storage.record_polls``), so a pass writes fewer transactions than it has feeds.

No write waits for a group: the first one goes at once, and a group is only what
arrived while the one before it was being written. Should a group's transaction fail,
each of its writes is tried again alone, so that one feed's failure stays that feed's;
an error that is the database's own (``whole``: the server is down) is every member's,
without asking again for each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class GroupCommit(Generic[T, R]):
    """``await group(item)``: ``item`` written, alone or with others, and its result.

    ``write_many``: one transaction for the items given (one or several), their results
    in order. ``whole``: exception types that are not one item's fault (given to every
    member, not retried alone)."""

    def __init__(
        self,
        write_many: Callable[[list[T]], Awaitable[Sequence[R]]],
        whole: tuple[type[BaseException], ...] = (),
    ):
        self._write_many = write_many
        self._whole = whole
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def __call__(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_waiting())
        return await future

    async def _write_waiting(self) -> None:
        """Until nothing waits: everything that waits, in one transaction."""
        try:
            while self._waiting:
                group, self._waiting = self._waiting, []
                try:
                    await self._write(group)
                except BaseException as exc:  # cancelled: its members are told so
                    _fail(group, exc)
                    raise
        finally:
            self._writer = None
            waiting, self._waiting = self._waiting, []
            _fail(waiting, asyncio.CancelledError())

    async def _write(self, group: list[tuple[T, asyncio.Future[R]]]) -> None:
        items = [item for item, _ in group]
        try:
            results = await self._write_many(items)
        except Exception as exc:
            if len(items) == 1 or isinstance(exc, self._whole):
                _fail(group, exc)
                return
            # one member broke the group's transaction: each alone, so it fails alone
            for member in group:
                await self._write([member])
            return
        for (_, future), result in zip(group, results, strict=True):
            if not future.done():
                future.set_result(result)


def _fail(group: list[tuple[T, asyncio.Future[R]]], exc: BaseException) -> None:
    for _, future in group:
        if not future.done():
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
