"""The decisions of the pipeline, as pure functions: data in, data out, no I/O.

Which entries of a feed are candidates for staging, how far ``latest_published`` may
advance, which date an entry really has, how long a failed extraction waits before its
next attempt and when it is given up. The I/O stages around these (fetch, parse,
storage, extract) stay thin, and these rules are tested directly
(tests/test_decide.py), the way lemon24/reader keeps its ``Decider`` free of I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from feedsync import timestamps
from feedsync.records import (
    FAILED,
    GONE,
    NOT_MODIFIED,
    STAGED,
    Answer,
    Entry,
    FailureOutcome,
    Feed,
    HostWait,
    ParsedFeed,
    PollIntent,
    RedirectState,
)

# A publisher's clock may run a little ahead of ours; beyond this an entry's date is
# "in the future" and is clamped to the time we fetched it.
CLOCK_SKEW = timedelta(minutes=5)
# Dates before this are epoch-zero bugs and the like, not news: treated as "no date".
EARLIEST_PLAUSIBLE = datetime(1990, 1, 1, tzinfo=UTC)
# Dates further ahead than this are not a clock problem but garbage: "no date" as well.
FUTURE_ABSURD = timedelta(days=366)
# The longest a failed extraction waits before its next attempt, however many failures.
MAX_RETRY_DELAY = timedelta(days=1)


def published_date(raw: datetime | None, fetched_at: datetime) -> str | None:
    """The date an entry is staged with, or None for "no usable date".

    A date later than the fetch time (plus ``CLOCK_SKEW``) is clamped to the fetch time,
    so one entry dated in the future can never push ``latest_published`` ahead and hide
    the entries that follow it. Absurd dates (before 1990, more than a year ahead) count
    as no date, which makes the entry a candidate on every poll (INSERT OR IGNORE keeps
    it from landing twice).
    """
    if raw is None:
        return None
    if raw.tzinfo is None:
        raw = raw.replace(tzinfo=UTC)
    if raw < EARLIEST_PLAUSIBLE or raw > fetched_at + FUTURE_ABSURD:
        return None
    if raw > fetched_at + CLOCK_SKEW:
        raw = fetched_at
    return timestamps.to_iso(raw)


def cutoff(latest_published: str, lookback: timedelta) -> str:
    """The oldest date still staged for a feed: ``latest_published - lookback``.

    '' (a feed never staged) gives '' and every dated entry passes.
    """
    if not latest_published:
        return ""
    return timestamps.shift(latest_published, -lookback)


def candidates(
    entries: Iterable[Entry], latest_published: str, lookback: timedelta
) -> tuple[Entry, ...]:
    """The entries worth offering to the staging insert, in feed order, without repeats.

    An entry without a date, or dated at or after ``latest_published - lookback``. The
    cut-off is only an optimisation: ``INSERT OR IGNORE`` on ``UNIQUE(url, title)`` is
    the truth, so a late or back-dated entry inside the lookback still lands and a
    duplicate never does. The cut-off is per feed: an entry too old for feed A is still
    a candidate in feed B whose ``latest_published`` is older.
    """
    oldest = cutoff(latest_published, lookback)
    seen: set[tuple[str, str]] = set()
    chosen: list[Entry] = []
    for entry in entries:
        key = (entry.url, entry.title)
        if key in seen:
            continue
        if entry.published is None or entry.published >= oldest:
            seen.add(key)
            chosen.append(entry)
    return tuple(chosen)


def newest_published(staged: Iterable[Entry]) -> str:
    """The value ``latest_published`` advances to: the newest date staged, '' if none.

    Storage applies it as ``max(latest_published, this)`` in SQL, so it never moves
    backwards, whichever process writes last.
    """
    return max((e.published for e in staged if e.published), default="")


def retry_delay(attempts: int, backoff: timedelta) -> timedelta:
    """Exponential backoff: ``backoff`` after the first failure, doubling, capped at a day."""
    if attempts < 1:
        return timedelta(0)
    factor = 1 << min(attempts - 1, 30)
    return min(backoff * factor, max(MAX_RETRY_DELAY, backoff))


def after_failure(
    attempts_before: int,
    error: str,
    now: datetime,
    *,
    max_attempts: int,
    backoff: timedelta,
    permanent: bool = False,
) -> FailureOutcome:
    """How a failed extraction attempt is recorded.

    The attempt counts; after ``max_attempts`` (or at once for a permanent failure such
    as 410 Gone or a PDF) the row becomes ``gone`` and is never tried again. Otherwise it
    is ``failed`` and becomes due again after ``retry_delay``.
    """
    attempts = attempts_before + 1
    if permanent or attempts >= max_attempts:
        return FailureOutcome(state="gone", attempts=attempts, next_attempt_at=None, error=error)
    due = timestamps.to_iso(now + retry_delay(attempts, backoff))
    return FailureOutcome(state="failed", attempts=attempts, next_attempt_at=due, error=error)


WEEK = timedelta(days=7)


def next_poll_at(
    feed: Feed,
    now: datetime,
    *,
    ok: bool,
    hint: timedelta | None,
    base: timedelta,
    min_interval: timedelta,
    max_interval: timedelta,
    jitter: float,
) -> str:
    """When to poll ``feed`` next, after a poll at ``now`` that succeeded (``ok``) or not.

    - A failing feed backs off: ``base`` doubling with each failure in a row, up to
      ``max_interval``; never dropped.
    - A feed with a publishing history is polled at its average gap between entries over
      the last week (about one new entry per poll): rarely-publishing feeds less often.
    - A feed quiet for a week waits ``max_interval``; a new one ``base``.
    - The server's own hint (RSS <ttl>, Cache-Control max-age, Retry-After) is honoured:
      never sooner than it asks.
    - All within [``min_interval``, ``max_interval``], then spread by ``jitter`` (a
      fraction, e.g. random in [-0.1, 0.1], chosen by the caller) so that feeds added
      together do not stay in lockstep.
    """
    if not ok:
        errors = feed.error_count + 1
        interval = min(base * (1 << min(errors - 1, 30)), max_interval)
    elif feed.recent_entries >= 2 and feed.recent_oldest:
        span = max(now - timestamps.from_iso(feed.recent_oldest), timedelta(minutes=1))
        interval = span / feed.recent_entries
    elif feed.polled_before and (
        not feed.latest_published or timestamps.from_iso(feed.latest_published) < now - WEEK
    ):
        interval = max_interval
    else:
        interval = base
    if hint is not None:
        interval = max(interval, hint)
    interval = min(max(interval, min_interval), max_interval)
    return timestamps.to_iso(now + interval * (1 + jitter))


HOST_BACKOFF = timedelta(minutes=1)


def host_wait(backoff_count: int, retry_after: timedelta | None, cap: timedelta) -> timedelta:
    """How long a host that answered 429 or 503 is left alone.

    Its Retry-After when it gave one (capped at ``cap``: a server must not silence a feed
    for a year), else a backoff of one minute doubling with each refusal in a row.
    """
    if retry_after is not None:
        return min(retry_after, cap)
    return min(HOST_BACKOFF * (1 << min(backoff_count, 30)), cap)


@dataclass(frozen=True)
class HostBlock:
    """A host left alone for ``wait`` from now, ``backoff_count`` blocks in a row."""

    wait: timedelta
    backoff_count: int


def host_block(
    left: timedelta, backoff_count: int, retry_after: timedelta | None, cap: timedelta
) -> HostBlock:
    """The block a 429 or 503 puts on a host, given what is ``left`` of the block in force
    (zero or less: none) and the host's ``backoff_count`` (blocks in a row so far).

    Requests in flight together are refused together: a refusal that comes while a block
    is in force belongs to that block. It may make it longer (its own Retry-After), never
    a step further in the backoff, or one plain 429 answered to two requests at once, or
    to a queue of them, would cost the host 2, 4, ... minutes, up to the cap, instead of
    one. Only a refusal once the block is over (the host was asked again, and still says
    no) is a new block, a step further: ``host_wait``."""
    if left > timedelta(0):
        asked = min(retry_after, cap) if retry_after is not None else timedelta(0)
        return HostBlock(max(left, asked), backoff_count)
    return HostBlock(host_wait(backoff_count, retry_after, cap), backoff_count + 1)


@dataclass(frozen=True)
class HostTurn:
    """A request to a host, granted across every process on the database: ``slot`` of the
    host's ``per_host`` concurrency slots, to start at ``start`` (seconds since the epoch,
    the database's clock); the next request to the host may start at ``next_start``."""

    slot: int
    start: float
    next_start: float


