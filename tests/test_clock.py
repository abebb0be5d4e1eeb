"""The clock is a suspect: a Raspberry Pi has no real-time clock. It boots at the time
fake-hwclock saved (or at 1970), NTP sets it minutes or hours later, or not at all while
the network is down; a wrong RTC HAT or a bad NTP answer puts it ahead, then back.

Through the real CLI, with the clock of the feedsync processes set by libfaketime
(``fake_clock``, tests/conftest.py): what a run stores under a wrong clock, and what the
runs after it do once the clock is right.
"""

from __future__ import annotations

from datetime import timedelta

from conftest import NOW, FakeClock, FeedsyncEnv, Site, hours
from sitegen import Item

YEAR = timedelta(days=365)


def test_a_run_a_year_ahead_does_not_silence_the_feed_once_the_clock_is_right(
    fs: FeedsyncEnv, site: Site, fake_clock: FakeClock
) -> None:
    """Finding 1: the next poll was set a year ahead, and `run --due` polled nothing
    until then."""
    feed = site.feed("f.xml", [Item("First", site.page("first"), hours(2))])
    fs.configure([feed])
    fake_clock.set(YEAR)
    fs.run("run", env=fake_clock.env())
    assert site.hits("/feeds/f.xml") == 1

    fake_clock.set(timedelta(0))  # NTP steps the clock back
    site.feed(
        "f.xml",
        [Item("First", site.url("/articles/first"), hours(2)), Item("Later", site.page("later"))],
    )
    fs.run("run", "--due", env=fake_clock.env())

    assert site.hits("/feeds/f.xml") == 2
    assert fs.scalar("SELECT count(*) FROM news WHERE title = 'Later'") == 1
    # the schedule is the right clock's again: not due for a while
    fs.run("run", "--due", env=fake_clock.env())
    assert site.hits("/feeds/f.xml") == 2


def test_a_run_behind_keeps_the_feeds_dates_as_given(
    fs: FeedsyncEnv, site: Site, fake_clock: FakeClock
) -> None:
    """Finding 3: a run 30 days behind replaced the feed's real date with its wrong "now"
    (the date looked 30 days in the future)."""
    published = hours(2)
    feed = site.feed("f.xml", [Item("Story", site.page("story"), published)])
    fs.configure([feed])
    fake_clock.set(-timedelta(days=30))
    fs.run("run", env=fake_clock.env())

    given = published.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert fs.scalar("SELECT published FROM news_summary") == given
    assert fs.scalar("SELECT published FROM news") == given
    # the feed's cut-off is no later than the clock that polled it: once the clock is
    # right, an entry published since is a candidate (and one an hour older still is)
    fake_clock.set(timedelta(0))
    site.feed(
        "f.xml",
        [
            Item("Story", site.url("/articles/story"), published),
            Item("Next", site.page("next"), NOW - timedelta(minutes=30)),
            Item("Late arrival", site.page("late"), hours(3)),
        ],
    )
    fs.run("run", env=fake_clock.env())
    assert {r[0] for r in fs.query("SELECT title FROM news")} == {"Story", "Next", "Late arrival"}
