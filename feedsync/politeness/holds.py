"""A host held whole by one process: its pace kept in memory, not in the database.

Several processes on one database share a host's politeness (``[poll] per_host``
requests at once, ``[fetch] host_delay`` between two starts) through the database: each
request takes a turn there, one write transaction (gate.HostGate). A process alone on
its database needs none of that: it can pace the host by itself. So a pass that finds
itself alone **holds** the hosts it polls: the claim transaction that takes a host's
feeds (storage.claim_feeds) also writes a hold on the host (a host_slots row, slot
rules.HOLD), granted only when no request to the host is in flight anywhere. While the
hold lives, every other process is refused a turn there, and this one paces the host in
memory: one write per feed (its record) instead of two.

The hold ends, with the host's next start written for whoever comes next:

- when the pass's polls are over (one transaction for every host held);
- when company arrives: another process is seen by a claim, by the keeper that renews
  the holds every few seconds, or by the record of a feed on a held host, which says
  whether a process refused a turn there wants it (rules.WANTED). From then on, for the
  rest of the pass, nothing is held: each held host takes no new local request, and is released as
  soon as its requests in flight are over. Meanwhile the newcomer's turns there are
  refused; it asks again, as it does when every slot of a host is taken.

A hold that its process cannot release (it died) lapses with its lease, like a slot's.

This class is the bookkeeping only: which hosts are held, open to new requests, and how
many local requests are in flight on each (hosts.Hosts asks for the transactions). It
runs on the event loop (no locks): the transactions it asks for run on the pass's one
database lane, in the order asked, so a release asked for before a claim is applied
before it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


class HostHolds:
    """The hosts this pass holds (see the module)."""

    def __init__(self) -> None:
        self._held: set[str] = set()  # a hold row of ours exists in the database
        self._open: set[str] = set()  # held, and new requests may go in memory
        self._local: Counter[str] = Counter()  # requests in flight under the hold
        self.company = False  # another process was seen: nothing more is held

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    def holds(self, host: str) -> bool:
        return host in self._held

    def wanted(self, hosts: Iterable[str]) -> list[str]:
        """The hosts a claim transaction should try to hold: those not held yet, while
        the pass is alone."""
        if self.company:
            return []
        return [host for host in dict.fromkeys(hosts) if host not in self._held]

    def granted(self, hosts: Iterable[str]) -> list[str]:
        """A claim transaction held ``hosts``. Returns those to release at once: company
        arrived while the claim ran (it was asked before, and applied before any release
        asked since)."""
        hosts = list(hosts)
        self._held.update(hosts)
        if self.company:
            return [host for host in hosts if not self._local[host]]
        self._open.update(hosts)
        return []

    def go_local(self, host: str) -> bool:
        """A request to ``host`` is about to take its turn: in memory (True, counted in
        flight until :meth:`left_local`) or from the database (False)."""
        if host not in self._open:
            return False
        self._local[host] += 1
        return True

    def still_local(self, host: str) -> bool:
        """Whether a request counted in flight under the hold, that waited for its start
        in memory, may still go that way: not once company came (it leaves, counted
        out by :meth:`left_local`, and takes its turn from the database)."""
        return host in self._open

    def left_local(self, host: str) -> bool:
        """A request under the hold is over. True: release the host now (company came
        while it ran, and it was the last)."""
        self._local[host] -= 1
        if self._local[host] <= 0:
            del self._local[host]
            return host in self._held and host not in self._open
        return False

    def join_company(self) -> list[str]:
        """Another process is at work: nothing more is held. Returns the held hosts with
        no request in flight, to release now; the others follow as their last ends."""
        self.company = True
        self._open.clear()
        return [host for host in self._held if not self._local[host]]

    def released(self, hosts: Iterable[str]) -> None:
        """The release of ``hosts`` is asked for (their rows go in the next transaction)."""
        for host in hosts:
            self._held.discard(host)
            self._open.discard(host)

    def end(self) -> list[str]:
        """The polls are over: every held host, to release (none is used any more)."""
        self._open.clear()
        return sorted(self._held)
