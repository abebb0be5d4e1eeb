"""Canonical URLs: two spellings of one article must land as one row.

``canonical_url(link, base)`` resolves ``link`` against ``base`` and then:

- lowercases the scheme and host, turns an internationalised host into its IDNA form,
- drops the default port (80 for http, 443 for https), the fragment and the userinfo,
- removes tracking parameters (``utm_*``, ``fbclid``, ``gclid``, ``mc_cid``, ...: the
  list is ``TRACKING_PARAMS`` / ``TRACKING_PREFIXES``), keeping every other parameter
  exactly as written and in its order,
- percent-encodes what must be (IRI to URI, via w3lib, Scrapy's maintained URL library),
  with upper-case hex and unreserved characters decoded (RFC 3986 6.2.2),
- gives an empty path as ``/`` and resolves ``.`` / ``..`` segments.

Only http and https come out; anything else (``mailto:``, ``javascript:``, no host, a
malformed port) gives None, and the caller counts it as skipped. It never raises.

Why not courlan (which ships with trafilatura): its ``normalize_url`` decodes the query
with ``parse_qs``, which drops value-less keys, so ``/story?123`` and ``/story?456`` both
become ``/story``: different articles merged into one, and the wrong page fetched. Its
tracker pattern is a substring search (``ref`` also removes ``reference=``). Keeping the
query as written and removing only parameters known to be tracking is the safe side:
a missed tracker costs at worst a second copy, a wrong removal loses an article.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit, urlunsplit

# Parameters that only ever identify a campaign or a click, never the page. Matched on the
# lowercased parameter name, exactly.
TRACKING_PARAMS = frozenset(
    {
        "fbclid",
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "msclkid",
        "yclid",
        "twclid",
        "ttclid",
        "li_fat_id",
        "igshid",
        "igsh",
        "mc_cid",
        "mc_eid",
        "_ga",
        "_gl",
        "_hsenc",
        "_hsmi",
        "__hssc",
        "__hstc",
        "__hsfp",
        "hsctatracking",
        "mkt_tok",
        "oly_anon_id",
        "oly_enc_id",
        "vero_conv",
        "vero_id",
        "wickedid",
        "ncid",
        "sr_share",
        "cmpid",
        "ocid",
        "spm",
        "xtor",
        "at_medium",
        "at_campaign",
    }
)
# Parameter-name prefixes that are tracking (utm_source, utm_medium, pk_campaign, ...).
TRACKING_PREFIXES = ("utm_", "pk_", "mtm_", "itm_", "ga_", "hmb_", "ref_src")

_PERCENT = re.compile(r"%([0-9a-fA-F]{2})")
_CONTROL = re.compile(r"[\x00-\x1f]")
# The ASCII characters that w3lib's safe_url_string leaves as they are wherever they stand
# in a URL (tests/test_canonical.py checks it on every release we run): a URL made of
# these alone is a URI already, and the call, a third of canonical_url's time on the
# common case of a plain ASCII link, is skipped. "'", "#", "[", "]" and the rest it may
# escape send a link the slow way.
_PLAIN_URI = re.compile(r"[A-Za-z0-9\-._~:/?@!$&()*+,;=%]*")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Longer than any real article URL; beyond this a "link" is garbage or an attack.
MAX_URL_LENGTH = 4096


def _normalise_escapes(part: str) -> str:
    """%7e -> ~, %c3%a9 -> %C3%A9: one spelling for each percent-escape."""

    def fix(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    return _PERCENT.sub(fix, part)


def _is_tracking(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRACKING_PARAMS or lowered.startswith(TRACKING_PREFIXES)


def _clean_query(query: str) -> str:
    """Drop tracking parameters; keep every other one byte for byte, in order."""
    if not query:
        return ""
    kept = [
        pair
        for pair in query.split("&")
        if pair and not _is_tracking(_normalise_escapes(pair.split("=", 1)[0]))
    ]
    return "&".join(kept)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4, so /a/./b/../c and /a/c are one spelling."""
    if "." not in path or ("/." not in path and path.startswith("/")):
        return path  # no "." or ".." segment
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    result = "/".join(output)
    return result if result.startswith("/") else "/" + result


def canonical_url(link: str, base: str | None = None) -> str | None:
    """The canonical spelling of ``link`` (resolved against ``base``), or None.

    None means: not an http(s) URL with a host, or not parseable. Idempotent:
    ``canonical_url(canonical_url(x)) == canonical_url(x)``.
    """
    try:
        return _canonical(link, base)
    except (ValueError, UnicodeError, TypeError):
        return None


