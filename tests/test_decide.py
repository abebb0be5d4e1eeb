"""The pipeline's decisions, driven directly: no server, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from feedsync import decide
from feedsync.records import (
    FAILED,
    GONE,
    NOT_MODIFIED,
    STAGED,
    Answer,
    Entry,
    Failed,
    Feed,
    Fetched,
    FetchOutcome,
    NotModified,
    ParsedFeed,
    PollIntent,
    RedirectState,
)

FETCHED = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def entry(title: str, published: str | None, url: str = "") -> Entry:
    return Entry(url=url or f"https://e.com/{title}", title=title, published=published)


# ---------------------------------------------------------------- dates


def test_dates_are_utc_text() -> None:
    plus_two = datetime(2026, 11, 22, 9, 30, tzinfo=UTC) + timedelta(0)
    assert decide.published_date(plus_two, FETCHED) == "2026-11-22T09:30:00Z"
    naive = datetime(2026, 11, 22, 9, 30)
    assert decide.published_date(naive, FETCHED) == "2026-11-22T09:30:00Z"


def test_dates_ahead_of_our_clock_are_kept_as_given() -> None:
    """Our clock may be the wrong one (30 days behind after a boot without NTP): the
    feed's date is kept, never replaced by our "now"."""
    assert decide.published_date(FETCHED + timedelta(days=3), FETCHED) == "2026-11-25T12:00:00Z"
    assert decide.published_date(FETCHED + timedelta(days=30), FETCHED) == "2026-12-22T12:00:00Z"


def test_a_clock_at_1970_keeps_the_feeds_real_dates() -> None:
    at_boot = datetime(1970, 1, 1, 0, 5, tzinfo=UTC)  # a Pi without fake-hwclock
    assert decide.published_date(FETCHED, at_boot) == "2026-11-22T12:00:00Z"
    # a clock that cannot be right bounds nothing: every date after 1990 is kept (a
    # date more than a year ahead of a clock that may be right is garbage, as before)
    assert decide.published_date(datetime(2031, 1, 1, tzinfo=UTC), at_boot) == (
        "2031-01-01T00:00:00Z"
    )
    assert decide.published_date(datetime(1989, 12, 31, tzinfo=UTC), at_boot) is None


def test_a_date_ahead_cannot_move_the_cut_off_past_the_clock() -> None:
    """One entry dated ahead (or a latest_published set while the clock ran ahead) must
    not hide what is published after it: the cut-off follows the clock that reads it."""
    ahead = entry("dated next month", "2026-12-22T12:00:00Z")
    assert decide.newest_published([ahead], FETCHED) == "2026-11-22T12:00:00Z"
    assert decide.newest_published([ahead]) == "2026-12-22T12:00:00Z"  # no clock: as given
    day = timedelta(hours=24)
    assert decide.cutoff("2027-11-22T12:00:00Z", day, FETCHED) == "2026-11-21T12:05:00Z"
    assert decide.cutoff("2026-11-22T10:00:00Z", day, FETCHED) == "2026-11-21T10:00:00Z"
    later = entry("an hour ago", "2026-11-22T11:00:00Z")
    chosen = decide.candidates([later], "2027-11-22T12:00:00Z", day, FETCHED)
    assert chosen == (later,)


@pytest.mark.parametrize(
    "absurd",
    [
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(1899, 12, 31, tzinfo=UTC),
        datetime(2999, 1, 1, tzinfo=UTC),
    ],
)
def test_absurd_dates_count_as_no_date(absurd: datetime) -> None:
    assert decide.published_date(absurd, FETCHED) is None


# ---------------------------------------------------------------- candidates


def test_first_poll_takes_everything() -> None:
    entries = [entry("a", "2001-01-01T00:00:00Z"), entry("b", None)]
    assert decide.candidates(entries, "", timedelta(hours=24)) == tuple(entries)


def test_candidates_are_undated_or_within_the_lookback() -> None:
    latest = "2026-11-22T10:00:00Z"
    entries = [
        entry("newer", "2026-11-22T11:00:00Z"),
        entry("inside lookback", "2026-11-21T10:00:00Z"),  # exactly latest - 24h
        entry("too old", "2026-11-21T09:59:59Z"),
        entry("undated", None),
    ]
    chosen = decide.candidates(entries, latest, timedelta(hours=24))
    assert [e.title for e in chosen] == ["newer", "inside lookback", "undated"]


def test_candidates_drop_repeats_within_one_feed() -> None:
    twice = entry("same", "2026-11-22T11:00:00Z")
    assert decide.candidates([twice, twice], "", timedelta(hours=1)) == (twice,)


def test_a_repeat_gives_its_date_to_an_undated_first_copy() -> None:
    """One story twice in one document, undated first, dated later: staged once, with
    the date (it was staged undated, and the feed's latest_published never saw it)."""
    undated, dated = entry("same", None), entry("same", "2026-11-22T11:00:00Z")
    chosen = decide.candidates([undated, dated], "", timedelta(hours=1))
    assert [(e.title, e.published) for e in chosen] == [("same", "2026-11-22T11:00:00Z")]


