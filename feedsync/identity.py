"""Article identity beyond (url, title): revisions and duplicates, as pure decisions.

``UNIQUE(url, title)`` keeps the staging table honest, but publishers break it: they fix
a typo in a title (same URL, new title), move an article (same GUID, new URL), syndicate
one story under several URLs. Every (url, title) is still kept in news_summary; these
rules decide which of those rows are the same article, so that its page is fetched once
and it is stored once:

- Before fetching (a newly staged row): a **revision** of an earlier row of the same
  feed with the same GUID, or of a row with the same URL and another title, or of an
  article whose page named this URL as its canonical one, first seen within the window.
- After extraction: a **duplicate** of an article whose page has the same canonical URL,
  or whose text has a simhash within ``MAX_DISTANCE`` bits (syndicated copies, a few
  words changed).

A feed with ``identity = "url+title"`` (it reuses GUIDs or URLs for different stories,
like a "/live" page) is left out of all of it.

The threshold was measured on the 75 real news pages of ../shared/corpus/articles: the
2,775 pairs of distinct pages are never closer than 16 bits (median 32); copies with three
words changed are at 4 bits (median), 10 at most. ``MAX_DISTANCE = 8`` merges no two of
them; for unrelated text the chance of ≤8 of 64 bits agreeing by accident is about 2e-10
per pair.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

BITS = 64
MAX_DISTANCE = 8
MIN_WORDS = 50  # below this a simhash is not reliable: no fingerprint
SHINGLE = 3
_WORD = re.compile(r"\w+")

AUTO = "auto"
URL_AND_TITLE = "url+title"
MODES = (AUTO, URL_AND_TITLE)


def tokens(text: str) -> list[str]:
    """Words; for scripts written without spaces (Japanese, Chinese), characters."""
    words = _WORD.findall(text.lower())
    if words and sum(map(len, words)) / len(words) > 12:
        return list("".join(words))
    return words


# Bit counting for the simhash, eight bits at a time: _SPREAD[b] holds bit j of the byte b
# in a lane of its own, _LANE bits wide (j * _LANE), so adding spread bytes counts, for
# each of their 8 bits, how many were set. A 64-step Python loop per shingle was ~13 ms
# of an article's extraction; eight additions are ~1 ms in all.
_LANE = 32  # counts up to 2**32 shingles
_LANE_MASK = (1 << _LANE) - 1
_SPREAD = tuple(sum(((b >> j) & 1) << (_LANE * j) for j in range(8)) for b in range(256))


def fingerprint(text: str) -> int | None:
    """64-bit simhash over shingles of three tokens, as a signed integer (SQLite's), or
    None for a text too short to fingerprint.

    Each shingle's 64-bit blake2b hash votes +1 for each bit it has set and -1 for each
    it has not; a bit of the fingerprint is set where the votes are positive, that is
    where more than half of the shingles have it set (counted in lanes, see _SPREAD)."""
    units = tokens(text)
    if len(units) < MIN_WORDS:
        return None
    # here, not at the top: hashlib loads OpenSSL (~7 ms), and most processes that import
    # this module (a cron run with nothing due) never fingerprint anything
    import hashlib

    spread, blake2b = _SPREAD, hashlib.blake2b
    # by byte of the hash, lowest first: the digest is big-endian, so byte k is d[7 - k]
    b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = 0
    shingles = len(units) - SHINGLE + 1
    for start in range(shingles):
        d = blake2b(" ".join(units[start : start + SHINGLE]).encode(), digest_size=8).digest()
        b0 += spread[d[7]]
        b1 += spread[d[6]]
        b2 += spread[d[5]]
        b3 += spread[d[4]]
        b4 += spread[d[3]]
        b5 += spread[d[2]]
        b6 += spread[d[1]]
        b7 += spread[d[0]]
    unsigned = 0
    for byte, lanes in enumerate((b0, b1, b2, b3, b4, b5, b6, b7)):
        for bit in range(8):
            if 2 * (lanes >> (_LANE * bit) & _LANE_MASK) > shingles:
                unsigned |= 1 << (8 * byte + bit)
    return unsigned - (1 << BITS) if unsigned >= 1 << (BITS - 1) else unsigned


_ALL_BITS = (1 << BITS) - 1  # fingerprints are stored signed: compare their 64 bits


def distance(a: int, b: int) -> int:
    """Bits that differ (Hamming distance) between two fingerprints."""
    return ((a ^ b) & _ALL_BITS).bit_count()


class Link(NamedTuple):
    target: int  # news_summary.id (a revision's root) or news.id (a duplicate's article)
    reason: str  # "same GUID", "same URL, new title", "same canonical URL", ...


def revision(*, by_guid: int | None, by_url: int | None, by_canonical: int | None) -> Link | None:
    """Which earlier row a newly staged row is a revision of (the first rule that
    matched, in this order), or None: it is new and its page will be fetched."""
    if by_guid is not None:
        return Link(by_guid, "same GUID")
    if by_url is not None:
        return Link(by_url, "same URL, new title")
    if by_canonical is not None:
        return Link(by_canonical, "same canonical URL")
    return None


def duplicate(
    *,
    by_canonical: int | None,
    print_: int | None,
    recent: Iterable[tuple[int, int]],
) -> Link | None:
    """Which article already in news an extracted page is, or None: store it.

    ``recent``: (news id, fingerprint) of the articles fetched within the window.
    """
    if by_canonical is not None:
        return Link(by_canonical, "same canonical URL")
    if print_ is None:
        return None
    # The closest within MAX_DISTANCE, the first of equals.
    best_gap, best_id = MAX_DISTANCE + 1, 0
    for news_id, other in recent:
        gap = distance(print_, other)
        if gap < best_gap:
            best_gap, best_id = gap, news_id
    if best_gap > MAX_DISTANCE:
        return None
    return Link(best_id, f"same text (fingerprint distance {best_gap} of {BITS})")
