"""The stored timestamp format: what is read back is what was written, in UTC, and
anything else is refused (a damaged row must not become a wrong time)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from feedsync import timestamps


def test_a_stored_timestamp_reads_back_as_the_same_moment_in_utc() -> None:
    moment = datetime(2026, 11, 27, 9, 41, 22, tzinfo=UTC)
    text = timestamps.to_iso(moment)
    assert text == "2026-11-27T09:41:22Z"
    back = timestamps.from_iso(text)
    assert back == moment
    assert back.utcoffset() == timedelta(0)
    # written from another zone, read back as the same instant
    tokyo = datetime(2026, 11, 27, 18, 41, 22, tzinfo=timezone(timedelta(hours=9)))
    assert timestamps.from_iso(timestamps.to_iso(tokyo)) == moment
    # shifting goes through both
    assert timestamps.shift(text, timedelta(days=1, seconds=38)) == "2026-11-28T09:42:00Z"


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 1, 2, 3, 4, 5, 999_999, tzinfo=UTC),  # a fraction: cut, not rounded
        datetime(2026, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(1999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5))),  # next year
        datetime(2026, 6, 7, 8, 9, 10),  # naive: taken as UTC
    ],
)
def test_a_timestamp_is_written_in_the_stored_format_whatever_its_zone(moment: datetime) -> None:
    """to_iso formats by hand (faster than strftime): the same text strftime gave."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    assert timestamps.to_iso(moment) == utc.strftime(timestamps.FORMAT)


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-27 09:41:22Z",  # no T
        "2026-11-27T09:41:22",  # no zone
        "2026-11-27T09:41:22+00:00",  # another spelling of UTC: not what is stored
        "2026-11-27T09:41:22.5Z",  # fractions are never stored
        "2026-11-27T09:41:22Z\n",  # a trailing newline (the pattern's $ allows it)
        "\u0662\u0660\u0662\u0666-11-27T09:41:22Z",  # other digits (\d allows them)
        "2026-02-30T00:00:00Z",  # no such day
        "2026-11-27T24:00:00Z",
        "2026-11-27T09:41:60Z",
        "",
    ],
)
def test_anything_but_the_stored_form_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        timestamps.from_iso(text)