def test_latest_published_advances_to_the_newest_staged_only() -> None:
    staged = [
        entry("a", "2026-11-20T00:00:00Z"),
        entry("b", None),
        entry("c", "2026-11-21T00:00:00Z"),
    ]
    assert decide.newest_published(staged) == "2026-11-21T00:00:00Z"
    assert decide.newest_published([entry("undated", None)]) == ""
    assert decide.newest_published([]) == ""


# ---------------------------------------------------------------- retries


def test_retry_backoff_doubles_and_is_capped() -> None:
    base = timedelta(minutes=15)
    delays = [decide.retry_delay(n, base) for n in range(1, 10)]
    assert delays[:4] == [base, base * 2, base * 4, base * 8]
    assert max(delays) == timedelta(days=1)
    assert decide.retry_delay(1, timedelta(0)) == timedelta(0)
    assert decide.retry_delay(500, base) == timedelta(days=1)  # no overflow


def test_failure_is_retried_then_given_up() -> None:
    now = FETCHED
    first = decide.after_failure(0, "HTTP 500", now, max_attempts=3, backoff=timedelta(hours=1))
    assert (first.state, first.attempts, first.next_attempt_at) == (
        "failed",
        1,
        "2026-11-22T13:00:00Z",
    )
    second = decide.after_failure(1, "HTTP 500", now, max_attempts=3, backoff=timedelta(hours=1))
    assert (second.state, second.next_attempt_at) == ("failed", "2026-11-22T14:00:00Z")
    third = decide.after_failure(2, "HTTP 500", now, max_attempts=3, backoff=timedelta(hours=1))
    assert (third.state, third.attempts, third.next_attempt_at) == ("gone", 3, None)


def test_permanent_failure_is_given_up_at_once() -> None:
    outcome = decide.after_failure(
        0,
        "not an HTML page (application/pdf)",
        FETCHED,
        max_attempts=5,
        backoff=timedelta(hours=1),
        permanent=True,
    )
    assert (outcome.state, outcome.attempts) == ("gone", 1)


def test_article_date_prefers_the_feed_then_the_page() -> None:
    assert decide.article_published("2026-11-20T08:00:00Z", "2026-01-01", FETCHED) == (
        "2026-11-20T08:00:00Z"
    )
    assert decide.article_published(None, "2026-11-20", FETCHED) == "2026-11-20T00:00:00Z"
    assert decide.article_published(None, "yesterday", FETCHED) is None
    assert decide.article_published(None, None, FETCHED) is None


# ---------------------------------------------------------------- when to poll next


def feed(**fields: object) -> Feed:
    values: dict[str, object] = {
        "id": 1,
        "url": "https://e.com/f",
        "latest_published": "",
        "etag": None,
        "last_modified": None,
    }
    values.update(fields)
    return Feed(**values)  # type: ignore[arg-type]


def next_in(
    feed_: Feed, *, ok: bool = True, hint: timedelta | None = None, jitter: float = 0.0
) -> timedelta:
    when = decide.next_poll_at(
        feed_,
        FETCHED,
        ok=ok,
        hint=hint,
        base=timedelta(minutes=30),
        min_interval=timedelta(minutes=10),
        max_interval=timedelta(hours=24),
        jitter=jitter,
    )
    return datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) - FETCHED


def test_a_new_feed_is_polled_at_the_base_interval() -> None:
    assert next_in(feed()) == timedelta(minutes=30)


def test_a_publishing_history_dated_ahead_of_the_clock_is_no_history() -> None:
    """A clock behind the feed's dates (kept as given) sees the week's entries "in the
    future": their span is no measure of the feed's pace; the base interval, not the
    minimum, until the clock is right."""
    ahead = feed(recent_entries=20, recent_oldest="2026-12-20T00:00:00Z")
    assert next_in(ahead) == timedelta(minutes=30)


def test_busy_feeds_are_polled_often_quiet_ones_rarely() -> None:
    # 84 entries over the last 7 days: one every 2 hours
    week = "2026-11-15T12:00:00Z"
    assert next_in(feed(recent_entries=84, recent_oldest=week, polled_before=True)) == (
        timedelta(hours=2)
    )
    # 2000 a week: bounded by min_interval
    assert next_in(feed(recent_entries=2000, recent_oldest=week, polled_before=True)) == (
        timedelta(minutes=10)
    )
    # nothing in a week: max_interval
    quiet = feed(polled_before=True, latest_published="2026-10-01T00:00:00Z")
    assert next_in(quiet) == timedelta(hours=24)


def test_server_hints_are_honoured_within_bounds() -> None:
    assert next_in(feed(), hint=timedelta(hours=2)) == timedelta(hours=2)  # <ttl>120</ttl>
    assert next_in(feed(), hint=timedelta(minutes=1)) == timedelta(minutes=30)  # not sooner
    assert next_in(feed(), hint=timedelta(days=30)) == timedelta(hours=24)  # max_interval


