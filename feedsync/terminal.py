"""How commands print for people: width, colour, truncation. ``--json`` bypasses all this.

Human output on a terminal fits its width (80 columns at the least); off a terminal (a
pipe, a file, cron) nothing is cut, unless ``COLUMNS`` says how wide to be (as ``ls`` reads
it; on a terminal it wins over the terminal's own width too). A URL or a path that must be
shortened loses whole segments from its middle, never the part that names the thing:
``http://127.0.0.1:34367/…/article.html`` keeps the scheme, host and port and the last
segment, ``/…/feedsync-1000/feedsync.db`` the folder with the uid and the file; a line
with such a value in it runs over the width rather than cut it. ``--json`` gives every
value whole. Colour only when stdout is a terminal, and never with ``NO_COLOR`` set
(https://no-color.org).

Columns, not characters: a Japanese or Chinese character (and most emoji) takes two
columns of a terminal, a combining accent none. Every cut measures with
:func:`display_width`, from the standard library's Unicode tables (``east_asian_width``,
``combining``): for the text feeds carry it gives what ``wcwidth`` gives (the tests
check it against rich's own cell widths), without one more dependency.

Text from feeds and pages goes through :func:`clean` before it is stored and again
before it is printed: a title carrying ``ESC ] 0 ; ... BEL`` would otherwise retitle the
user's terminal window, or worse.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple, TextIO

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

# What a feed without a title is called, wherever one is printed (add, feeds, news).
NO_TITLE = "(no title yet)"

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


def command_name() -> str:
    """How the user can type this command in the shell they ran it from: ``feedsync``
    when that name on their PATH is this very program, else its full path (right after
    ``install.sh --user``, ~/.local/bin is on the PATH of the next login shell only)."""
    program = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if program is None or program.name != "feedsync":
        return "feedsync"  # python -m feedsync, an embedding: no better name to give
    found = shutil.which("feedsync")
    if found is not None and Path(found).resolve() == program.resolve():
        return "feedsync"
    return shlex.quote(str(program.absolute()))


#: the width of output that is not cut at all (off a terminal, without ``COLUMNS``)
WHOLE = sys.maxsize // 4


def width(stream: TextIO = sys.stdout) -> int:
    """The columns a line of human output may take: ``COLUMNS`` when set, else the
    terminal's width (80 at the least), and off a terminal :data:`WHOLE`: a pipe, a file
    or a cron mail gets every value whole, for grep and for the reader to copy."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(20, int(columns))
    if stream.isatty():
        return max(80, shutil.get_terminal_size((80, 24)).columns)
    return WHOLE


class Pager(NamedTuple):
    """The pager ``show`` pipes an article into: the user's ``$PAGER``, or ``less``."""

    command: str  # for the shell, as $PAGER is (it may carry options)
    env: dict[str, str]
    colour: bool  # whether it shows colour codes as colour rather than as raw text


def pager() -> Pager:
    """``$PAGER`` (as man and git read it: a shell command), else ``less``.

    ``less`` shows colour codes as raw text (``ESC[1m``) unless given ``-R``: it gets
    ``-R`` on its command line, and ``LESS=FRX`` (leave at once when the text fits the
    screen, colours, leave the text on the screen) only when the user has not set
    ``LESS`` (theirs is kept as it is). Another pager gets plain text: what it does with
    colour codes is not known. No colour either with ``NO_COLOR`` set."""
    command = os.environ.get("PAGER", "").strip() or "less"
    env = dict(os.environ)
    try:
        program = Path(shlex.split(command)[0]).name
    except (ValueError, IndexError):  # unbalanced quotes: the shell will say
        program = ""
    colour = "NO_COLOR" not in os.environ
    if program == "less":
        command += " -R"
        env.setdefault("LESS", "FRX")
    elif program != "cat":
        colour = False
    return Pager(command, env, colour)


