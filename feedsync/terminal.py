"""How commands print for people: width, colour, truncation. ``--json`` bypasses all this.

Human output fits 80 columns (or the terminal's width, when wider); a long URL is cut in
the middle ("https://example.com/…/article.html") and given whole in ``--json``. Colour
only when stdout is a terminal, and never with ``NO_COLOR`` set (https://no-color.org).
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import TextIO

COLOURS = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "dim": "2", "bold": "1"}


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
    """At most ``room`` characters, an ellipsis at the end when cut."""
    return text if len(text) <= room else text[: max(room - 1, 0)] + "…"


def cut_middle(text: str, room: int) -> str:
    """At most ``room`` characters, cut in the middle: both ends of a URL stay readable."""
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
