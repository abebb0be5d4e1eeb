"""What was asked, checked before any handler sees it: the method, the path and the query
decoded, and refused in one line when they are something no page of feedsync's has a use
for (a control character, a ``..`` segment, bytes that are not UTF-8).

The sizes are bounded before this: h11 refuses a request line and headers longer than
the server's buffer (feedsync/serve/server.py), so nothing here reads an unbounded input.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote_to_bytes

from feedsync.serve.web import Request, Response, text

METHODS = ("GET", "HEAD")
#: parameters a query may have: no page takes more than a few
MAX_FIELDS = 20

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HOST = re.compile(r"^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$")


def _refuse(what: str) -> Response:
    return text(400, f"400 bad request: {what}")


def _decoded_path(raw: bytes) -> str | Response:
    try:
        path = unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return _refuse("the path is not UTF-8")
    if _CONTROL.search(path):
        return _refuse("the path holds a control character")
    if ".." in path.split("/"):
        return _refuse("the path holds a '..' segment")
    return path


def _decoded_query(raw: bytes) -> dict[str, str] | Response:
    try:
        pairs = parse_qsl(
            raw.decode("ascii"),
            keep_blank_values=True,
            encoding="utf-8",
            errors="strict",
            max_num_fields=MAX_FIELDS,
        )
    except UnicodeDecodeError:
        return _refuse("the query is not UTF-8")
    except ValueError:
        return _refuse(f"the query has more than {MAX_FIELDS} parameters")
    query: dict[str, str] = {}
    for name, value in pairs:
        if _CONTROL.search(name) or _CONTROL.search(value):
            return _refuse("the query holds a control character")
        if ".." in value.split("/"):
            return _refuse("the query holds a '..' segment")
        query.setdefault(name, value)
    return query


def headers_of(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Header names in lower case, the first value of each (cookies: all of them)."""
    found: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("ascii", "replace").lower()
        decoded = value.decode("latin-1")
        if key == "cookie" and key in found:
            found[key] = f"{found[key]}; {decoded}"
        else:
            found.setdefault(key, decoded)
    return found


def checked(
    method: bytes, target: bytes, headers: dict[str, str], fallback_host: str
) -> Request | Response:
    """The request a handler may see (no token yet: the access check sets it), or the
    one-line answer that refuses it. ``fallback_host``: ``host[:port]`` of the listening
    socket, for a request whose Host header is missing or not a host."""
    verb = method.decode("ascii", "replace")
    if verb not in METHODS:
        answer = text(405, f"405 method not allowed: {verb[:20]} (only GET and HEAD)")
        return answer._replace(headers=(("Allow", ", ".join(METHODS)),))
    if not target.startswith(b"/"):
        return _refuse("the target must be a path starting with /")
    if any(b > 0x7E for b in target):
        return _refuse("the target holds bytes that are not percent-encoded")
    raw_path, _, raw_query = target.partition(b"?")
    path = _decoded_path(raw_path)
    if isinstance(path, Response):
        return path
    query = _decoded_query(raw_query)
    if isinstance(query, Response):
        return query
    host = headers.get("host", "")
    if not _HOST.match(host):
        host = fallback_host
    return Request(
        method=verb,
        path=path,
        query=query,
        headers=headers,
        base=f"http://{host}",
        token=None,
    )
