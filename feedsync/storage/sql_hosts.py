"""Host politeness shared by every process on the database, written once for both
engines (the HostPacing role): a 429/503 block, a request's turn and slot, the hosts a
pass alone on the database holds. The rules applied are feedsync/politeness/rules.py's;
feedsync/politeness/ asks.

Two parts of it run inside the Polling role's transactions (sql_polling.py), as
functions of the engine rather than methods that role would inherit: :func:`hold`, a
host held by a feed claim, and :func:`note`, a poll's host note written with its record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby

from feedsync.politeness import rules
from feedsync.records import HostNote, PollRecord
from feedsync.storage.sql_core import Connection, SQLCore


class SQLHostPacing(SQLCore):
    """The HostPacing role over named queries."""

    def hosts_waiting(self, now: str) -> dict[str, tuple[str, int]]:
        return {
            r["host"]: (r["not_before"], r["backoff_count"])
            for r in self._read("hosts_waiting", now=now)
        }

    def host_wait(self, host: str, not_before: str, backoff_count: int, reason: str) -> None:
        self._write(
            lambda conn: self._exec(
                conn,
                "host_wait",
                host=host,
                not_before=not_before,
                backoff_count=backoff_count,
                reason=reason,
            )
        )

    def host_clear(self, host: str) -> None:
        self._write(lambda conn: self._exec(conn, "host_clear", host=host))

    def host_turn(
        self, host: str, owner: str, slots: int, delay: float, lease: float
    ) -> tuple[int, float] | None:
        return self.host_turns([host], owner, slots, delay, lease)[0]

    def host_turns(
        self, hosts: Sequence[str], owner: str, slots: int, delay: float, lease: float
    ) -> list[tuple[int, float] | None]:
        def work(conn: Connection) -> list[tuple[int, float] | None]:
            turns: dict[int, tuple[int, float] | None] = {}
            # hosts in one order in every process: two groups never wait on each other
            order = sorted(range(len(hosts)), key=lambda i: hosts[i])
            for host, members in groupby(order, key=lambda i: hosts[i]):
                now, next_start, taken = host_state(self, conn, host)
                paced = next_start
                for index in members:
                    turn = rules.host_turn(now, next_start, delay, taken, slots)
                    if turn is None:
                        if rules.held(now, delay, taken):
                            # held whole by another process: ask it to give the host up
                            self._exec(
                                conn,
                                "host_slot_take",
                                host=host,
                                slot=rules.WANTED,
                                owner=owner,
                                lease_until=now + lease,
                            )
                        turns[index] = None
                        continue
                    self._exec(
                        conn,
                        "host_slot_take",
                        host=host,
                        slot=turn.slot,
                        owner=owner,
                        lease_until=turn.start + lease,
                    )
                    taken.append((turn.slot, turn.start + lease))
                    next_start = turn.next_start
                    # how long to wait, not when: the caller sleeps by its own clock
                    turns[index] = (turn.slot, turn.start - now)
                if delay > 0 and next_start != paced:
                    self._exec(conn, "host_pace_set", host=host, next_start=next_start)
            return [turns[index] for index in range(len(hosts))]

        return self._write(work)

    def host_renew(self, host: str, owner: str, slot: int, lease: float) -> None:
        self._write(
            lambda conn: self._exec(
                conn, "host_slot_renew", host=host, slot=slot, owner=owner, lease=lease
            )
        )

    def host_done(self, host: str, owner: str, slot: int) -> None:
        self._write(
            lambda conn: self._exec(conn, "host_slot_release", host=host, slot=slot, owner=owner)
        )

    def host_holds_keep(self, owner: str, now: str, lease: float) -> bool:
        def work(conn: Connection) -> bool:
            self._exec(conn, "host_holds_renew", owner=owner, lease=lease)
            row = self._exec(conn, "others_at_work", owner=owner, now=now).fetchone()
            return bool(row["others"])

        return self._write(work)

    def host_holds_release(self, owner: str, aheads: Mapping[str, float]) -> None:
        def work(conn: Connection) -> None:
            for host, ahead in aheads.items():
                self._exec(conn, "host_slot_release", host=host, slot=rules.HOLD, owner=owner)
                self._exec(conn, "host_wanted_clear", host=host)
                self._exec(conn, "host_pace_push", host=host, ahead=max(ahead, 0.0))

        self._write(work)


def host_state(
    db: SQLCore, conn: Connection, host: str, besides: str | None = None
) -> tuple[float, float, list[tuple[int, float]]]:
    """In a transaction: the host's row locked (PostgreSQL), and the database's clock,
    the host's next start and its slots as (slot, lease_until). ``besides``: without
    that owner's hold and its ask for one (its own, renewed rather than refused)."""
    row = db._exec(conn, "host_pace_lock", host=host).fetchone()
    now = float(row["now"])
    taken = [
        (int(r["slot"]), float(r["lease_until"]))
        for r in db._exec(conn, "host_slots_taken", host=host, now=now)
        if not (r["owner"] == besides and int(r["slot"]) in (rules.HOLD, rules.WANTED))
    ]
    return now, float(row["next_start"]), taken


def hold(
    db: SQLCore, conn: Connection, host: str, owner: str, delay: float, lease: float
) -> float | None:
    """In claim_feeds' transaction: hold ``host`` whole (feedsync/politeness/holds.py)
    when no request to it is in flight anywhere. Returns the seconds until its next start
    may go (its pace, from the database), or None: not held."""
    now, next_start, taken = host_state(db, conn, host, besides=owner)
    if not rules.may_hold(now, delay, taken):
        return None
    db._exec(
        conn,
        "host_slot_take",
        host=host,
        slot=rules.HOLD,
        owner=owner,
        lease_until=now + lease,
    )
    return rules.held_start(now, next_start, delay, taken)


def note(
    db: SQLCore, conn: Connection, note: HostNote, owner: str, record: PollRecord
) -> PollRecord:
    """In record_polls's transaction: what a poll says about its host (a 429/503 block,
    or its end; the slots its request held, given back; whether a held host is wanted by
    another process). Returns the poll's record with that last answer."""
    if note.wait is not None:
        wait = note.wait
        db._exec(
            conn,
            "host_wait",
            host=wait.host,
            not_before=wait.not_before,
            backoff_count=wait.backoff_count,
            reason=wait.reason,
        )
    if note.clear is not None:
        db._exec(conn, "host_clear", host=note.clear)
    for host, slot in note.slots:
        db._exec(conn, "host_slot_release", host=host, slot=slot, owner=owner)
    if note.held is not None:
        wanted = db._exec(conn, "host_wanted", host=note.held).fetchone()
        record = record._replace(host_wanted=bool(wanted["wanted"]))
    return record