def page(text: str, chosen: Pager) -> None:
    """``text`` through the pager; straight to stdout when it cannot be started. Ctrl-C
    belongs to the pager meanwhile (less uses it to stop a search), as pydoc does."""
    import subprocess

    try:
        process = subprocess.Popen(
            chosen.command, shell=True, stdin=subprocess.PIPE, env=chosen.env
        )
    except OSError:
        sys.stdout.write(text)
        return
    assert process.stdin is not None
    try:
        with process.stdin:
            process.stdin.write(text.encode("utf-8", "replace"))
    except BrokenPipeError:
        pass  # the reader quit before the end: as wanted
    except KeyboardInterrupt:
        pass
    while True:
        try:
            process.wait()
            break
        except KeyboardInterrupt:
            pass
    if process.returncode == 127:  # the shell found no such command
        sys.stdout.write(text)


def colour_enabled(stream: TextIO = sys.stdout) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


def paint(text: str, colour: str, stream: TextIO = sys.stdout) -> str:
    if not colour_enabled(stream):
        return text
    return f"\033[{COLOURS[colour]}m{text}\033[0m"


@lru_cache(maxsize=4096)
def _char_width(char: str) -> int:
    """Columns one character takes: 2 for wide and full-width ones (CJK, most emoji), 0
    for combining marks, format characters and emoji skin-tone modifiers, else 1."""
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    if "\U0001f3fb" <= char <= "\U0001f3ff":  # a skin tone: drawn into the emoji before it
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """The columns ``text`` takes on a terminal (one line, no control characters)."""
    if text.isascii():
        return len(text)  # the usual case
    return sum(_char_width(c) for c in text)


def _head(text: str, room: int) -> str:
    """The longest start of ``text`` that takes at most ``room`` columns."""
    used = 0
    for i, char in enumerate(text):
        used += _char_width(char)
        if used > room:
            return text[:i]
    return text


def _tail(text: str, room: int) -> str:
    """The longest end of ``text`` that takes at most ``room`` columns."""
    used = 0
    for i in range(len(text) - 1, -1, -1):
        used += _char_width(text[i])
        if used > room:
            return text[i + 1 :]
    return text


def cut(text: str, room: int) -> str:
    """One line of at most ``room`` columns, an ellipsis at the end when cut; without
    control characters (:func:`clean`), which would also make the count wrong."""
    text = clean(text, one_line=True)
    if display_width(text) <= room:
        return text
    return _head(text, max(room - 1, 0)) + "…"


def cut_middle(text: str, room: int) -> str:
    """A URL or a path in at most ``room`` columns where it can be: whole segments left
    out of its middle ("…" in their place), never what names the thing (:func:`_split`:
    a URL's scheme, host and port; the last segment, cut in its own middle only when it
    alone is wider than the room left beside them). What names it is kept even where it
    does not fit: the line runs over rather than lose it. Other text is cut in its
    middle. Without control characters, like :func:`cut`."""
    text = clean(text, one_line=True)
    if display_width(text) <= room:
        return text
    parts = _split(text)
    if parts is None:
        head = (room - 1) * 2 // 3
        tail = room - 1 - head
        return _head(text, head) + "…" + (_tail(text, tail) if tail else "")
    start, segments = parts
    for keep in range(len(segments) - 1, 0, -1):  # the most segments that fit, from the end
        shorter = start + "/…/" + "/".join(segments[-keep:])
        if display_width(shorter) <= room:
            return shorter
    last = segments[-1]
    fixed = display_width(start) + 3  # "/…/"
    room_left = max(room - fixed, 12)  # a last segment wider than the line: its ends
    if display_width(last) > room_left:  # its start and its end (".html", "?id=5")
        head = (room_left - 1) // 2
        last = _head(last, head) + "…" + _tail(last, room_left - 1 - head)
    return start + ("/…/" if len(segments) > 1 else "/") + last


_URL_START = re.compile(r"^(?P<start>[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*)(?P<rest>[/?#].*)?$")


