"""The one picture of the web page: articles per day per feed over the last weeks, as an
inline SVG of stacked bars. Pure: counts in, markup out.

Why a picture: a feed that went quiet, or one that floods the others, shows at a glance
in four weeks of bars, where a table of 28 days by N feeds is read cell by cell. Why
inline SVG: the page's Content-Security-Policy allows no script and no inline style, and
a browser shows SVG without either; its colours are classes of /style.css (c0..c7, with
a dark palette of their own), each bar's ``<title>`` is the hover text, and the legend
under it is plain HTML that a screen reader reads.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, timedelta

from feedsync.terminal import clean, plural

#: colours (classes c0..c6 of the stylesheet) for the busiest feeds; the rest share c7
COLOURS = 7
OTHERS = -1  # the series of every feed beyond the first COLOURS

# the drawing's own units (the SVG scales to the column's width)
BAR = 20
GAP = 4
HEIGHT = 120
TOP = 14  # room for the scale's label
BOTTOM = 16  # room for the dates under the bars
LEFT = 4


def last_days(today: date, count: int = 28) -> list[str]:
    """The ``count`` days ending with ``today``, oldest first, as "YYYY-MM-DD"."""
    return [(today - timedelta(days=count - 1 - i)).isoformat() for i in range(count)]


def _esc(text: str) -> str:
    return html.escape(clean(text, one_line=True), quote=True)


def _series(
    rows: Iterable[tuple[int, str, int]], names: Mapping[int, str], days: Sequence[str]
) -> tuple[list[int], dict[int, dict[str, int]], dict[int, str]]:
    """The series drawn, busiest first (at most COLOURS feeds, then OTHERS), each one's
    count per day, and its name."""
    wanted = set(days)
    per_feed: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for feed_id, day, count in rows:
        if day in wanted and count > 0:
            per_feed[feed_id][day] += count
    busiest = sorted(per_feed, key=lambda f: (-sum(per_feed[f].values()), f))
    shown = busiest[:COLOURS]
    series = {f: dict(per_feed[f]) for f in shown}
    labels = {f: names.get(f) or f"feed {f}" for f in shown}
    rest = busiest[COLOURS:]
    if rest:
        merged: dict[str, int] = defaultdict(int)
        for feed_id in rest:
            for day, count in per_feed[feed_id].items():
                merged[day] += count
        series[OTHERS] = dict(merged)
        labels[OTHERS] = f"{plural(len(rest), 'other feed')}"
        shown.append(OTHERS)
    return shown, series, labels


def round_up(most: int) -> int:
    """A round scale at or above ``most``: 1, 2, 5, 10, 20, 50, 100, ..."""
    magnitude = 1
    while True:
        for step in (1, 2, 5):
            if step * magnitude >= most:
                return step * magnitude
        magnitude *= 10


def articles_per_day(
    rows: Iterable[tuple[int, str, int]],
    names: Mapping[int, str],
    days: Sequence[str],
    *,
    caption: str = "Articles per day",
) -> str:
    """A ``<figure>``: stacked bars, one a day of ``days`` (oldest first), a segment per
    feed (``rows``: (feed id, "YYYY-MM-DD", count), as ``Reading.news_per_day`` gives
    them; ``names``: what each feed is called), and its legend. Days without articles
    stay empty bars; no rows at all: one sentence instead of an empty picture."""
    order, series, labels = _series(rows, names, days)
    totals = {day: sum(series[f].get(day, 0) for f in order) for day in days}
    if not any(totals.values()):
        return f'<p class="chart-empty">No articles in the last {len(days)} days.</p>'
    top = round_up(max(totals.values()))
    width = LEFT + len(days) * (BAR + GAP)
    full = TOP + HEIGHT + BOTTOM
    colour = {f: f"c{i}" for i, f in enumerate(order) if f != OTHERS}
    colour[OTHERS] = f"c{COLOURS}"
    out = [
        f'<figure class="chart"><svg class="chart" viewBox="0 0 {width} {full}" '
        f'width="{width}" height="{full}" role="img" aria-labelledby="chart-title" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<title id="chart-title">{_esc(caption)}, the last {len(days)} days</title>',
        f'<line class="axis" x1="0" y1="{TOP + HEIGHT}" x2="{width}" y2="{TOP + HEIGHT}"/>',
        f'<line class="grid" x1="0" y1="{TOP}" x2="{width}" y2="{TOP}"/>',
        f'<text class="scale" x="{LEFT}" y="{TOP - 3}">{top} a day</text>',
    ]
    for i, day in enumerate(days):
        x = LEFT + i * (BAR + GAP)
        y = float(TOP + HEIGHT)
        out.append(f'<g class="day"><title>{day}: {plural(totals[day], "article")}</title>')
        for feed in order:
            count = series[feed].get(day, 0)
            if not count:
                continue
            h = count * HEIGHT / top
            y -= h
            out.append(
                f'<rect class="{colour[feed]}" x="{x}" y="{y:.1f}" width="{BAR}" '
                f'height="{h:.1f}"><title>{day} · {_esc(labels[feed])}: '
                f"{plural(count, 'article')}</title></rect>"
            )
        out.append("</g>")
        if i == len(days) - 1:  # the last day's date ends at its bar: not cut off
            out.append(f'<text class="date end" x="{x + BAR}" y="{full - 3}">{day[5:]}</text>')
        elif i % 7 == 0 and i < len(days) - 4:  # (not written over by the last one)
            out.append(f'<text class="date" x="{x}" y="{full - 3}">{day[5:]}</text>')
    out.append("</svg>")
    out.append('<figcaption><ul class="legend">')
    for feed in order:
        total = sum(series[feed].values())
        out.append(
            f'<li><span class="swatch {colour[feed]}"></span>{_esc(labels[feed])} '
            f'<span class="count">{total}</span></li>'
        )
    out.append("</ul></figcaption></figure>")
    return "".join(out)
