"""Who may read: the rule that lets ``feedsync serve`` on the LAN without opening the
archive to every device on it.

- A loopback listen address (the default, 127.0.0.1:8470) needs nothing: only this
  machine can connect.
- Any other (the LAN, 0.0.0.0, ::) needs two deliberate settings: ``[serve] lan = true``
  AND a secret (``token_file``, or ``token``), at least 16 characters. Without them the
  server refuses to start, saying what to set.
- With a secret, a request from a peer that is not loopback (the socket's own peer
  address: never a header such as X-Forwarded-For, which anyone can write) must show it:
  ``?token=`` (a feed reader's URL) or the ``feedsync_token`` cookie a page sets. A page
  opened with ``?token=`` sets that cookie (HttpOnly, SameSite=Strict) and redirects to
  the same URL without the token, so the token does not stay in the address bar or the
  history. Compared in constant time (hmac.compare_digest).
- Loopback peers read without it while ``trust_loopback`` (the default): they are this
  machine, which can read the database itself. A reverse proxy on this machine makes
  every request loopback: ``trust_loopback = false`` then asks the token of them too.
- The token is never logged nor echoed: :func:`redact` is what a log line shows.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from feedsync import values
from feedsync.serve.web import Response, text

if TYPE_CHECKING:
    from collections.abc import Mapping

    from feedsync.config import ServeConfig

COOKIE = "feedsync_token"
# a year: a phone's browser keeps it; the token changes when the file does
COOKIE_MAX_AGE = 365 * 86400


class AccessRefused(Exception):
    """The server may not start as configured; the message says what to set."""


@dataclass(frozen=True)
class Policy:
    """What the server asks of a request."""

    token: str | None  # None: no secret (a loopback-only server)
    trust_loopback: bool


def is_local(peer: str) -> bool:
    """Whether a peer address is this machine: 127.0.0.0/8, ::1, and an IPv4 loopback
    address mapped into IPv6 (a dual-stack socket's view of 127.0.0.1)."""
    try:
        address = ipaddress.ip_address(peer.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def read_token(serve: ServeConfig) -> str | None:
    """The secret the config names: ``token_file``'s first line, or ``token``."""
    if serve.token_file is None:
        return serve.token
    try:
        written = serve.token_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise AccessRefused(f"serve.token_file: cannot read {serve.token_file}: {reason}") from None
    try:
        return values.token(written)
    except ValueError as exc:
        raise AccessRefused(f"serve.token_file: {serve.token_file}: {exc}") from None


def policy(serve: ServeConfig, listen: tuple[str, int]) -> Policy:
    """The rule for this server, or AccessRefused: a LAN address without ``lan = true``
    and a secret, or ``trust_loopback = false`` without a secret."""
    token = read_token(serve)
    host = listen[0]
    if not is_local(host):
        shown = f"[{host}]:{listen[1]}" if ":" in host else f"{host}:{listen[1]}"
        if not serve.lan:
            raise AccessRefused(
                f"{shown} is not a loopback address: to serve the LAN set [serve] lan = true "
                'and a token_file = "/path" holding a token (or listen on 127.0.0.1)'
            )
        if token is None:
            raise AccessRefused(
                f'{shown} is on the LAN: set [serve] token_file = "/path" (or token = "...") '
                f"to a token of at least 16 characters, made with {values.TOKEN_HINT}"
            )
    if not serve.trust_loopback and token is None:
        raise AccessRefused(
            "[serve] trust_loopback = false asks every reader for a token: set "
            '[serve] token_file = "/path" (or token = "...")'
        )
    return Policy(token=token, trust_loopback=serve.trust_loopback)


def _cookie_token(headers: Mapping[str, str]) -> str | None:
    raw = headers.get("cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except CookieError:
        return None
    found = jar.get(COOKIE)
    return found.value if found is not None else None


def _matches(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


@dataclass(frozen=True)
class Verdict:
    """What the access check decided: ``refusal`` answers the request instead of its
    handler; otherwise ``token`` is what the handler's links carry (None: none)."""

    refusal: Response | None
    token: str | None


def check(
    rule: Policy,
    peer: str,
    path: str,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    *,
    page: bool,
) -> Verdict:
    """May this request be answered? ``page``: an HTML page (a browser, which keeps a
    cookie), not a feed document (a reader, whose URL carries the token)."""
    if rule.token is None:
        return Verdict(None, None)
    given = query.get("token")
    if given is not None:
        if not _matches(given, rule.token):
            return Verdict(text(403, "403 wrong token"), None)
        if page:
            rest = {k: v for k, v in query.items() if k != "token"}
            target = quote(path) + (f"?{urlencode(rest)}" if rest else "")
            cookie = (
                f"{COOKIE}={rule.token}; Path=/; Max-Age={COOKIE_MAX_AGE}; HttpOnly; "
                "SameSite=Strict"
            )
            answer = text(303, f"303 see {target}")
            return Verdict(
                answer._replace(headers=(("Location", target), ("Set-Cookie", cookie))), None
            )
        return Verdict(None, rule.token)
    if _matches(_cookie_token(headers), rule.token):
        return Verdict(None, rule.token)
    if rule.trust_loopback and is_local(peer):
        return Verdict(None, None)
    return Verdict(
        text(401, "401 a token is needed: add ?token=... to the URL (see [serve] in the config)"),
        None,
    )


_TOKEN_IN_QUERY = re.compile(r"(?i)([?&]token=)[^&#]*")


def redact(target: str) -> str:
    """A request target fit for a log line: ``token=...`` whatever it held."""
    return _TOKEN_IN_QUERY.sub(r"\1...", target)


def token_file_mode_warning(serve: ServeConfig) -> str | None:
    """A token file others may read is a token others have: said at the start."""
    if serve.token_file is None:
        return None
    try:
        mode = Path(serve.token_file).stat().st_mode
    except OSError:
        return None
    if mode & 0o004:
        return f"{serve.token_file} is readable by every user: chmod o-r it"
    return None
