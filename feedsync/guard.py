"""Where a request may connect: the address guard, decided from what was observed.

Feed and article links come from the internet, and a link to ``http://192.168.1.1/`` (a
router's admin page) or to ``http://localhost:8080/`` must not be fetched because a
publisher wrote it. The rule, one request (and each of its redirect hops) at a time:

- a **feed**, or a page the user typed (``feedsync add``), is the owner's choice: its first
  hop may connect anywhere. Whether it is "on the LAN" is the address of the peer that
  actually served it, observed on the connection that carried the bytes: never a second
  DNS lookup, never another connection. Its redirects lead onto a private address only
  when that first hop was served from one (a feed on the internet cannot send feedsync
  into the LAN, not even through its own name answering a private address later);
- a **candidate** found on a page by discovery may be private only when the page was;
- an **article** link may be private only on the hosts its entry allows: the host of a
  feed document that was served from a private address, when the link is on that very
  host (RSS-Bridge or FreshRSS on ``localhost`` relaying internet authors' links does not
  open the whole LAN to them), plus the hosts the owner lists in ``[fetch] lan_hosts``,
  or anywhere with ``[fetch] allow_private``. The staging step records that host with the
  entry (``news_summary.lan_host``) from the feed document's peer, once.

:class:`Guard` is asked before every connection is made (each address a name resolves
to, so no SYN reaches a refused one) and before a pooled connection is reused, with the
peer address of that connection (feedsync/pool.py); it records the peer of each hop that
served an answer. The connection is made to the very address that was checked, so a DNS
answer that changes between check and connect (rebinding) cannot slip through.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

import httpx


class PrivateAddressRefused(httpx.ConnectError):
    """A connection the guard refused: permanent (asking again will not help)."""


def is_private_address(address: str) -> bool:
    """Loopback, private (RFC 1918, ULA), link-local, multicast, unspecified, reserved,
    carrier-grade NAT and the other ranges that are not on the public internet."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True  # not an address we understand: do not connect to it
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return bool(
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_unspecified
        or ip.is_reserved
        # what is not on the public internet: carrier-grade NAT (100.64.0.0/10, a
        # provider's or a Tailscale network), benchmarking, documentation ranges
        or not ip.is_global
    )


class Guard:
    """The rule for one request and its redirects (httpx carries it from hop to hop in
    the request's extensions, :data:`EXTENSION`).

    ``free_first``: the first hop may connect anywhere (a feed, a page the user typed);
    the later ones may be private only if the first was served from a private address.
    ``private``: private addresses are allowed on every host. ``hosts``: the hosts on
    which a private address is allowed (IDNA, lower case)."""

    __slots__ = ("_free_first", "_hosts", "_private", "hops")

    def __init__(
        self, *, free_first: bool = False, private: bool = False, hosts: Iterable[str] = ()
    ):
        self._free_first = free_first
        self._private = private
        self._hosts = frozenset(hosts)
        self.hops: list[tuple[str, str]] = []  # (host, peer address) of each hop served

    @classmethod
    def feed(cls) -> Guard:
        """A feed (or a page the user typed): the owner's choice."""
        return cls(free_first=True)

    @classmethod
    def found_on(cls, page: Guard) -> Guard:
        """A feed found on ``page`` by discovery: private only if the page was."""
        return cls(private=page.on_lan)

    @classmethod
    def article(
        cls, *, allow_private: bool, lan_host: str | None, lan_hosts: Iterable[str]
    ) -> Guard:
        """An article link: private only on its entry's LAN host (``lan_host``, None
        when its feed document came from the internet) and, for such an entry, the
        owner's ``lan_hosts``; anywhere with ``allow_private``."""
        if allow_private:
            return cls(private=True)
        if lan_host is None:
            return cls()
        return cls(hosts=(lan_host, *lan_hosts))

    def allows(self, host: str, address: str) -> bool:
        """Whether the next hop, to ``host``, may use a connection to ``address``."""
        if self._private or (self._free_first and not self.hops):
            return True
        if not is_private_address(address):
            return True
        if self._free_first:  # a later hop: as the first one was served
            return is_private_address(self.hops[0][1])
        return host in self._hosts

    def check(self, host: str, address: str) -> None:
        """Raise :class:`PrivateAddressRefused` when :meth:`allows` says no."""
        if not self.allows(host, address):
            raise PrivateAddressRefused(self.refusal(host, address))

    def refusal(self, host: str, address: str) -> str:
        """The one-line reason a hop to ``host`` at ``address`` is refused."""
        if self.hops:
            first = self.hops[0]
            return (
                f"refused: a redirect from {first[0]} ({first[1]}, on the internet) to "
                f"{host}, a private address ({address})"
            )
        return f"refused: {host} is at a private address ({address})"

    def served(self, host: str, address: str) -> None:
        """The hop to ``host`` was answered by the peer at ``address``."""
        self.hops.append((host, address))

    @property
    def peer(self) -> str | None:
        """The address that served the last hop: the document's own."""
        return self.hops[-1][1] if self.hops else None

    @property
    def on_lan(self) -> bool:
        """Whether the document was served from a private address."""
        peer = self.peer
        return peer is not None and is_private_address(peer)


#: the key of the request extension that carries a request's :class:`Guard`
EXTENSION = "feedsync.guard"
