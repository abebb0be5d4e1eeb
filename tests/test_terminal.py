"""Human output: cutting to width, colour rules."""

from __future__ import annotations

import io

import pytest

from feedsync import terminal


def test_cuts() -> None:
    assert terminal.cut("short", 10) == "short"
    assert terminal.cut("a long title here", 10) == "a long ti…"
    url = "https://news.example.com/2026/11/22/a-very-long-article-slug.html"
    cut = terminal.cut_middle(url, 40)
    assert len(cut) == 40 and cut.startswith("https://news.example.com") and cut.endswith(".html")


def test_no_colour_into_a_pipe_or_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert terminal.paint("ok", "green", Tty()) == "\033[32mok\033[0m"
    assert terminal.paint("ok", "green", io.StringIO()) == "ok"
    monkeypatch.setenv("NO_COLOR", "")
    assert terminal.paint("ok", "green", Tty()) == "ok"


# An OSC that retitles the window, a CSI as ESC [ and as the one-character C1 CSI, a BEL,
# a NUL, a backspace, a DEL: each a command to a terminal, none of them text.
HOSTILE = "a\x1b]0;pwned\x07b \x1b[31mred\x9b2J\x00\x08\x7f\x85end"


def test_clean_drops_every_control_character_and_keeps_the_text() -> None:
    assert terminal.clean(HOSTILE) == "a]0;pwnedb [31mred2Jend"
    every = "".join(map(chr, [*range(0x00, 0x20), *range(0x7F, 0xA0)]))
    assert terminal.clean(every) == "\t\n\n"  # tab, newline, carriage return as newline
    assert terminal.clean(every, one_line=True) == "   "
    text = "Ünïcödé, 東京, emoji 🎉, NBSP\u00a0and ÿ stay as they are"
    assert terminal.clean(text) is text  # nothing to do: no copy either
    article = "First paragraph.\n\tSecond paragraph.\n"
    assert terminal.clean(article) is article  # lines and tabs stay: no copy of a page


def test_clean_keeps_lines_in_text_and_makes_one_line_of_a_title() -> None:
    body = "First paragraph.\r\n\tSecond,\rover the first?\n"
    assert terminal.clean(body) == "First paragraph.\n\tSecond,\nover the first?\n"
    assert terminal.clean("Title\non\ttwo\r\nlines", one_line=True) == "Title on two  lines"


def test_lines_cut_for_the_terminal_carry_no_control_characters() -> None:
    assert terminal.cut(HOSTILE, 80) == "a]0;pwnedb [31mred2Jend"
    assert "\x1b" not in terminal.cut_middle("https://e.com/\x1b]0;x\x07" + "a" * 100, 40)