def _split(text: str) -> tuple[str, list[str]] | None:
    """What always stays of a URL or a path, and its segments after that: the scheme,
    host and port of a URL (its userinfo too: it says whose account), nothing but the
    root of an absolute path. None for what is neither."""
    found = _URL_START.match(text)
    if found is not None:
        rest = found["rest"] or ""
        if not rest.startswith("/"):
            return (text, []) if not rest else None
        segments = rest[1:].split("/")
        return found["start"], segments
    if text.startswith(("/", "~/")):
        first, _, rest = text.partition("/")
        return first, rest.split("/")
    return None


def labelled(label: str, value: str, room: int, sep: str = " · ") -> str:
    """``label``, ``sep`` and a URL or path ``value`` in ``room`` columns: the value
    shortened by :func:`cut_middle` (to the room a third of the line leaves it, or more
    where its last segment would be cut), then the label cut at its end to what the
    value leaves (12 columns at the least)."""
    label = clean(label, one_line=True)
    value = clean(value, one_line=True)
    whole = label + sep + value
    if display_width(whole) <= room:
        return whole
    kept = min(display_width(label + sep), max(room // 3, 12))
    short = cut_middle(value, room - kept)
    parts = _split(value)
    if parts is not None and parts[1] and not short.endswith(parts[1][-1]):
        # its last segment would be cut: the label gives up more of its room first
        short = cut_middle(value, room - min(display_width(label), 12) - display_width(sep))
    left = max(room - display_width(short) - display_width(sep), 12)
    return cut(label, left) + sep + short


# Where a highlight starts and ends in a text to be wrapped (:func:`wrap`): zero columns
# wide while the text is measured, then replaced by the colour codes.
MARK_ON, MARK_OFF = "\x01", "\x02"


def wrap(text: str, room: int, lines: int) -> list[str]:
    """``text`` (one line) in at most ``lines`` lines of at most ``room`` columns, cut
    between words (inside a word too long for a line), an ellipsis at the end when cut.
    :data:`MARK_ON`/:data:`MARK_OFF` take no room, and a highlight cut by the end of a
    line is closed there and opened again on the next."""

    def columns(piece: str) -> int:
        return display_width(piece.replace(MARK_ON, "").replace(MARK_OFF, ""))

    out: list[str] = []
    words = text.split(" ")
    line = ""
    while words and len(out) < lines:
        word = words[0]
        candidate = f"{line} {word}" if line else word
        if columns(candidate) <= room:
            line, words = candidate, words[1:]
            continue
        if columns(word) > room:  # a word wider than a line (CJK): fill the line with it
            space = room - columns(line) - (1 if line else 0)
            head = _head_marked(word, space) if space > 0 else ""
            if head:
                line, words[0] = (f"{line} {head}" if line else head), word[len(head) :]
        out.append(line)
        line = ""
    if line and len(out) < lines:
        out.append(line)
    if words and out:  # more than fits: the last line ends in an ellipsis
        last = out[-1]
        while last and columns(last) > room - 1:
            last = last[:-1]
        out[-1] = last + "…"
    opened = False  # carry a highlight over the line break
    for i, piece in enumerate(out):
        piece = (MARK_ON if opened else "") + piece
        opened = piece.rfind(MARK_ON) > piece.rfind(MARK_OFF)
        out[i] = piece + (MARK_OFF if opened else "")
    return out


def _head_marked(text: str, room: int) -> str:
    """The longest start of ``text`` within ``room`` columns, marks taking none."""
    used = 0
    for i, char in enumerate(text):
        used += 0 if char in (MARK_ON, MARK_OFF) else _char_width(char)
        if used > room:
            return text[:i]
    return text


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 entry"``, ``"2 entries"``, ``"0 changes"``: the count and the word agreeing.

    English plurals of the words feedsync prints: ``-y`` after a consonant becomes
    ``-ies``, ``-s``/``-x``/``-ch``/``-sh`` take ``-es``, the rest ``-s``; ``many`` for
    anything else."""
    if n == 1:
        return f"{n} {word}"
    if many is None:
        if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
            many = word[:-1] + "ies"
        elif word.endswith(("s", "x", "ch", "sh")):
            many = word + "es"
        else:
            many = word + "s"
    return f"{n} {many}"


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
