"""Per-host politeness across processes: ``[fetch] host_delay`` and ``[poll] per_host``
hold for every poller on one database, not just inside one process.

The gate with a stand-in for the database (the pure rule, rules.host_turn, is tested
in tests/test_politeness_rules.py), the storage methods on both engines, then two real
``feedsync run`` processes against one database and one slow local host, the server
recording when each request started and how many were in flight (by its own monotonic
clock, whichever process sent them).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from conftest import BACKENDS, FeedsyncEnv, Site, wait_until
from sitegen import Item

from feedsync.localserver import LocalServer
from feedsync.politeness import rules
from feedsync.politeness.gate import HostGate
from feedsync.politeness.holds import HostHolds
from feedsync.politeness.ticket import Ticket
from feedsync.storage.base import SQLStorage

# ---------------------------------------------------------------- the gate


class FakeShared:
    """The database's side of the gate, in memory, by the event loop's clock."""

    def __init__(self, slots: int, delay: float):
        self.slots, self.delay = slots, delay
        self.next_start = 0.0
        self.held: set[int] = set()
        self.refused = 0
        self.given_back: list[int] = []
        self.renewed: list[int] = []
        self.renew_every = 3600.0
        self.reserved: dict[int, float] = {}  # slot -> the start its turn reserved

    async def take(self, host: str) -> tuple[int, float] | None:
        now = time.monotonic()
        taken = [(slot, now + 10.0) for slot in self.held]  # leases running
        turn = rules.host_turn(now, self.next_start, self.delay, taken, self.slots)
        if turn is None:
            self.refused += 1
            return None
        self.held.add(turn.slot)
        self.next_start = turn.next_start
        self.reserved[turn.slot] = turn.start
        return turn.slot, turn.start - now

    async def renew(self, host: str, slot: int) -> None:
        self.renewed.append(slot)

    async def give_back(self, host: str, slot: int) -> None:
        self.held.discard(slot)
        self.given_back.append(slot)

    def go_local(self, host: str) -> bool:
        return False  # never held: every turn from "the database"

    def still_local(self, host: str) -> bool:
        raise AssertionError("no request went in memory")

    async def left_local(self, host: str) -> None:
        raise AssertionError("no request went in memory")


class HeldShared(FakeShared):
    """A host this process holds whole (feedsync/politeness/holds.py) until company comes; then
    turns from the stand-in database."""

    def __init__(self) -> None:
        super().__init__(slots=8, delay=0.0)
        self.holds = HostHolds()
        self.holds.granted(["h"])
        self.asked_local = 0
        self.releases = 0
        self.turns: list[str] = []  # the host of every turn taken from "the database"

    async def take(self, host: str) -> tuple[int, float] | None:
        turn = await super().take(host)
        if turn is not None:
            self.turns.append(host)
        return turn

    def go_local(self, host: str) -> bool:
        self.asked_local += host == "h"
        return self.holds.go_local(host)

    def still_local(self, host: str) -> bool:
        return self.holds.still_local(host)

    async def left_local(self, host: str) -> None:
        if self.holds.left_local(host):
            self.holds.released([host])
            self.releases += 1


def test_company_ends_a_hold_after_the_request_sent_not_after_those_queued() -> None:
    """A pass that began alone holds its host, with requests queued in memory behind the
    one sending (here: waiting for a global slot, which another host's request has).
    When another process comes, the queued ones take their turns from the database: the
    hold ends once the request sent is over, and the newcomer is not kept waiting for
    the queue."""

    async def scenario() -> tuple[list[str], HeldShared]:
        shared = HeldShared()
        gate = HostGate(2, 2, timedelta(0), shared=shared)
        company = asyncio.Event()
        ways: list[str] = []

        async def request(host: str) -> None:
            turns = shared.turns.count("h")
            async with gate.slot(host) as ok:
                assert ok
                if host == "h":
                    ways.append("database" if shared.turns.count("h") > turns else "memory")
                await company.wait()

        other = asyncio.create_task(request("elsewhere"))  # a global slot, from the database
        for _ in range(1000):
            if shared.turns:
                break
            await asyncio.sleep(0)
        tasks = [asyncio.create_task(request("h")) for _ in range(3)]
        for _ in range(1000):  # one sending, one queued in memory for a global slot
            if shared.asked_local == 2 and ways:
                break
            await asyncio.sleep(0)
        assert shared.asked_local == 2 and ways == ["memory"]
        assert shared.holds.join_company() == []  # requests in flight: kept until they end
        company.set()
        await asyncio.wait_for(asyncio.gather(other, *tasks), timeout=30)
        return ways, shared

    ways, shared = asyncio.run(scenario())
    assert ways == ["memory", "database", "database"]
    assert shared.releases == 1 and not shared.holds.held
    assert shared.given_back and not shared.held  # every database slot given back


def test_a_poller_takes_no_more_of_a_hosts_slots_than_it_can_send_at_once() -> None:
    """``[poll] per_host`` is shared by every poller; one whose requests wait for a
    global slot (``concurrency``) must not hold the host's slots meanwhile, refusing
    them to the other pollers."""

    async def scenario() -> tuple[int, FakeShared]:
        shared = FakeShared(slots=8, delay=0.0)
        gate = HostGate(2, 8, timedelta(0), shared=shared)  # 2 at once, of 8
        done = asyncio.Event()
        most = 0

        async def request() -> None:
            nonlocal most
            async with gate.slot("h") as ok:
                assert ok
                most = max(most, len(shared.held))
                await done.wait()

        tasks = [asyncio.create_task(request()) for _ in range(6)]
        for _ in range(1000):  # the first two sending, the rest queued
            if len(shared.held) == 2:
                break
            await asyncio.sleep(0)
        for _ in range(100):  # let the queued ones run as far as they can
            await asyncio.sleep(0)
        most = max(most, len(shared.held))
        done.set()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
        return most, shared

    most, shared = asyncio.run(scenario())
    assert most == 2  # the host's slots this poller held at once: what it could send
    assert len(shared.given_back) == 6 and not shared.held and shared.refused == 0


def test_the_gate_waits_for_the_shared_turn_and_gives_the_slot_back() -> None:
    async def scenario() -> tuple[list[float], FakeShared, FakeShared]:
        # two gates (two processes) over one shared pace: starts spaced across both
        shared = FakeShared(slots=1, delay=0.1)
        gates = [HostGate(8, 4, timedelta(0), shared=shared) for _ in range(2)]
        starts: list[float] = []  # the reserved start of each request that went

        async def request(gate: HostGate) -> None:
            async with gate.slot("h") as ok:
                assert ok
                (reserved,) = [shared.reserved[slot] for slot in shared.held]
                # never before its turn (a busy machine may only make it later)
                assert time.monotonic() >= reserved
                starts.append(reserved)
                await asyncio.sleep(0.01)

        await asyncio.gather(*(request(gates[i % 2]) for i in range(6)))
        # `first` saying no: no turn taken at all
        untouched = FakeShared(slots=1, delay=1.0)
        gate = HostGate(8, 4, shared=untouched)

        async def no() -> bool:
            return False

        async with gate.slot("h", first=no) as ok:
            assert not ok
        return sorted(starts), shared, untouched

    starts, shared, untouched = asyncio.run(scenario())
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.1 - 1e-9, gaps  # the turns that went: a delay apart
    assert shared.refused > 0  # a slot in use made the other process ask again
    assert len(shared.given_back) == 6 and not shared.held
    assert untouched.next_start == 0.0 and not untouched.given_back
    assert not shared.renewed  # requests shorter than renew_every renew nothing


def test_a_ticket_keeps_the_turns_slot_for_its_holder_to_give_back() -> None:
    """A feed poll's slot is not given back when its turn ends: it stays on the poll's
    ticket, which the poll hands to its record (one write, not two); without a ticket
    (an article) the slot goes back at once."""

    async def scenario() -> tuple[FakeShared, Ticket]:
        shared = FakeShared(slots=2, delay=0.0)
        gate = HostGate(8, 4, shared=shared)
        ticket = Ticket()
        async with gate.slot("h", ticket=ticket) as ok:
            assert ok
        assert shared.given_back == [] and shared.held == {0}
        async with gate.slot("h"):
            pass
        return shared, ticket

    shared, ticket = asyncio.run(scenario())
    assert ticket.slots == (("h", 0),)
    assert shared.given_back == [1] and shared.held == {0}
    ticket.handed_in(ticket.slots)  # its record gave it back
    assert ticket.slots == ()


def test_the_gate_renews_the_slot_of_a_request_that_outlasts_its_lease() -> None:
    async def scenario() -> FakeShared:
        shared = FakeShared(slots=1, delay=0.0)
        shared.renew_every = 0.02
        gate = HostGate(8, 4, shared=shared)
        async with gate.slot("h"):
            # a slow answer: until it is in, the slot stays ours
            await wait_for(lambda: len(shared.renewed) >= 3)
        renewed = len(shared.renewed)
        await asyncio.sleep(0.1)  # (after the block, no renewal may come any more)
        assert len(shared.renewed) == renewed
        return shared

    shared = asyncio.run(scenario())
    assert set(shared.renewed) == {0} and shared.given_back == [0] and not shared.held


async def wait_for(condition: Callable[[], bool], deadline: float = 10.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, "condition not met before the deadline"
        await asyncio.sleep(0.005)


# ---------------------------------------------------------------- the storage


@pytest.fixture
def two(opener: Callable[[], SQLStorage]) -> Iterator[tuple[SQLStorage, SQLStorage]]:
    """Two connections to one database, as two pollers would have."""
    a, b = opener(), opener()
    yield a, b
    a.close()
    b.close()


def test_turns_are_spaced_and_capped_across_connections(
    two: tuple[SQLStorage, SQLStorage],
) -> None:
    a, b = two
    first = a.host_turn("h.example", "a", 2, 10.0, 60.0)
    second = b.host_turn("h.example", "b", 2, 10.0, 60.0)
    assert first is not None and second is not None
    assert first[0] != second[0]
    assert first[1] < 0.5  # the host was idle: start now
    assert 9.0 < second[1] - first[1] <= 10.0  # ten seconds after the first, by one clock
    assert a.host_turn("h.example", "a", 2, 10.0, 60.0) is None  # both slots in flight
    assert b.host_turn("other.example", "b", 2, 10.0, 60.0) is not None  # per host
    b.host_done("h.example", "b", second[0])
    third = a.host_turn("h.example", "a", 2, 10.0, 60.0)
    assert third is not None and third[0] == second[0]
    assert 19.0 < third[1] <= 20.0
    # a poller that stops gives back what it holds
    a.release_leases("a")
    assert b.host_turn("h.example", "b", 2, 10.0, 60.0) is not None


def test_turns_asked_together_are_one_transaction_each_as_if_asked_alone(
    two: tuple[SQLStorage, SQLStorage],
) -> None:
    """A pass's turns that queue while its lane is busy are taken together: the same
    slots, spacing and cap as one by one, another host's turns apart, in one write."""
    a, b = two
    writes = a.writes
    turns = a.host_turns(
        ["h.example", "other.example", "h.example", "h.example"], "a", 2, 10.0, 60.0
    )
    assert a.writes == writes + 1
    first, other, second, third = turns
    assert first is not None and second is not None and other is not None
    assert {first[0], second[0]} == {0, 1}
    assert first[1] < 0.5 and 9.0 < second[1] - first[1] <= 10.0  # spaced, in order
    assert other[1] < 0.5  # per host: not spaced from h.example's
    assert third is None  # both of h.example's slots taken by the group itself
    # the other poller sees the group's slots and its pace
    assert b.host_turn("h.example", "b", 2, 10.0, 60.0) is None
    a.host_done("h.example", "a", first[0])
    after = b.host_turn("h.example", "b", 2, 10.0, 60.0)
    assert after is not None and after[0] == first[0] and 19.0 < after[1] <= 20.0


def test_a_renewed_slot_stays_taken_and_only_its_owner_renews_it(
    two: tuple[SQLStorage, SQLStorage],
) -> None:
    a, b = two
    turn = a.host_turn("h.example", "a", 1, 0.0, 0.0)  # its lease over at once...
    assert turn is not None
    a.host_renew("h.example", "a", turn[0], 60.0)  # ...but the request is still running
    assert b.host_turn("h.example", "b", 1, 0.0, 60.0) is None
    # another poller's renewal of a slot it does not hold changes nothing
    c = a.host_turn("k.example", "a", 1, 0.0, 0.0)
    assert c is not None
    b.host_renew("k.example", "b", c[0], 60.0)
    assert b.host_turn("k.example", "b", 1, 0.0, 60.0) is not None


def test_a_dead_pollers_slots_free_themselves_and_no_delay_writes_no_pace(
    two: tuple[SQLStorage, SQLStorage],
) -> None:
    a, b = two
    # a lease of 0 s is over as soon as it is taken: a poller that died long ago
    assert a.host_turn("h.example", "dead", 1, 0.0, 0.0) is not None
    assert b.host_turn("h.example", "b", 1, 0.0, 60.0) is not None
    assert b.host_turn("h.example", "b", 1, 0.0, 60.0) is None
    assert b._read("host_pace_lock", host="h.example")[0]["next_start"] == 0


def test_turns_taken_by_many_threads_at_once_never_exceed_the_cap(
    opener: Callable[[], SQLStorage],
) -> None:
    """Eight pollers asking for one host's two slots at once, over and over: never a
    third holder, and every start spaced by the delay (checked on the database's clock
    through the waits handed out)."""
    stores = [opener() for _ in range(8)]
    held: set[int] = set()
    most = 0
    lock = threading.Lock()
    granted: list[float] = []
    errors: list[BaseException] = []

    def poller(n: int) -> None:
        nonlocal most
        try:
            for _ in range(5):
                while (turn := stores[n].host_turn("h", f"p{n}", 2, 0.0, 60.0)) is None:
                    time.sleep(0.001)
                with lock:
                    assert turn[0] not in held
                    held.add(turn[0])
                    most = max(most, len(held))
                    granted.append(turn[1])
                time.sleep(0.002)
                with lock:
                    held.discard(turn[0])
                stores[n].host_done("h", f"p{n}", turn[0])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=poller, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for s in stores:
        s.close()
    assert not errors, errors
    assert len(granted) == 40 and most <= 2


# ---------------------------------------------------------------- across processes


class TimedServer(LocalServer):
    """The local server, slow on purpose, noting each request by its own clock: when it
    started, when its answer was ready (just before it is sent: a client cannot have the
    answer, and start another request on the slot, before that), which process sent it
    (its User-Agent)."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds
        self.slow: dict[str, float] = {}  # paths answered after this long instead
        self.log: list[tuple[float, float, str, str]] = []
        self.started: list[tuple[str, str]] = []  # (agent, path), as requests arrive

    def _answer(self, request: BaseHTTPRequestHandler) -> None:
        started = time.monotonic()
        agent = request.headers.get("User-Agent", "")
        with self._lock:
            self.started.append((agent, request.path))
        time.sleep(self.slow.get(request.path, self.seconds))
        ready = time.monotonic()
        with self._lock:
            self.log.append((started, ready, agent, request.path))
        super()._answer(request)


# Two set-ups, each making one rule the one that binds: uncapped, three answers of
# SLOW would overlap ("cap"); unspaced, two processes would start twice as often as
# host_delay allows ("delay"). A poller that kept either rule to itself would fail.
SETUPS = {
    "cap": {"per_host": 2, "delay": 0.0, "slow": 0.6},
    "delay": {"per_host": 4, "delay": 0.3, "slow": 0.3},
    "lease": {"per_host": 1, "delay": 0.0, "slow": 0.0},  # the slot leases, below
}
# What the database guarantees is the spacing of the starts it hands out; the server
# sees a request a little after its start, by however long the poller's process took to
# put it on the wire (on a loaded two-core CI machine, up to a couple of tenths of a
# second now and then). One late request shortens one gap and lengthens the next, so the
# rate is checked over WINDOW gaps, which one late request cannot fake: two pollers each
# spacing only their own requests would put WINDOW + 1 starts in about half the time.
WINDOW = 4
LATENESS = 0.15


@pytest.fixture
def setup(request: pytest.FixtureRequest) -> dict[str, float]:
    return SETUPS[str(request.param)]


@pytest.fixture
def server(setup: dict[str, float]) -> Iterator[LocalServer]:
    with TimedServer(setup["slow"]) as running:
        yield running


def most_in_flight(log: list[tuple[float, float, str, str]]) -> int:
    events = sorted([(s, 1) for s, _, _, _ in log] + [(e, -1) for _, e, _, _ in log])
    level = most = 0
    for _, step in events:  # at equal times an end (-1) sorts first
        level += step
        most = max(most, level)
    return most


@pytest.mark.parametrize("setup", ["cap", "delay"], indirect=True)
@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_two_processes_share_the_hosts_delay_and_cap(
    fs: FeedsyncEnv, site: Site, tmp_path: Path, setup: dict[str, float]
) -> None:
    per_host, delay = int(setup["per_host"]), setup["delay"]
    server = site.server
    assert isinstance(server, TimedServer)
    feeds = []
    for f in range(2):
        items = [
            Item(
                f"Story {f}-{n}",
                site.page(f"story-{f}-{n}"),
                datetime(2026, 11, 20 + n, tzinfo=UTC),
            )
            for n in range(6)
        ]
        feeds.append(site.feed(f"f{f}", items))
    settings: dict[str, dict[str, Any]] = {
        "poll": {"concurrency": 4, "per_host": per_host},
        "fetch": {"host_delay": f"{delay}s"},
    }
    fs.configure([], **settings)
    for url in feeds:  # staged, extracted by nobody yet: the queue both runs will share
        fs.run("add", url)
    # the second process: its own config file (its own User-Agent), the same database
    other = FeedsyncEnv(root=tmp_path / "other", db_path=fs.db_path, url=fs.url)
    (other.root / "home").mkdir(parents=True)
    fs.configure(fetch={"user_agent": "poller-A"})
    other.configure([], **settings)
    other.configure(fetch={"user_agent": "poller-B"})
    with server._lock:
        server.log.clear()

    runs = [env.start("run", "--json") for env in (fs, other)]
    outputs = [run.communicate(timeout=180) for run in runs]
    for run, (_, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, err
    stats = [json.loads(out) for out, _ in outputs]
    assert sum(s["extracted"] for s in stats) == 12, stats
    assert fs.scalar("SELECT count(*) FROM news") == 12

    log = sorted(server.log)
    by = {agent: sum(1 for _, _, a, _ in log if a == agent) for agent in ("poller-A", "poller-B")}
    assert all(by.values()), by  # both processes asked the host for something
    starts = [s for s, _, _, _ in log]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    crossed = sum(1 for x, y in itertools.pairwise(log) if x[2] != y[2])
    most = most_in_flight(log)
    spans = [starts[i + WINDOW] - starts[i] for i in range(len(starts) - WINDOW)]
    print(
        f"{fs.backend}: {len(log)} requests ({by}), {crossed} turns passed between the "
        f"processes; smallest gap between starts {min(gaps):.3f}s (host_delay {delay}s), "
        f"smallest span of {WINDOW} gaps {min(spans):.3f}s, "
        f"most in flight at once {most} (per_host {per_host})"
    )
    timeline = "\n".join(
        f"{s - log[0][0]:7.3f} {e - log[0][0]:7.3f} {agent} {path}" for s, e, agent, path in log
    )
    print(timeline)
    assert crossed > 0  # they really were interleaved on the host
    assert most <= per_host, timeline
    assert min(spans) >= WINDOW * delay - LATENESS, timeline
    assert not fs.query("SELECT host FROM host_slots")  # every slot given back


# The slot leases: short ([poll] lease, at most 15 s) and renewed while a request runs.
# A request that outlasts its lease keeps its slot (the cap holds for slow hosts too),
# and a poller killed mid-request frees the host within the lease, not after
# [poll] timeout (here 120 s: what a lease over the whole request would have cost).
LEASE = {"poll": {"concurrency": 4, "per_host": 1, "lease": "1.5s", "timeout": "120s"}}
SLOW = 6.0  # seconds: four leases


def a_slow_request_under_way(
    fs: FeedsyncEnv, site: Site, tmp_path: Path
) -> tuple[subprocess.Popen[str], FeedsyncEnv, str]:
    """Poller A (``fs``) with one article staged whose page answers after SLOW, started
    and waited for until that page's request is under way; poller B on the same database
    with a config of its own and one fresh feed on the same host, not started. Returns A's
    process, B, the slow page's path."""
    server = site.server
    assert isinstance(server, TimedServer)
    server.slow["/articles/slow"] = SLOW
    when = datetime(2026, 11, 20, tzinfo=UTC)
    slow_feed = site.feed("slow", [Item("The slow one", site.page("slow"), when)])
    fast_feed = site.feed("fast", [Item("The fast one", site.page("fast"), when)])
    fs.configure([], fetch={"user_agent": "poller-A"}, **LEASE)
    fs.run("add", slow_feed)  # staged: the slow page is A's to fetch
    other = FeedsyncEnv(root=tmp_path / "other", db_path=fs.db_path, url=fs.url)
    (other.root / "home").mkdir(parents=True)
    other.configure([fast_feed], fetch={"user_agent": "poller-B"}, **LEASE)
    with server._lock:
        server.log.clear()
        server.started.clear()
    a = fs.start("run")
    wait_until(lambda: started(server, "poller-A", "/articles/slow"), "A's slow request", 60)
    return a, other, "/articles/slow"


def started(server: TimedServer, agent: str, path: str) -> bool:
    with server._lock:
        return (agent, path) in server.started


@pytest.mark.parametrize("setup", ["lease"], indirect=True)
@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_slow_request_keeps_the_hosts_slot_past_its_lease(
    fs: FeedsyncEnv, site: Site, tmp_path: Path
) -> None:
    server = site.server
    assert isinstance(server, TimedServer)
    a, other, slow = a_slow_request_under_way(fs, site, tmp_path)
    b = other.start("run")  # per_host 1: B's requests wait for A's slow one to end
    for run in (a, b):
        _, err = run.communicate(timeout=180)
        assert run.returncode == 0, err
    log = sorted(server.log)
    timeline = "\n".join(f"{s - log[0][0]:7.3f} {e - log[0][0]:7.3f} {g} {p}" for s, e, g, p in log)
    print(timeline)
    ((slow_start, slow_end),) = [(s, e) for s, e, g, p in log if p == slow]
    assert slow_end - slow_start >= SLOW - 0.1  # four leases long
    b_starts = [s for s, _, g, _ in log if g == "poller-B"]
    # B polled the feeds due (its own among them) and fetched its article
    assert {p for _, _, g, p in log if g == "poller-B"} >= {"/feeds/fast", "/articles/fast"}
    assert all(s >= slow_end - 0.05 for s in b_starts), timeline  # not while A's ran
    assert most_in_flight(log) == 1, timeline
    assert fs.scalar("SELECT count(*) FROM news") == 2


@pytest.mark.parametrize("setup", ["lease"], indirect=True)
@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_poller_killed_mid_request_frees_the_host_within_its_lease(
    fs: FeedsyncEnv, site: Site, tmp_path: Path
) -> None:
    server = site.server
    assert isinstance(server, TimedServer)
    a, other, _ = a_slow_request_under_way(fs, site, tmp_path)
    os.killpg(a.pid, signal.SIGKILL)
    a.wait()
    assert len(fs.query("SELECT slot FROM host_slots")) == 1  # the dead poller's
    # B gets the host once A's lease (1.5 s) is over, long before A's request timeout
    # (120 s) or even its slow answer; a deadline, not a measurement: B has little to do
    b = other.start("run")
    _, err = b.communicate(timeout=60)
    assert b.returncode == 0, err
    assert started(server, "poller-B", "/articles/fast")
    assert fs.scalar("SELECT count(*) FROM news WHERE title = 'The fast one'") == 1
