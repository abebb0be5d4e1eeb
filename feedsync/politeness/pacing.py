"""The storage role that host politeness is built on (``HostPacing``): the port this
package asks through, defined here, beside the code that asks, so that the package
needs nothing of storage; storage's SQL (feedsync/storage/sql_hosts.py, sql/pace.sql)
answers it, and storage's ``Storage`` protocol includes it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class HostPacing(Protocol):
    """Host politeness shared by every process on the database: a host's turn and
    slot, a 429/503 block, the hosts a pass holds alone (feedsync/politeness/ asks;
    sql/pace.sql answers)."""

    def hosts_waiting(self, now: str) -> dict[str, tuple[str, int]]:
        """Hosts that asked to be left alone (429/503): host -> (not_before, backoff)."""
        ...

    def host_wait(self, host: str, not_before: str, backoff_count: int, reason: str) -> None: ...

    def host_clear(self, host: str) -> None: ...

    def host_turn(
        self, host: str, owner: str, slots: int, delay: float, lease: float
    ) -> tuple[int, float] | None:
        """A request to ``host``, across every process on the database: one of its
        ``slots`` concurrency slots, leased to ``owner`` for ``lease`` seconds from the
        start, and a start ``delay`` seconds after the previous one reserved (``delay``
        0: no spacing, no pace written). Returns (slot, seconds to wait before starting),
        or None when every slot is held (try again later). One short transaction."""
        ...

    def host_turns(
        self, hosts: Sequence[str], owner: str, slots: int, delay: float, lease: float
    ) -> list[tuple[int, float] | None]:
        """:meth:`host_turn` for several requests (a host may come more than once), in
        ONE transaction, each result as that call's: the turns a pass asks for while
        its lane is busy (feedsync/group_commit.py). Hosts are locked in sorted order,
        so that two processes' groups never wait on each other."""
        ...

    def host_renew(self, host: str, owner: str, slot: int, lease: float) -> None:
        """A request still running on a slot of :meth:`host_turn`: its lease runs on for
        ``lease`` seconds from now (the database's clock). A slot lost meanwhile (its
        lease ran out and another poller took it) stays lost: nothing is changed."""
        ...

    def host_done(self, host: str, owner: str, slot: int) -> None:
        """Give back a slot of :meth:`host_turn` (the request is over)."""
        ...

    def host_holds_keep(self, owner: str, now: str, lease: float) -> bool:
        """The hosts ``owner`` holds, held ``lease`` seconds more; returns whether another
        process is at work on the database (then the holds are given up)."""
        ...

    def host_holds_release(self, owner: str, aheads: Mapping[str, float]) -> None:
        """Release held hosts: each host's next request, anyone's, starts no earlier than
        its ``aheads`` seconds from now (the pace kept in the holder's memory)."""
        ...
