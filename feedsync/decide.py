"""The decisions of the pipeline, as pure functions: data in, data out, no I/O.

Which entries of a feed are candidates for staging, how far ``latest_published`` may
advance, which date an entry really has, how long a failed extraction waits before its
next attempt and when it is given up. The I/O stages around these (fetch, parse,
storage, extract) stay thin, and these rules are tested directly
(tests/test_decide.py), the way lemon24/reader keeps its ``Decider`` free of I/O. A
host's rules (its turn across processes, a 429/503 block) are
feedsync/politeness/rules.py's.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from feedsync import clock, timestamps
from feedsync.records import (
    FAILED,
    GONE,
    NOT_MODIFIED,
    STAGED,
    Answer,
    Entry,
    Failed,
    FailureOutcome,
    Feed,
    FetchOutcome,
    NotModified,
    PollIntent,
    RedirectState,
)

# A publisher's clock may run a little ahead of ours: an entry dated up to this far past
# our clock counts as published now for the feed's cut-off.
CLOCK_SKEW = timedelta(minutes=5)
# Dates before this are epoch-zero bugs and the like, not news: treated as "no date".
EARLIEST_PLAUSIBLE = datetime(1990, 1, 1, tzinfo=UTC)
# Dates further ahead of a plausible clock than this are not a clock problem but
# garbage: "no date" as well.
FUTURE_ABSURD = timedelta(days=366)
# The longest a failed extraction waits before its next attempt, however many failures.
MAX_RETRY_DELAY = timedelta(days=1)


def published_date(raw: datetime | None, fetched_at: datetime) -> str | None:
    """The date an entry is staged with: the feed's, as given; None for "no usable date".

    A date later than our clock is kept too: the clock that says so may be the wrong one
    (a Pi boots at 1970 or at its last shutdown, and NTP sets it later), and a real date
    replaced by a wrong "now" would be wrong for good. What a future date could do harm
    to is bounded where it is used instead: ``latest_published`` never passes the clock
    that polled (``newest_published``), and the feed's cut-off never passes the clock
    that reads it (``cutoff``), so one entry dated ahead cannot hide the ones that follow.
    Absurd dates count as no date, which makes the entry a candidate on every poll
    (INSERT OR IGNORE keeps it from landing twice): before 1990, or more than a year ahead
    of a clock that may be right (a clock reading before ``clock.EARLIEST`` is not: at
    1970 every real date is decades ahead).
    """
    if raw is None:
        return None
    if raw.tzinfo is None:
        raw = raw.replace(tzinfo=UTC)
    if raw < EARLIEST_PLAUSIBLE:
        return None
    if fetched_at >= clock.EARLIEST and raw > fetched_at + FUTURE_ABSURD:
        return None
    return timestamps.to_iso(raw)


def cutoff(latest_published: str, lookback: timedelta, now: datetime | None = None) -> str:
    """The oldest date still staged for a feed: ``latest_published - lookback``, and
    never later than ``now - lookback``: a ``latest_published`` ahead of the clock (set
    while the clock ran ahead, or by an entry dated ahead) must not hide what is
    published after it. A clock that is behind only moves the cut-off earlier: more
    candidates, never fewer.

    '' (a feed never staged) gives '' and every dated entry passes.
    """
    if not latest_published:
        return ""
    if now is not None:
        latest_published = min(latest_published, timestamps.to_iso(now + CLOCK_SKEW))
    return timestamps.shift(latest_published, -lookback)


def candidates(
    entries: Iterable[Entry],
    latest_published: str,
    lookback: timedelta,
    now: datetime | None = None,
) -> tuple[Entry, ...]:
    """The entries worth offering to the staging insert, in feed order, without repeats.

    An entry without a date, or dated at or after the feed's ``cutoff``. The cut-off is
    only an optimisation: ``INSERT OR IGNORE`` on ``UNIQUE(url, title)`` is the truth,
    so a late or back-dated entry inside the lookback still lands and a duplicate never
    does. The cut-off is per feed: an entry too old for feed A is still a candidate in
    feed B whose ``latest_published`` is older.
    """
    oldest = cutoff(latest_published, lookback, now)
    chosen: dict[tuple[str, str], Entry] = {}
    for entry in entries:
        key = (entry.url, entry.title)
        first = chosen.get(key)
        if first is not None:
            # a repeat: the first copy's fields, with the first date any copy gives (an
            # undated copy first lost the date a later one carried)
            if first.published is None and entry.published is not None:
                chosen[key] = first._replace(published=entry.published)
            continue
        if entry.published is None or entry.published >= oldest:
            chosen[key] = entry
    return tuple(chosen.values())


def newest_published(staged: Iterable[Entry], now: datetime | None = None) -> str:
    """The value ``latest_published`` advances to: the newest date staged, but no later
    than ``now``, the clock that polled (an entry dated ahead keeps its date; the feed's
    cut-off does not follow it there); '' if none.

    Storage applies it as ``max(latest_published, this)`` in SQL, so it never moves
    backwards, whichever process writes last.
    """
    newest = max((e.published for e in staged if e.published), default="")
    if newest and now is not None:
        newest = min(newest, timestamps.to_iso(now))
    return newest


def retry_horizon(now: datetime, backoff: timedelta) -> str:
    """The latest a failed row's retry time can lie, seen from ``now``: the longest
    ``retry_delay`` and the clocks' slack. A retry time beyond it was set by a clock
    ahead of this one (or this one stepped back since): the retry has come."""
    return clock.horizon(timestamps.to_iso(now + max(MAX_RETRY_DELAY, backoff)))


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
    elif (
        feed.recent_entries >= 2
        and feed.recent_oldest
        # a history dated ahead of this clock (a clock behind the feed's dates): none
        and feed.recent_oldest <= timestamps.to_iso(now)
    ):
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


class PollRules(NamedTuple):
    """The settings a feed poll's decision uses (``[poll]``, ``[identity]``, ``[extract]``)
    and the pass's ``owner``, whose queue the staged rows are leased to."""

    base: timedelta
    min_interval: timedelta
    max_interval: timedelta
    lookback: timedelta
    identity_window: timedelta
    extract_lease: timedelta | None  # None: staged rows are left free for anyone (stage only)
    owner: str = ""


