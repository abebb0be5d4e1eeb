"""Reaching a PostgreSQL server: the optional driver (a one-line hint when it is not
installed), the parts of a URL, the URL as shown (never a password), and libpq's reason
for a failed connection with any password taken out."""

from __future__ import annotations

import os
from typing import Any

from feedsync.storage_errors import StorageError

INSTALL_HINT = (
    "the PostgreSQL driver is not installed: pip install 'feedsync[postgresql]' "
    "(or install.sh --postgresql)"
)


def driver() -> Any:
    """psycopg, or a one-line StorageError saying what to install."""
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise StorageError(INSTALL_HINT) from None
    return psycopg


def url_parts(url: str) -> dict[str, str]:
    """host, port, dbname, user of a libpq URI (libpq's defaults where it names none),
    never the password."""
    psycopg = driver()
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise StorageError(
            f"[storage] url is not a valid PostgreSQL URI: {first_line(exc)}"
        ) from None
    user = str(info.get("user") or os.environ.get("PGUSER") or login())
    return {
        "host": str(info.get("host") or os.environ.get("PGHOST") or "local socket"),
        "port": str(info.get("port") or os.environ.get("PGPORT") or "5432"),
        "dbname": str(info.get("dbname") or os.environ.get("PGDATABASE") or user),
        "user": user,
    }


def login() -> str:
    import getpass

    return getpass.getuser()


def display_url(url: str) -> str:
    """The server and database, for messages and ``status``: no password, ever."""
    parts = url_parts(url)
    host = parts["host"]
    where = f"{host}:{parts['port']}" if not host.startswith("/") else f"[{host}]"
    return f"postgresql://{parts['user']}@{where}/{parts['dbname']}"


def first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def reason(exc: BaseException, url: str) -> str:
    """libpq's own words for a failed connection, cut to what matters (after the last
    "failed:"), without the password should it ever appear."""
    text = " ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip())
    reason = text.rsplit("failed:", 1)[-1].strip().removeprefix("FATAL:").strip() or text
    psycopg = driver()
    try:
        secret = psycopg.conninfo.conninfo_to_dict(url).get("password")
    except psycopg.Error:
        secret = None
    for value in (secret, os.environ.get("PGPASSWORD")):
        if value:
            reason = reason.replace(str(value), "***")
    return reason
