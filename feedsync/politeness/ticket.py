"""A request's ticket: the shared host slots its turn held, for its caller to give back.

A request takes its host's turn from the database (a slot of ``[poll] per_host``, leased,
feedsync/politeness/shared.py); the slot must go back when the request is over. An
article gives it back at once, in a transaction of its own. A feed poll would then write
twice per feed (the slot, then its record): instead the slots its turn held are kept on
its ticket, and the poll hands them to its record, which gives them back in its own
transaction (its ``HostNote.slots``). Should no record be written (the poll went
otherwise), the poll gives the ticket back itself (``Hosts.give_back``). The ticket is
that value, passed by hand: nothing is given back behind the caller's back.
"""

from __future__ import annotations


class Ticket:
    """The shared slots ``(host, slot)`` a request's turn held and that are not given
    back yet. Mutable while the turn runs (a late turn is taken again: one more slot,
    feedsync/politeness/gate.py), read once it is over."""

    __slots__ = ("_slots",)

    def __init__(self) -> None:
        self._slots: list[tuple[str, int]] = []

    @property
    def slots(self) -> tuple[tuple[str, int], ...]:
        """The slots to give back, in the order taken."""
        return tuple(self._slots)

    def took(self, host: str, slot: int) -> None:
        """The turn is over with ``slot`` of ``host`` still leased: it goes back later."""
        self._slots.append((host, slot))

    def handed_in(self, slots: tuple[tuple[str, int], ...]) -> None:
        """``slots`` were given back (by the poll's record, or one by one): off the
        ticket."""
        for given in slots:
            self._slots.remove(given)