def _as_uri(iri: str) -> str:
    """A URL that is not a plain URI already, percent-encoded by w3lib. Imported here,
    for the first such link: w3lib.url imports urllib.request (http.client, email,
    ~25 ms of CPU here), which a run that fetches nothing (cron's ``run --due`` with
    nothing due, its config's plain feed URLs canonical) never needed."""
    from w3lib.url import safe_url_string

    return safe_url_string(iri)


# The common link, already canonical but for its port, its tracking parameters and an
# empty path: lowercase http(s) scheme and host, a path of unreserved characters without
# "." segments, a query without escapes, no fragment, params or userinfo. The
# general way (two splits, two joins, the host parsed twice) costs ~6 us of CPU per link,
# most of the normalising of a feed's entries; this one ~1.5 us. Anything else, and
# every doubt, takes the general way (tests/test_canonical.py checks they agree).
_SIMPLE = re.compile(
    r"(https?)://([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::([0-9]{1,5}))?"
    r"((?:/[A-Za-z0-9\-_~][A-Za-z0-9\-._~]*|/)*)(?:\?([A-Za-z0-9\-._~=&+,:/]+))?"
)


def _simple(link: str) -> str | None:
    """``link``'s canonical form when it has the common shape (``_SIMPLE``), else None
    (which says only: not simple)."""
    match = _SIMPLE.fullmatch(link)
    if match is None:
        return None
    scheme, host, port, path, query = match.groups()
    number = None if port is None else int(port)
    if number is not None and number > 65535:
        return None
    url = f"{scheme}://{_netloc(scheme, host, number)}{path or '/'}"
    query = _clean_query(query or "")
    return f"{url}?{query}" if query else url


def _netloc(scheme: str, host: str, port: int | None) -> str:
    """The host, with its port unless that is the scheme's default."""
    return host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"


def _canonical(link: str, base: str | None) -> str | None:
    link = link.strip()
    if not link or len(link) > MAX_URL_LENGTH:
        return None
    simple = _simple(link)
    return simple if simple is not None else _general(link, base)


def _general(link: str, base: str | None) -> str | None:
    """Any link (stripped, not too long), the general way."""
    if _CONTROL.search(link):
        return None
    given = urlsplit(link)
    if given.scheme in _DEFAULT_PORTS and not given.netloc:  # (urlsplit lowercases it)
        return None  # "https://" or "http:/path": not resolvable against the base
    if base and (given.scheme not in _DEFAULT_PORTS or ";" in given.path):
        parts = urlsplit(urljoin(base, link))
    else:  # absolute: urljoin gives it back as it is (but for an empty ";params")
        parts = given
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    # IRI -> URI: non-ASCII path/query characters percent-encoded, host to IDNA, lowercase.
    unsplit = urlunsplit((scheme, parts.netloc, parts.path, parts.query, ""))
    safe = urlsplit(unsplit if _PLAIN_URI.fullmatch(unsplit) else _as_uri(unsplit))
    host = safe.hostname
    if not host:
        return None
    port = safe.port  # raises ValueError on a malformed port
    host = host.lower().rstrip(".")
    if not host or any(c in host for c in "%/\\ @"):
        return None
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = _netloc(scheme, host, port)
    path = _remove_dot_segments(_normalise_escapes(safe.path)) or "/"
    if path.endswith(";") and ";" not in path[path.rfind("/") + 1 : -1]:
        # an empty ";params" on the last segment, which urljoin drops from an absolute
        # link: dropped always, so that a canonical URL is canonical with a base or not
        path = path[:-1] or "/"
    query = _clean_query(_normalise_escapes(safe.query))
    result = urlunsplit((scheme, netloc, path, query, ""))
    return result if len(result) <= MAX_URL_LENGTH else None


def host_of(url: str) -> str:
    """The host part of a canonical URL (for per-host limits); '' when there is none."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def without_feed_scheme(url: str) -> str:
    """``feed://host/x`` -> ``http://host/x``; ``feed:https://...`` -> ``https://...``:
    what browsers and feed readers make of the ``feed:`` links pages carry, for ``add``
    and ``import-opml`` alike. Any other text as it is (stripped)."""
    stripped = url.strip()
    lowered = stripped.lower()
    if lowered.startswith("feed:http://") or lowered.startswith("feed:https://"):
        return stripped[5:]
    if lowered.startswith("feed://"):
        return "http://" + stripped[7:]
    return stripped