# A host's slot is leased for [poll] lease but never longer than this (renewed while the
# request runs): a poller that dies mid-request frees the host within it.
SLOT_LEASE = timedelta(seconds=15)
# How far ahead of the database's clock a reserved start or a slot's lease may lie before
# it is taken for a clock that stepped back, beyond what any poller can have reserved.
CLOCK_SLACK_S = 60.0
# The slot number of a host held whole by one process, which paces it in memory
# (feedsync/holds.py): while it lives, no other process gets a turn there.
HOLD = -1
# The slot number of a process refused a turn on a held host: it asks the holder to give
# the host up (the holder sees it when it records its next feed there). Not a request.
WANTED = -2


def _horizon(now: float, delay: float, live: int) -> float:
    """The furthest start any poller can have reserved, with ``live`` slots in use."""
    return now + delay * (live + 1) + CLOCK_SLACK_S


def _plausible(now: float, delay: float, taken: Iterable[tuple[int, float]]) -> set[int]:
    """The host's slots held by a live lease that is no further ahead than anyone can
    have leased it (what lies further is left by a clock that stepped back)."""
    live = {slot: until for slot, until in taken if until > now}
    last = _horizon(now, delay, len(live)) + SLOT_LEASE.total_seconds()
    return {slot for slot, until in live.items() if until <= last}


