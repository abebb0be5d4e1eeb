"""feedsync/politeness/holds.py: which hosts a pass alone holds, and when each is given
back."""

from __future__ import annotations

from feedsync.politeness.holds import HostHolds


def test_a_pass_alone_holds_its_hosts_and_gives_them_back_when_its_polls_end() -> None:
    holds = HostHolds()
    assert holds.wanted(["a.com", "b.org", "a.com"]) == ["a.com", "b.org"]
    assert holds.granted(["a.com"]) == []  # b.org had a request in flight somewhere
    assert holds.wanted(["a.com", "b.org"]) == ["b.org"]  # asked for again, a.com kept
    assert holds.go_local("a.com") and not holds.go_local("b.org")
    assert not holds.left_local("a.com")  # alone still: kept for the next feed
    assert holds.end() == ["a.com"]
    holds.released(["a.com"])
    assert not holds.held and not holds.go_local("a.com")


def test_company_ends_every_hold_once_its_requests_in_flight_are_over() -> None:
    holds = HostHolds()
    holds.granted(["a.com", "b.org"])
    assert holds.go_local("a.com") and holds.go_local("a.com")
    assert holds.join_company() == ["b.org"]  # nothing in flight there: at once
    holds.released(["b.org"])
    assert not holds.go_local("a.com")  # no new request in memory: turns from the database
    assert not holds.left_local("a.com")  # one of the two still in flight
    assert holds.left_local("a.com")  # the last: release now
    holds.released(["a.com"])
    assert holds.wanted(["a.com", "c.net"]) == []  # nothing more is held in this pass
    assert not holds.held


def test_a_hold_granted_after_company_arrived_is_given_back_at_once() -> None:
    holds = HostHolds()
    holds.join_company()  # a claim asked before company was seen comes back with holds
    assert holds.granted(["a.com"]) == ["a.com"]
    assert not holds.go_local("a.com")
