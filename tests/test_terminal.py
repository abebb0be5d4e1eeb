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
