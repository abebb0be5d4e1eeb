"""The values a configuration file may hold, each a parser from TOML to Python.

A key's declaration in :mod:`feedsync.config` names one of these; each raises ValueError
with the sentence the user reads after the key's name (``poll.timeout: expected a
duration like "90s", "30m" or "24h", got "soon"``), so every message is worded here once.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from feedsync.identity import MODES

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)")
_DURATION_UNITS = {
    "ms": 0.001,
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
    "w": 7 * 86400,
}


def parse_duration(text: str) -> timedelta:
    """Parse "90s", "30m", "24h", "7d", "1h30m"; raises ValueError otherwise."""
    compact = text.strip().replace(" ", "")
    parts = _DURATION_PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ValueError(text)
    return timedelta(seconds=sum(float(n) * _DURATION_UNITS[u] for n, u in parts))


def duration(value: Any) -> timedelta:
    if not isinstance(value, str):
        raise ValueError('expected a duration string like "90s", "30m" or "24h"')
    try:
        return parse_duration(value)
    except ValueError:
        raise ValueError(f'expected a duration like "90s", "30m" or "24h", got "{value}"') from None


def positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"expected a whole number of at least 1, got {value!r}")
    return value


def workers(value: Any) -> int | str:
    """``[extract] workers``: a number of processes, or "auto", sized to the board when
    extraction starts (feedsync.board.auto_workers; not imported here, so reading the
    config stays cheap)."""
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f'expected "auto" or a whole number of at least 1, got {value!r}')
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def one_line(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "\r\n"):
        raise ValueError(f"expected one line of text, got {value!r}")
    return value.strip()


def days(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a number of days (0 for never), got {value!r}")
    return value


def size(value: Any) -> int:
    """A byte size: an integer, or "10MB" / "512KB" / "5MiB"."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+)\s*(B|KB|KiB|MB|MiB|GB|GiB)?\s*", value, re.IGNORECASE)
        if m:
            unit = (m.group(2) or "B").lower()
            mult = {
                "b": 1,
                "kb": 1000,
                "kib": 1024,
                "mb": 10**6,
                "mib": 2**20,
                "gb": 10**9,
                "gib": 2**30,
            }[unit]
            if int(m.group(1)) > 0:
                return int(m.group(1)) * mult
    raise ValueError(f'expected a size like "10MB" or a number of bytes, got {value!r}')


def path(value: Any) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a file path, got {value!r}")
    return Path(value).expanduser()


def textfile(value: Any) -> Path:
    """node_exporter's textfile collector reads only files named ``*.prom``."""
    found = path(value)
    if found.suffix != ".prom":
        raise ValueError(
            f"expected a file name ending in .prom (node_exporter reads only those), got {value!r}"
        )
    return found


def database_url(value: Any) -> str:
    """A libpq connection URI; the password in it stays out of every message."""
    if not isinstance(value, str) or not re.match(r"(?i)^postgres(ql)?://", value.strip()):
        raise ValueError(
            'expected a PostgreSQL URI like "postgresql://user@host:5432/feedsync" '
            "(or postgresql:///feedsync?host=/run/postgresql)"
        )
    return value.strip()


def feed_url(value: Any) -> str:
    if not isinstance(value, str) or not re.match(r"(?i)^https?://[^/\s]+", value.strip()):
        raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
    return value.strip()


def host_names(value: Any) -> tuple[str, ...]:
    """A list of host names (or IP addresses), each as feedsync compares hosts: lower case,
    IDNA, no port (feedsync.canonical.host_of)."""
    from feedsync.canonical import canonical_url, host_of

    if not isinstance(value, list):
        raise ValueError(f'expected a list of host names like ["nas.lan"], got {value!r}')
    hosts: list[str] = []
    for item in value:
        name = item.strip() if isinstance(item, str) else ""
        bracketed = name[:1] + name[-1:] == "[]"  # an IPv6 address; no other ":" (a port)
        plain = not any(c in name for c in "@/?#\\") and (":" not in name or bracketed)
        url = canonical_url(f"http://{name}/") if name and plain else None
        host = host_of(url) if url is not None else ""
        if not host or url != f"http://{host if ':' not in host else f'[{host}]'}/":
            raise ValueError(f"expected a host name without scheme, port or path, got {item!r}")
        hosts.append(host)
    return tuple(dict.fromkeys(hosts))


def identity_mode(value: Any) -> str:
    """A feed's identity mode: one of :data:`feedsync.identity.MODES`."""
    if value not in MODES:
        expected = " or ".join(f'"{mode}"' for mode in MODES)
        raise ValueError(f"expected {expected}, got {value!r}")
    return str(value)


#: a port of ``host:port``; "[v6]:port" for an IPv6 address
_LISTEN = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^\s:\[\]/]+)):(?P<port>\d{1,5})$")


def listen_address(value: Any) -> tuple[str, int]:
    """``[serve] listen`` and ``feedsync serve --listen``: "127.0.0.1:8470",
    "[::1]:8470", "0.0.0.0:8470"; port 0 asks the system for a free one. An IP address,
    not a name: which address a name resolves to decides who may connect (the LAN rule
    of feedsync/serve/access.py), so it is written out."""
    import ipaddress

    found = _LISTEN.match(value.strip()) if isinstance(value, str) else None
    host = (found.group("v6") or found.group("host")) if found else ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        found = None
    if found is None or int(found.group("port")) > 65535:
        raise ValueError(
            f'expected an IP address and a port like "127.0.0.1:8470" or "[::1]:8470", '
            f"got {value!r}"
        )
    return host, int(found.group("port"))


_TOKEN = re.compile(r"^[A-Za-z0-9._~-]{16,}$")
TOKEN_HINT = 'python3 -c "import secrets; print(secrets.token_urlsafe(24))"'


def token(value: Any) -> str:
    """``[serve] token``: the secret a reader on the LAN shows. At least 16 characters
    that need no escaping in a URL or a cookie (a guessable token is no lock)."""
    if not isinstance(value, str) or not _TOKEN.match(value.strip()):
        length = len(value.strip()) if isinstance(value, str) else 0
        raise ValueError(
            f"expected at least 16 characters of A-Z a-z 0-9 . _ ~ - (got {length}; "
            f"make one with {TOKEN_HINT})"
        )
    return value.strip()