def host_turn(
    now: float,
    next_start: float,
    delay: float,
    taken: Iterable[tuple[int, float]],
    slots: int,
) -> HostTurn | None:
    """A host's next request, from what the database says (its clock ``now``, the host's
    ``next_start``, its slots as (slot, lease_until)): the lowest free slot of ``slots``,
    a start no earlier than ``next_start`` and spaced ``delay`` from the next one. None
    when every slot is taken (``per_host`` requests in flight already).

    A slot whose lease is over is free (its poller died). So is a lease, and so is a
    ``next_start``, further ahead than anyone can have reserved: what is left of a clock
    that stepped back (a Pi has no real-time clock; NTP sets it after boot), which must
    not keep a host waiting for the hours it stepped.

    A host held whole by one process (slot :data:`HOLD`) has no slot free for anyone
    until the hold ends."""
    taken = [(slot, until) for slot, until in taken if slot != WANTED]
    busy = _plausible(now, delay, taken)
    slot = next((n for n in range(slots) if n not in busy), None)
    if slot is None or HOLD in busy:
        return None
    if next_start > _horizon(now, delay, sum(until > now for _, until in taken)):
        next_start = now
    start = max(now, next_start)
    return HostTurn(slot=slot, start=start, next_start=start + delay if delay > 0 else next_start)


def held(now: float, delay: float, taken: Iterable[tuple[int, float]]) -> bool:
    """Whether the host is held whole by a process (a live :data:`HOLD`, as
    :func:`host_turn` sees it): a process refused a turn there asks for it."""
    return HOLD in _plausible(now, delay, taken)


def may_hold(now: float, delay: float, taken: Iterable[tuple[int, float]]) -> bool:
    """Whether one process may hold the host whole (and pace it in memory): no request
    to it is in flight anywhere, nor is it held by another (``taken`` as in
    :func:`host_turn`; a process's own hold is renewed, not refused), nor wanted by a
    process refused a turn there."""
    return not _plausible(now, delay, taken)


def redirect(
    current: str, pending: str | None, seen: int, moved_to: str | None, by_308: bool
) -> RedirectState:
    """What a feed response that came through permanent redirects does to the feed's URL.

    Called only for responses that really are the feed (parsed, or 304): captive portals
    answer 301 to everything, with a login page. A 308 moves the feed at once; a 301 only
    once the same target was seen on two polls in a row. A poll without a redirect
    forgets a pending one.
    """
    if moved_to is None or moved_to == current:
        return RedirectState(None, None, 0)
    if by_308:
        return RedirectState(moved_to, None, 0)
    count = seen + 1 if pending == moved_to else 1
    if count >= 2:
        return RedirectState(moved_to, None, 0)
    return RedirectState(None, moved_to, count)


@dataclass(frozen=True)
class PollRules:
    """The settings a feed poll's decision uses (``[poll]``, ``[identity]``, ``[extract]``)."""

    base: timedelta
    min_interval: timedelta
    max_interval: timedelta
    lookback: timedelta
    identity_window: timedelta
    extract_lease: timedelta | None  # None: staged rows are left free for anyone (stage only)


