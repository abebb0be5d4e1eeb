"""How commands print for people: width, colour, truncation. ``--json`` bypasses all this.

Human output fits 80 columns (or the terminal's width, when wider); a long URL is cut in
the middle ("https://example.com/…/article.html") and given whole in ``--json``. Colour
only when stdout is a terminal, and never with ``NO_COLOR`` set (https://no-color.org).

Text from feeds and pages goes through :func:`clean` before it is stored and again
before it is printed: a title carrying ``ESC ] 0 ; ... BEL`` would otherwise retitle the
user's terminal window, or worse.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from typing import TextIO

# C0 controls, DEL and the C1 controls (U+0080-U+009F: U+009B is a one-character CSI to
# a terminal that honours C1). Tab, newline and carriage return are decided per mode.
_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0)]
_ANY_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# What multi-line text must lose or change: every control but tab and newline (a carriage
# return becomes a newline). An article's text has a newline per paragraph: searched for
# _ANY_CONTROL, every text was copied through translate() for nothing (~0.3 ms a page).
_CHANGES_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_KEEP_LINES = str.maketrans({**dict.fromkeys(_CONTROLS), 0x09: "\t", 0x0A: "\n", 0x0D: "\n"})
_ONE_LINE = str.maketrans({**dict.fromkeys(_CONTROLS), 0x09: " ", 0x0A: " ", 0x0D: " "})

COLOURS = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "dim": "2", "bold": "1"}


def clean(text: str, *, one_line: bool = False) -> str:
    """``text`` without control characters, safe to store and to print.

    Control characters in a feed or a page are never content, and at a terminal they are
    commands (an OSC sequence sets the window title, a CSI moves the cursor or repaints
    the screen): C0 (U+0000-U+001F), DEL and C1 (U+0080-U+009F) are dropped. Tab and
    line breaks stay in multi-line text (a carriage return becomes a newline, so it can
    not overwrite a line); with ``one_line`` (titles, authors, one line of output) they
    become spaces, so a title can not start a line of its own.
    """
    if one_line:
        if _ANY_CONTROL.search(text) is None:
            return text  # the usual case: no copy
        return text.translate(_ONE_LINE)
    if _CHANGES_LINES.search(text) is None:
        return text  # the usual case, lines and all: no copy
    return text.replace("\r\n", "\n").translate(_KEEP_LINES)


def width(stream: TextIO = sys.stdout) -> int:
    if stream.isatty():
        return max(80, shutil.get_terminal_size((80, 24)).columns)
    return 80


def colour_enabled(stream: TextIO = sys.stdout) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


def paint(text: str, colour: str, stream: TextIO = sys.stdout) -> str:
    if not colour_enabled(stream):
        return text
    return f"\033[{COLOURS[colour]}m{text}\033[0m"


def cut(text: str, room: int) -> str:
    """One line of at most ``room`` characters, an ellipsis at the end when cut; without
    control characters (:func:`clean`), which would also make the count wrong."""
    text = clean(text, one_line=True)
    return text if len(text) <= room else text[: max(room - 1, 0)] + "…"


def cut_middle(text: str, room: int) -> str:
    """One line of at most ``room`` characters, cut in the middle: both ends of a URL stay
    readable. Without control characters, like :func:`cut`."""
    text = clean(text, one_line=True)
    if len(text) <= room:
        return text
    head = (room - 1) * 2 // 3
    tail = room - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def short_time(stamp: str | None, empty: str = "never") -> str:
    """'2026-11-22T10:05:00Z' -> '2026-11-22 10:05Z'."""
    return f"{stamp[:10]} {stamp[11:16]}Z" if stamp else empty


def size(n: int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")