def test_failing_feeds_back_off_doubling_up_to_the_maximum() -> None:
    delays = [next_in(feed(error_count=n), ok=False) for n in range(8)]
    assert delays[:4] == [
        timedelta(minutes=30),
        timedelta(hours=1),
        timedelta(hours=2),
        timedelta(hours=4),
    ]
    assert delays[-1] == timedelta(hours=24)
    # Retry-After longer than the backoff wins
    assert next_in(feed(), ok=False, hint=timedelta(hours=3)) == timedelta(hours=3)


def test_jitter_spreads_feeds_apart() -> None:
    assert next_in(feed(), jitter=0.1) == timedelta(minutes=33)
    assert next_in(feed(), jitter=-0.1) == timedelta(minutes=27)


# ---------------------------------------------------------------- one poll, one intent

RULES = decide.PollRules(
    base=timedelta(minutes=30),
    min_interval=timedelta(minutes=5),
    max_interval=timedelta(days=1),
    lookback=timedelta(hours=24),
    identity_window=timedelta(days=7),
    extract_lease=timedelta(minutes=15),
    owner="me",
)
POLLED = Feed(
    id=7,
    url="https://e.com/feed",
    latest_published="2026-11-22T10:00:00Z",
    etag='"old"',
    last_modified=None,
    polled_before=True,
)


def poll(feed: Feed, outcome: FetchOutcome) -> PollIntent:
    return decide.poll(feed, outcome, FETCHED, RULES, jitter=0.0)


def test_a_parsed_feed_stages_its_candidates_and_advances() -> None:
    parsed = ParsedFeed(
        title="Feed",
        entries=(
            entry("new", "2026-11-22T11:00:00Z"),
            entry("undated", None),
            entry("ancient", "2026-11-01T00:00:00Z"),  # before latest_published - lookback
            entry("new", "2026-11-22T11:00:00Z"),  # repeated in the document
        ),
        ttl=timedelta(hours=2),
    )
    intent = poll(POLLED, Fetched(Answer(etag='"v2"', last_modified="Sun, 22 Nov 2026"), parsed))
    assert intent.outcome == STAGED
    assert [e.title for e in intent.entries] == ["new", "undated"]
    assert intent.newest_published == "2026-11-22T11:00:00Z"
    assert (intent.etag, intent.last_modified) == ('"v2"', "Sun, 22 Nov 2026")
    assert intent.feed_title == "Feed" and intent.error is None
    assert intent.next_poll_at == "2026-11-22T14:00:00Z"  # its <ttl> of two hours
    assert intent.lease_until == "2026-11-22T12:15:00Z" and intent.owner == "me"
    assert intent.window_start == "2026-11-15T12:00:00Z"
    assert intent.redirect is None  # nothing about its URL to write


def test_a_stage_only_pass_leaves_the_rows_free_for_anyone() -> None:
    rules = RULES._replace(extract_lease=None)
    intent = decide.poll(POLLED, Fetched(Answer(), ParsedFeed(None, ())), FETCHED, rules)
    assert intent.lease_until == decide.NO_LEASE


def test_not_modified_keeps_the_validators_and_honours_max_age() -> None:
    intent = poll(POLLED, NotModified(Answer(etag='"v3"', max_age=timedelta(hours=3))))
    assert intent.outcome == NOT_MODIFIED and intent.entries == ()
    assert intent.etag == '"v3"' and intent.error is None
    assert intent.next_poll_at == "2026-11-22T15:00:00Z"


def test_a_failure_backs_off_and_honours_retry_after() -> None:
    failing = POLLED._replace(error_count=2)  # the third failure in a row: base x 4
    intent = poll(failing, Failed("HTTP 500"))
    assert intent.outcome == FAILED and intent.error == "HTTP 500"
    assert intent.next_poll_at == "2026-11-22T14:00:00Z"
    later = poll(failing, Failed("HTTP 503", hint=timedelta(hours=5)))
    assert later.next_poll_at == "2026-11-22T17:00:00Z"
    assert intent.redirect is None  # a failure says nothing about where the feed lives


def test_gone_disables_the_feed_with_the_reason() -> None:
    intent = poll(POLLED, Failed("HTTP 410", gone=True))
    assert intent.outcome == GONE and intent.next_poll_at is None
    assert intent.error == "HTTP 410: the publisher removed this feed"


def test_a_move_is_decided_with_the_poll() -> None:
    moved = Answer(moved_to="https://new.e.com/feed", moved_by_308=True)
    intent = poll(POLLED, NotModified(moved))
    assert intent.redirect == RedirectState("https://new.e.com/feed", None, 0)
    assert decide.move_note(intent, None, True) == (
        "moved permanently to https://new.e.com/feed (308): the feed now uses it"
    )
    first_301 = poll(POLLED, NotModified(moved._replace(moved_by_308=False)))
    assert first_301.redirect == RedirectState(None, "https://new.e.com/feed", 1)
    assert decide.move_note(first_301, None, False) is None
    refused = decide.move_note(intent, "already in the list", True)
    assert refused == "cannot follow its move: already in the list; disabled"
    # a pending move that the next poll does not confirm is forgotten
    pending = POLLED._replace(redirect_to="https://new.e.com/feed", redirect_seen=1)
    assert poll(pending, NotModified(Answer())).redirect == RedirectState(None, None, 0)