NO_LEASE = "1970-01-01T00:00:00Z"  # a lease already over


def poll(
    feed: Feed, outcome: FetchOutcome, now: datetime, rules: PollRules, *, jitter: float = 0.0
) -> PollIntent:
    """The feed's whole change after one poll, from what its fetch came to.

    - :class:`Failed`: no feed this time (network, HTTP status, not a feed, a parser
      bug): FAILED, retried with the failing feed's backoff and the server's ``hint``
      (Retry-After); with ``gone`` (410) the feed is disabled instead, never deleted.
    - :class:`NotModified`: 304, the validators still hold.
    - :class:`Fetched`: the candidates (``candidates``), how far ``latest_published``
      advances (``newest_published``), the feed's title, warning and validators, and the
      next poll at the feed's pace, no sooner than its <ttl> or max-age asks.
    A response that really is the feed (parsed, or 304) also says where the feed lives
    (``redirect``); a failure says nothing about that. ``jitter``: the caller's random
    spread of the next poll (a fraction, see ``next_poll_at``). The host's side of the
    poll (a 429/503 block, its slots) is not the feed's change: records.HostNote.
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

    if isinstance(outcome, Failed):
        if outcome.gone:
            error = f"{outcome.error}: the publisher removed this feed"
            return PollIntent(feed.id, at, None, GONE, error=error, owner=rules.owner)
        return PollIntent(
            feed.id,
            at,
            next_at(False, outcome.hint),
            FAILED,
            error=outcome.error,
            owner=rules.owner,
        )
    if isinstance(outcome, NotModified):
        answer = outcome.answer
        return PollIntent(
            feed.id,
            at,
            next_at(True, answer.max_age),
            NOT_MODIFIED,
            etag=answer.etag,
            last_modified=answer.last_modified,
            redirect=feed_move(feed, answer),
            owner=rules.owner,
        )
    answer, parsed = outcome.answer, outcome.parsed
    chosen = candidates(parsed.entries, feed.latest_published, rules.lookback, now)
    asked = max(parsed.ttl or timedelta(0), answer.max_age or timedelta(0))
    return PollIntent(
        feed.id,
        at,
        next_at(True, asked),
        STAGED,
        entries=chosen,
        newest_published=newest_published(chosen, now),
        warning=parsed.warning,
        feed_title=parsed.title,
        etag=answer.etag,
        last_modified=answer.last_modified,
        redirect=feed_move(feed, answer),
        owner=rules.owner,
        identity=feed.identity,
        window_start=timestamps.to_iso(now - rules.identity_window),
        lan_host=answer.lan_host,
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