NO_LEASE = "1970-01-01T00:00:00Z"  # a lease already over


def poll(
    feed: Feed,
    now: datetime,
    rules: PollRules,
    *,
    jitter: float,
    owner: str,
    answer: Answer | None = None,
    parsed: ParsedFeed | None = None,
    error: str | None = None,
    hint: timedelta | None = None,
    gone: bool = False,
    host_wait: HostWait | None = None,
    host_clear: str | None = None,
) -> PollIntent:
    """The whole of one feed poll's outcome, as one intent for ``Storage.record_poll``.

    - ``error``: no feed this time (network, HTTP status, not a feed, a parser bug):
      FAILED, retried with the failing feed's backoff and the server's ``hint``
      (Retry-After); with ``gone`` (410) the feed is disabled instead, never deleted.
    - ``answer`` without ``parsed``: 304, the validators still hold.
    - ``answer`` and ``parsed``: the candidates (``candidates``), how far
      ``latest_published`` advances (``newest_published``), the feed's title, warning
      and validators, and the next poll at the feed's pace, no sooner than its <ttl> or
      max-age asks.
    A response that really is the feed (parsed, or 304) also says where the feed lives
    (``redirect``); a failure says nothing about that. ``host_wait`` / ``host_clear``:
    the host's politeness state, written with the poll.
    """
    at = timestamps.to_iso(now)

    def next_at(ok: bool, asked: timedelta | None) -> str:
        return next_poll_at(
            feed,
            now,
            ok=ok,
            hint=asked,
            base=rules.base,
            min_interval=rules.min_interval,
            max_interval=rules.max_interval,
            jitter=jitter,
        )

    def intent(next_poll: str | None, outcome: str, **fields: Any) -> PollIntent:
        return PollIntent(
            feed.id,
            at,
            next_poll,
            outcome,
            owner=owner,
            host_wait=host_wait,
            host_clear=host_clear,
            **fields,
        )

    if error is not None or answer is None:
        reason = error or "no answer"
        if gone:
            return intent(None, GONE, error=f"{reason}: the publisher removed this feed")
        return intent(next_at(False, hint), FAILED, error=reason)
    moved = feed_move(feed, answer)
    if parsed is None:
        return intent(
            next_at(True, answer.max_age),
            NOT_MODIFIED,
            etag=answer.etag,
            last_modified=answer.last_modified,
            redirect=moved,
        )
    chosen = candidates(parsed.entries, feed.latest_published, rules.lookback)
    asked = max(parsed.ttl or timedelta(0), answer.max_age or timedelta(0))
    return intent(
        next_at(True, asked),
        STAGED,
        entries=chosen,
        newest_published=newest_published(chosen),
        warning=parsed.warning,
        feed_title=parsed.title,
        etag=answer.etag,
        last_modified=answer.last_modified,
        redirect=moved,
        identity=feed.identity,
        window_start=timestamps.to_iso(now - rules.identity_window),
        # rows this pass will not extract are left free for whoever extracts next
        lease_until=(
            timestamps.to_iso(now + rules.extract_lease) if rules.extract_lease else NO_LEASE
        ),
    )


def feed_move(feed: Feed, answer: Answer) -> RedirectState | None:
    """What a response that really is the feed says about its URL (``redirect``), or None
    when nothing changes: no write."""
    state = redirect(
        feed.url, feed.redirect_to, feed.redirect_seen, answer.moved_to, answer.moved_by_308
    )
    if state == RedirectState(None, feed.redirect_to, feed.redirect_seen):
        return None
    return state


def move_note(intent: PollIntent, refused: str | None, by_308: bool) -> str | None:
    """The line worth telling about a poll's move (not an error), or None."""
    if refused:
        return f"cannot follow its move: {refused}; disabled"
    move = intent.redirect
    if move is None or move.move_to is None:
        return None
    how = "308" if by_308 else "301, seen twice"
    return f"moved permanently to {move.move_to} ({how}): the feed now uses it"


def article_published(
    feed_published: str | None, page_date: str | None, now: datetime
) -> str | None:
    """The date stored with an article: the feed's, else the page's own (YYYY-MM-DD...)."""
    if feed_published:
        return feed_published
    if not page_date:
        return None
    try:
        parsed = datetime.fromisoformat(page_date.replace("Z", "+00:00"))
    except ValueError:
        return None
    return published_date(parsed, now)
