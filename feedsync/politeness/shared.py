"""A host's turn in the database, through the pass's lane: gate.SharedHosts for real.

Every storage call of a pass runs on its one database lane (feedsync/context.py), in
order; this module asks the host-pacing role of storage (``HostPacing``:
feedsync/storage/sql_hosts.py answers) through it, and through nothing else: it is
given the lane and the storage, not the pass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, ParamSpec, Protocol, TypeVar

from feedsync.group_commit import GroupCommit
from feedsync.politeness.holds import HostHolds
from feedsync.storage_errors import StorageError, StorageUnavailable

if TYPE_CHECKING:
    from feedsync.politeness.pacing import HostPacing

P = ParamSpec("P")
T = TypeVar("T")


class Lane(Protocol):
    """Runs one storage call (one transaction) on the pass's database lane, awaited
    (``PassContext.on_lane``)."""

    async def __call__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T: ...


class StorageHosts:
    """gate.SharedHosts through the storage, on the lane: the host's turn in the
    database. Its slot is leased for ``lease`` seconds (``[poll] lease`` but at most
    rules.SLOT_LEASE), renewed while the request runs: a poller that dies holds a host's
    slot no longer than that (a request may last ``[poll] timeout``, far too long to
    block the host for). A host this process holds (``holds``) is paced in memory; the
    last request on one that company came for asks ``release`` to give it back."""

    def __init__(
        self,
        lane: Lane,
        storage: HostPacing,
        owner: str,
        *,
        slots: int,
        delay: float,
        lease: float,
        holds: HostHolds,
        release: Callable[[list[str]], Awaitable[None]],
        problem: Callable[[str], None],
    ):
        self._lane = lane
        self._storage = storage
        self._owner = owner
        self._slots = slots
        self._delay = delay
        self._lease = lease
        self._holds = holds
        self._release = release
        self._problem = problem
        self.renew_every = lease / 3
        # with company every request takes its turn here: the turns asked for while the
        # lane is busy are taken in its next transaction together (feedsync/group_commit.py)
        self._turns: GroupCommit[str, tuple[int, float] | None] = GroupCommit(
            self._take_many, whole=(StorageUnavailable,)
        )

    async def take(self, host: str) -> tuple[int, float] | None:
        return await self._turns(host)

    async def _take_many(self, hosts: list[str]) -> list[tuple[int, float] | None]:
        return await self._lane(
            self._storage.host_turns, hosts, self._owner, self._slots, self._delay, self._lease
        )

    async def renew(self, host: str, slot: int) -> None:
        try:
            await self._lane(self._storage.host_renew, host, self._owner, slot, self._lease)
        except StorageError as exc:
            # Politeness, not data: should the lease lapse meanwhile, another poller may
            # send to this host one request early. The pass goes on.
            self._problem(f"host {host}: its slot's lease was not renewed: {exc}")

    def go_local(self, host: str) -> bool:
        return self._holds.go_local(host)

    def still_local(self, host: str) -> bool:
        return self._holds.still_local(host)

    async def left_local(self, host: str) -> None:
        if self._holds.left_local(host):
            await self._release([host])

    async def give_back(self, host: str, slot: int) -> None:
        """The slot back at once, in a transaction of its own (a feed poll's goes with
        its record instead: the gate keeps it on the poll's ticket)."""
        await self._lane(self._storage.host_done, host, self._owner, slot)
