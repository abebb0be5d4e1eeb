"""The kit every page of ``feedsync serve`` is made with: escaping (everything from a
feed or a page is hostile), links (to an original: http and https only; within the
site: relative), the one layout around a page, conditional GET of a page, and the
one-line answers to a bad parameter. Pure: text in, text out.

Why: feedsync/serve/pages.py says what each page shows; how any text reaches HTML is
decided here once, so that no page can forget it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from feedsync import __version__
from feedsync import terminal as t
from feedsync.serve import web

HTML = "text/html; charset=utf-8"
#: the words of an article's text shown under its title in a list
LEAD_CHARS = 220
DIGITS = re.compile(r"[1-9][0-9]{0,17}")
LINK = re.compile(r"https?://[^\s\x00-\x20\x7f-\x9f]+", re.IGNORECASE)


# ---------------------------------------------------------------- escaping


def esc(text: str | None) -> str:
    """Text for HTML, on one line: control characters dropped, ``& < > " '`` escaped."""
    return html.escape(t.clean(text or "", one_line=True), quote=True)


def href(url: str | None) -> str | None:
    """``url`` escaped for an ``href``, when it is an http or https URL with no space or
    control character in it; None for anything else (``javascript:``, ``data:``, a
    relative or broken URL): shown as text, never followed."""
    if not url or LINK.fullmatch(url) is None:
        return None
    return html.escape(url, quote=True)


def original_link(url: str, label: str | None = None, cls: str = "original") -> str:
    """A link to an article's or a feed's own address (text when it is not http(s))."""
    target = href(url)
    shown = esc(label if label is not None else url)
    if target is None:
        return f'<span class="{cls}">{shown}</span>'
    return f'<a class="{cls}" href="{target}" rel="noreferrer noopener">{shown}</a>'


def marked(snippet: str) -> str:
    """A search snippet for HTML: escaped, then its marks (terminal.MARK_ON/OFF, control
    characters the snippet's text cannot hold) made ``<mark>``; an unpaired mark is
    closed, so the tags always balance."""
    out: list[str] = []
    opened = False
    for piece in re.split(f"([{t.MARK_ON}{t.MARK_OFF}])", snippet):
        if piece == t.MARK_ON:
            if not opened:
                out.append("<mark>")
                opened = True
        elif piece == t.MARK_OFF:
            if opened:
                out.append("</mark>")
                opened = False
        else:
            out.append(esc(piece))
    if opened:
        out.append("</mark>")
    return "".join(out)


def when(stamp: str | None, empty: str = "never") -> str:
    """A ``<time>`` element for a stored UTC time, as the commands print it."""
    if not stamp:
        return esc(empty)
    return f'<time datetime="{esc(stamp)}">{esc(t.short_time(stamp))}</time>'


def lead(body: str) -> str:
    """The first words of an article's text, cut at a word."""
    flat = " ".join(t.clean(body, one_line=True).split())
    if len(flat) <= LEAD_CHARS:
        return flat
    cut = flat.rfind(" ", 0, LEAD_CHARS)
    return flat[: cut if cut > LEAD_CHARS // 2 else LEAD_CHARS] + "…"


# ---------------------------------------------------------------- the layout

_NAV = (("/", "News"), ("/feeds", "Feeds"), ("/failed", "Failed"), ("/status", "Status"))


def layout(title: str, main: str, *, here: str = "", query: str = "") -> bytes:
    """The one page around every page's ``main``: the header's navigation with the
    search box (a GET form), ``title`` (escaped here) in the tab."""
    links = []
    for path, name in _NAV:
        if path == "/":
            links.append(f'<a href="/"{_here(here == path)}>{name}</a>')
            links.append(
                '<form id="search" action="/search" method="get" role="search">'
                f'<input type="search" name="q" value="{esc(query)}" '
                'aria-label="Search the articles" placeholder="Search">'
                '<button type="submit">Search</button></form>'
            )
        else:
            links.append(f'<a href="{path}"{_here(here == path)}>{name}</a>')
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="robots" content="noindex, nofollow">'
        f"<title>{esc(title)} · feedsync</title>"
        '<link rel="icon" href="data:,">'
        '<link rel="stylesheet" href="/style.css">'
        "</head><body><header><nav>"
        '<a class="brand" href="/">feedsync</a>'
        + "".join(links)
        + f"</nav></header><main>{main}</main></body></html>\n"
    )
    return page.encode()


def _here(yes: bool) -> str:
    return ' class="here" aria-current="page"' if yes else ""


def page_answer(
    request: web.Request, parts: Iterable[object], title: str, main: str, **options: str
) -> web.Response:
    """A page under conditional GET: its ETag from ``parts`` (what it shows) and the
    code's version (a new feedsync renders anew)."""
    etag = web.etag_of(__version__, *parts)
    return web.conditional(request, etag, None, HTML, lambda: layout(title, main, **options))


def page_body(title: str, main: str, **options: str) -> web.Body:
    """A page for ``web.keyed``, which tags it from the storage's content_key."""
    return web.Body(layout(title, main, **options))


def bad_request(message: str) -> web.Response:
    return web.text(400, message)


def positive(request: web.Request, name: str) -> int | None:
    """``?name=`` as a positive whole number; None when absent. Raises ValueError with the
    one line to answer when it is anything else."""
    raw = request.query.get(name)
    if raw is None:
        return None
    if DIGITS.fullmatch(raw) is None:
        raise ValueError(f"bad {name}: {raw[:40]!r} is not a positive whole number")
    return int(raw)


def link(path: str, **query: str | int | None) -> str:
    """A relative link with its query, escaped for an attribute."""
    from urllib.parse import urlencode

    params = {k: str(v) for k, v in query.items() if v is not None and v != ""}
    return html.escape(path + (f"?{urlencode(params)}" if params else ""), quote=True)
