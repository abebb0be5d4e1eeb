"""Human output: cutting to width, colour rules."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import sitegen
from conftest import FeedsyncEnv, Site, cli_env, on_a_terminal
from sitegen import Item

from feedsync import terminal


def test_cuts() -> None:
    assert terminal.cut("short", 10) == "short"
    assert terminal.cut("a long title here", 10) == "a long ti…"
    url = "https://news.example.com/2026/11/22/a-very-long-article-slug.html"
    cut = terminal.cut_middle(url, 40)
    assert len(cut) == 40 and cut.startswith("https://news.example.com/…/")
    assert cut.endswith(".html")
    # whole segments go first; the host and port and the uid's folder never
    assert (
        terminal.cut_middle(url, 56) == "https://news.example.com/…/a-very-long-article-slug.html"
    )
    site = "http://127.0.0.1:34367/articles/library-sunday-opening.html"
    assert terminal.cut_middle(site, 20).startswith("http://127.0.0.1:34367/")
    path = "/dev/shm/feedsync-1000/feedsync.db"
    assert terminal.cut_middle(path, 30) == "/…/feedsync-1000/feedsync.db"
    assert terminal.cut_middle("not a url or a path at all", 10) == "not a …all"


def test_the_width_off_a_terminal_is_whole_unless_columns_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal.width(io.StringIO()) == terminal.WHOLE
    monkeypatch.setenv("COLUMNS", "100")
    assert terminal.width(io.StringIO()) == 100


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


# ---------------------------------------------------------------- columns, not characters


def test_display_width_counts_columns_as_a_terminal_does() -> None:
    """Checked against rich's own cell widths (a maintained table, already a dependency)."""
    from rich.cells import cell_len

    for text in ["harbour", "東京の天気", "ｱｲｳ", "café", "cafe\u0301", "🎉 party", "한국어", "Ünï"]:
        assert terminal.display_width(text) == cell_len(text), text
    title = "東京の天気は明日も晴れ、気温は二十度まで上がる見込みです" * 2
    cut = terminal.cut(title, 40)
    assert terminal.display_width(cut) <= 40 and cut.endswith("…")
    middle = terminal.cut_middle("https://例え.jp/" + "記事" * 40 + ".html", 40)
    assert terminal.display_width(middle) <= 40 and middle.endswith(".html")
    lines = terminal.wrap("… " + "今日の東京は朝から晴れて、" * 20, 74, 2)
    assert len(lines) == 2 and all(terminal.display_width(x) <= 74 for x in lines)


def test_plural() -> None:
    assert terminal.plural(1, "entry") == "1 entry"
    assert terminal.plural(2, "entry") == "2 entries"
    assert terminal.plural(0, "change") == "0 changes"
    assert terminal.plural(3, "day") == "3 days"
    assert terminal.plural(2, "match") == "2 matches"


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _terminal_lines(env: FeedsyncEnv, *args: str, **extra: str) -> list[str]:
    environment = {**cli_env(env.root / "home"), "TERM": "xterm", "COLUMNS": "80", **extra}
    code, text = on_a_terminal(env.command(*args), environment, timeout=120)
    assert code == 0, text
    return [ANSI.sub("", line) for line in text.replace("\r\n", "\n").split("\n")]


def test_japanese_text_keeps_to_80_columns_on_a_terminal(fs: FeedsyncEnv, site: Site) -> None:
    """Titles in news and feeds, snippets in search, the text in show: every line within
    80 columns, where a Japanese character takes two."""
    text = "今日の東京は朝から晴れて、気温は二十度まで上がりました。明日も晴れの予報です。"
    title = "東京の天気は明日も晴れ、気温は二十度まで上がる見込みで、週末も穏やかな天気が続く"
    page = site.server.set(
        "/articles/tokyo",
        "<!DOCTYPE html><html lang='ja'><head><meta charset='utf-8'><title>t</title></head>"
        f"<body><article><h1>{title}</h1>"
        + "".join(f"<p>{text * 3}</p>" for _ in range(4))
        + "</article></body></html>",
        "text/html; charset=utf-8",
    )
    feed = site.server.set(
        "/feeds/ja.xml",
        sitegen.rss2(
            "日本のニュース、天気と暮らしと地域の話題をお届けする毎日の便り",
            site.url("/feeds/ja.xml"),
            [Item(title, page)],
        ),
        "application/rss+xml",
    )
    fs.configure([feed])
    fs.run("run")
    for args in (("news",), ("feeds",), ("search", "東京"), ("show", "1")):
        lines = _terminal_lines(fs, *args, PAGER="cat")
        wide = [x for x in lines if terminal.display_width(x) > 80]
        assert not wide, (args, wide)
        assert any("東京" in x or "日本" in x for x in lines), (args, lines)


# ---------------------------------------------------------------- the pager


def _recording_pager(folder: Path, name: str) -> Path:
    """A pager that keeps what it was given: its arguments, $LESS, and its input."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" > "{folder}/args"\n'
        f'printf "%s" "${{LESS-unset}}" > "{folder}/LESS.txt"\n'
        f'cat > "{folder}/input"\n'
    )
    script.chmod(0o755)
    return script


def test_show_gives_less_colours_it_can_show_and_other_pagers_plain_text(
    fs: FeedsyncEnv, site: Site, tmp_path: Path
) -> None:
    fs.configure([site.feed("f.xml", [Item("A story to read", site.page("story"))])])
    fs.run("run")
    base = {k: v for k, v in cli_env(fs.root / "home").items() if k not in ("PAGER", "LESS")}

    # no $PAGER: less, given -R, with LESS=FRX as the user has not set LESS
    bin_dir = tmp_path / "bin"
    _recording_pager(bin_dir, "less")
    path = {"PATH": f"{bin_dir}:{base['PATH']}"}
    code, out = on_a_terminal(fs.command("show", "1"), {**base, **path, "TERM": "xterm"})
    assert code == 0, out
    assert (bin_dir / "args").read_text() == "-R\n"
    assert (bin_dir / "LESS.txt").read_text() == "FRX"
    assert (bin_dir / "input").read_text().startswith("\033[1mA story to read\033[0m\n")

    # the user's LESS is kept as it is
    code, out = on_a_terminal(
        fs.command("show", "1"), {**base, **path, "TERM": "xterm", "LESS": "-i"}
    )
    assert code == 0, out
    assert (bin_dir / "LESS.txt").read_text() == "-i"

    # another pager: plain text, no escape codes to show raw
    other = _recording_pager(tmp_path / "other", "mypager")
    code, out = on_a_terminal(
        fs.command("show", "1"), {**base, "TERM": "xterm", "PAGER": f"{other} --flag"}
    )
    assert code == 0, out
    given = (tmp_path / "other" / "input").read_text()
    assert given.startswith("A story to read\n") and "\033" not in given
    assert (tmp_path / "other" / "args").read_text() == "--flag\n"
