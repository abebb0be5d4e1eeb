"""A feed's health and an article's state, in words: the same on the command line
(``feedsync feeds``, ``news --state``, ``show``) and on the web page (feedsync/serve/
pages.py), so both say one thing. Pure: records in, one line out.
"""

from __future__ import annotations

from feedsync import terminal as t
from feedsync.records import FeedHealth, StagedEntry

# news --state: the user's names of news_summary.state (records.STATE_NAMES)
ENTRY_STATES = {"pending": "new", "failed": "failed", "given-up": "gone"}


def feed_health_line(feed: FeedHealth, failing_after: int) -> str:
    """ok / not polled yet / retrying / FAILING / DISABLED, with the reason; a feed
    that polls fine while none of its articles arrives is not "ok": ARTICLES FAILING."""
    if not feed.enabled:
        return f"DISABLED: {feed.disabled_reason}"
    if feed.error_count >= failing_after:
        return f"FAILING ({feed.error_count} in a row): {feed.last_error}"
    if feed.error_count:
        return f"retrying ({feed.error_count} failed in a row): {feed.last_error}"
    if feed.articles_in_trouble:
        return "ARTICLES FAILING: " + (articles_line(feed) or "")
    if feed.last_poll_at is None:
        return "not polled yet"
    return "ok"


def articles_line(feed: FeedHealth) -> str | None:
    """ "20 failing; this week none extracted: cannot resolve 10e.org", "this week 2
    given up, 14 extracted: ..."; None when none of its articles fails."""
    if not (feed.articles_failing or feed.articles_given_up_week):
        return None
    week = [f"{feed.articles_given_up_week} given up"] if feed.articles_given_up_week else []
    week.append(f"{feed.articles_extracted_week or 'none'} extracted")
    line = f"this week {', '.join(week)}"
    if feed.articles_failing:
        line = f"{feed.articles_failing} failing; {line}"
    if feed.articles_last_error:
        line += f": {feed.articles_last_error}"
    return line


def entry_state_line(entry: StagedEntry, max_attempts: int) -> str:
    """Where an article that is not there stands: "failed 3 times (of 5), next try
    2026-11-23 14:05Z", "given up after 5 attempts", "not fetched yet"."""
    if entry.state == "gone":
        return f"given up after {t.plural(entry.attempts, 'attempt')}: not tried again"
    if entry.state == "failed":
        return (
            f"failed {t.plural(entry.attempts, 'time')} (of {max_attempts}), next try "
            f"{t.short_time(entry.next_attempt_at, 'with the next run')}"
        )
    return "not fetched yet: with the next run or daemon tick"
