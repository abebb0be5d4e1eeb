"""Host politeness (feedsync/politeness/gate.py) in one process: the per-host cap, the
order of hosts, the spacing; across processes through the database:
tests/test_politeness_pace.py."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import timedelta

from feedsync.politeness.gate import HostGate


def test_host_gate_caps_concurrency_per_host() -> None:
    async def main() -> tuple[int, int]:
        gate = HostGate(total=4, per_host=2)
        active: dict[str, int] = {"a": 0, "b": 0}
        peak: dict[str, int] = {"a": 0, "b": 0}

        async def job(host: str) -> None:
            async with gate.slot(host):
                active[host] += 1
                peak[host] = max(peak[host], active[host])
                await asyncio.sleep(0.01)
                active[host] -= 1

        await asyncio.gather(*(job(h) for h in "aaaaaabbbbbb"))
        return peak["a"], peak["b"]

    assert asyncio.run(main()) == (2, 2)


def test_host_gate_lets_another_host_go_before_a_busy_hosts_queue() -> None:
    """One global slot, four requests queued for host a, then one for host b: b goes
    second. The ones waiting for a's turn hold no global slot."""

    async def main() -> list[str]:
        gate = HostGate(total=1, per_host=1)
        order: list[str] = []

        async def job(host: str) -> None:
            async with gate.slot(host):
                order.append(host)
                await asyncio.sleep(0.01)

        await asyncio.gather(*(job(h) for h in "aaaab"))
        return order

    assert asyncio.run(main()) == ["a", "b", "a", "a", "a"]


def test_host_gate_spaces_requests_to_one_host() -> None:
    async def main() -> list[float]:
        gate = HostGate(total=8, per_host=8, delay=timedelta(seconds=0.2))
        starts: list[float] = []

        async def job() -> None:
            async with gate.slot("example.com"):
                starts.append(time.monotonic())

        await asyncio.gather(*(job() for _ in range(4)))
        return starts

    starts = asyncio.run(main())
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(gap >= 0.19 for gap in gaps), gaps  # never sooner than the delay
