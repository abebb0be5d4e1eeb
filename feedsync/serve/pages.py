"""The read-only web page of ``feedsync serve``: the news, search, one article, the feeds'
health, the failed articles and the status, as server-rendered HTML5.

Each page is a :data:`feedsync.serve.web.Handler` (a bound method of :class:`Pages`,
which holds the few settings the pages need from the config: when a feed counts as
failing, how many attempts an article gets, the daemon's tick for "running"). They read
through the storage's read methods only, and nothing on any page changes data: the one
form is the search, a GET.

Why it is built the way it is:

- **Everything from a feed or a page is hostile.** Every text goes through ``markup.esc``
  (control characters dropped, then ``html.escape(quote=True)``), every link to an
  original through ``markup.href`` (http and https only: a ``javascript:`` or ``data:``
  link is shown as text, never as a link). A search snippet is escaped first and only
  then are its marks turned into ``<mark>``: the marks are control characters, which
  the snippet can never hold (storage/search.py cleans the text before it marks it).
- **No script, no inline style, no external resource**: the server's
  Content-Security-Policy allows none (``default-src 'none'; style-src 'self'; img-src
  'self' data:; form-action 'self'``), so all the look is /style.css
  (feedsync/serve/style.py) and the chart is inline SVG (feedsync/serve/chart.py).
- **The same facts as the commands**, in their words: a feed's health is
  ``feedsync feeds``' line, a failed article's state is ``feedsync news --state``'s, the
  status page is ``feedsync status``'s report (feedsync/status.py).
- **Links are relative to the site's root**: the server keeps the token in a cookie for
  the page. The feed links (Atom, JSON Feed, OPML) are absolute and carry the token
  (``Request.link``): they are for copying into a reader app, which cannot log in.
- **Stable hooks for a browser to drive**: ``li.item a.title`` (each article of a
  list), ``a.next`` (the next page: older news, more hits), ``a.prev`` (a search's
  page before), ``a.first`` (back to the newest news), ``form#search``, ``article#text``,
  ``section.feed#feed-<id>``, ``li.entry`` (a failed article).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from feedsync import __version__, timestamps
from feedsync import terminal as t
from feedsync.health import ENTRY_STATES, articles_line, entry_state_line, feed_health_line
from feedsync.serve import chart, web
from feedsync.serve.markup import (
    DIGITS,
    HTML,
    bad_request,
    esc,
    layout,
    lead,
    link,
    marked,
    original_link,
    page_answer,
    page_body,
    positive,
    when,
)
from feedsync.serve.style import STYLE
from feedsync.storage_errors import UnknownArticle

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.records import FeedHealth, NewsItem, SearchHit, StagedEntry
    from feedsync.storage import Storage

CSS = "text/css; charset=utf-8"

#: articles on a page of the news and of a search
PER_PAGE = 30
#: a search counts its hits up to this many ("more than 300 found" beyond), without
#: their snippets (Reading.search_count); only the page's hits are made
SEARCH_COUNTED = 300
#: the furthest page of a search (each page asks for all the hits before it)
SEARCH_PAGES = 100
#: failed and given-up articles listed on /failed, each (their counts are said)
FAILED_SHOWN = 200
#: the chart's weeks
CHART_DAYS = 28

_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8}){0,3}")


# ---------------------------------------------------------------- the pages


class Pages:
    """The page handlers, with what they need of the config. Every public method but
    the constructor is a :data:`feedsync.serve.web.Handler`."""

    def __init__(self, config: Config, recent: web.Recent = web.NO_WINDOW) -> None:
        self.config = config
        self.window = config.serve.window  # in the keyed ETags, as the feed documents'
        # the server's freshness window ([serve] fresh, feedsync/serve/routes.py makes
        # it); the default: none, every request with a tag asks the key
        self.recent = recent
        self.failing_after = config.poll.failing_after
        self.max_attempts = config.extract.max_attempts

    # ------------------------------------------------------------ /

    def news_page(self, storage: Storage, request: web.Request) -> web.Response:
        """``/``: the articles, newest first, :data:`PER_PAGE` a page; ``?before=<id>``
        the page after that article, ``?feed=<id>`` one feed's, ``?category=`` one
        folder's."""
        try:
            before = positive(request, "before")
            feed_id = positive(request, "feed")
        except ValueError as exc:
            return bad_request(str(exc))
        category = request.query.get("category") or None
        return self._keyed(
            storage, request, lambda: self._news(storage, request, before, feed_id, category)
        )

    def _news(
        self,
        storage: Storage,
        request: web.Request,
        before: int | None,
        feed_id: int | None,
        category: str | None,
    ) -> web.Body | web.Response:
        try:
            items = storage.news_window(
                feed_id=feed_id, category=category, before=before, limit=PER_PAGE + 1
            )
        except UnknownArticle:  # a stale link: retention took the article it starts after
            return web.text(404, f"no article {before} to go on from (see / for the newest)")
        more = len(items) > PER_PAGE
        items = items[:PER_PAGE]
        heading = "News"
        if feed_id is not None:
            name = storage.feed_name(feed_id)
            if name is None:
                return web.text(404, f"no feed {feed_id} (see /feeds)")
            heading = f"News from {name}"
        elif category is not None:
            heading = f"News in {category}"
        if not items:
            empty = "No articles" + (" older than that one." if before else " yet.")
            if before is None and feed_id is None and category is None:
                # the entries waiting or failing are no articles: content_key may not
                # move with them, so this page is tagged by what it says
                empty += _not_there(storage)
                main = f"<h1>{esc(heading)}</h1><p>{empty}</p>"
                return page_answer(request, ["news", empty], heading, main)
            return page_body(heading, f"<h1>{esc(heading)}</h1><p>{empty}</p>")
        rows = [_news_item(item) for item in items]
        pager = ""
        if more or before is not None:
            newest = link("/", feed=feed_id, category=category)
            older = link("/", before=items[-1].id, feed=feed_id, category=category)
            pager = (
                '<nav class="pages">'
                + (f'<a class="first" href="{newest}">← Newest</a>' if before else "<span></span>")
                + (f'<a class="next" href="{older}">Older →</a>' if more else "")
                + "</nav>"
            )
        main = f'<h1>{esc(heading)}</h1><ol class="items">{"".join(rows)}</ol>{pager}'
        return page_body(heading, main, here="/")

    # ------------------------------------------------------------ /search

    def search_page(self, storage: Storage, request: web.Request) -> web.Response:
        """``/search?q=...&page=N``: ``feedsync search``'s query language and answer,
        best first, :data:`PER_PAGE` a page, the matches marked."""
        from feedsync.storage.search import QueryError, parse

        query = " ".join(request.query.get("q", "").split())
        try:
            page = positive(request, "page") or 1
        except ValueError as exc:
            return bad_request(str(exc))
        if page > SEARCH_PAGES:
            return bad_request(f"bad page: {page} is past the last page a search shows")
        if not query:
            main = (
                "<h1>Search</h1><p>Words are all looked for (AND); <code>a OR b</code>, "
                '<code>-word</code> or <code>NOT word</code>, <code>"a phrase"</code> and '
                "<code>prefix*</code> as in <code>feedsync search</code>.</p>"
            )
            return page_answer(request, ["search"], "Search", main, query=query)
        try:
            parse(query)
        except QueryError as exc:
            main = f'<h1>Search</h1><p class="alert">{esc(str(exc))}</p>'
            page_bytes = layout("Search", main, query=query)
            return web.Response(400, HTML, page_bytes)
        return self._keyed(storage, request, lambda: _search(storage, query, page))

    # ------------------------------------------------------------ /article/<id>

    def article_page(self, storage: Storage, request: web.Request) -> web.Response:
        """``/article/<id>``: one article to read: its title, feeds, author, date, the
        link to the original and its text in paragraphs."""
        ref = request.path.removeprefix("/article/").rstrip("/")
        if DIGITS.fullmatch(ref) is None:
            return web.text(404, f"no article {ref[:40]!r} (see / or /search)")

        def answer() -> web.Body | web.Response:
            item = storage.news_get(int(ref))
            if item is None:
                return web.text(404, f"no article {ref} (see / or /search)")
            feeds = storage.news_feeds(item.id)
            return page_body(t.clean(item.title, one_line=True), _article(item, feeds))

        return self._keyed(storage, request, answer)

    def _keyed(
        self,
        storage: Storage,
        request: web.Request,
        answer: Callable[[], web.Body | web.Response],
    ) -> web.Response:
        """A page made only of articles and feeds' names (what content_key covers):
        its ETag from the key and the request, so a repeat request with it is a 304
        before any article is read, and within the freshness window before the key is
        (``web.keyed``)."""

        def tag() -> str:
            return web.key_etag(storage.content_key(), request, __version__, self.window)

        return web.keyed(request, tag, HTML, answer, recent=self.recent)

    # ------------------------------------------------------------ /feeds

    def feeds_page(self, storage: Storage, request: web.Request) -> web.Response:
        """``/feeds``: every feed, its health in ``feedsync feeds``' words, its last poll
        and error, its articles this week, its full-text feeds; above them, the articles
        per day of the last weeks."""
        now = timestamps.now()
        feeds = storage.feed_health(week_ago=timestamps.to_iso(now - timedelta(days=7)))
        days = chart.last_days(now.date(), CHART_DAYS)
        per_day = storage.news_per_day(days[0])
        parts = ["feeds", feeds, per_day, days[-1]]
        if not feeds:
            main = "<h1>Feeds</h1><p>No feeds yet: add one with <code>feedsync add URL</code>.</p>"
            return page_answer(request, parts, "Feeds", main, here="/feeds")
        names = {f.id: f.title or f.url for f in feeds}
        week = {f.id: 0 for f in feeds}
        for feed_id, day, count in per_day:
            if day >= days[-7] and feed_id in week:
                week[feed_id] += count
        troubled = sum(1 for f in feeds if self._health(f)[0] != "ok")
        summary = f"{t.plural(len(feeds), 'feed')}" + (
            f", {troubled} not ok" if troubled else ", all ok"
        )
        blocks = [
            f'<h1>Feeds</h1><p class="count">{esc(summary)}. '
            f'<a class="opml" href="{esc(request.link("/feeds.opml"))}">OPML of them all</a>'
            f' · <a class="atom" href="{esc(request.link("/feeds/all.atom"))}">'
            "every article (Atom)</a></p>",
            chart.articles_per_day(per_day, names, days, caption="Articles fetched per day"),
        ]
        blocks += [self._feed_section(f, week[f.id], request) for f in feeds]
        return page_answer(request, parts, "Feeds", "".join(blocks), here="/feeds")

    def _health(self, feed: FeedHealth) -> tuple[str, str]:
        """(class, line): ok, warn (retrying, not polled yet) or bad (failing, disabled,
        articles failing), with ``feedsync feeds``' line."""

        line = feed_health_line(feed, self.failing_after)
        if line == "ok":
            return "ok", line
        bad = not feed.enabled or feed.error_count >= self.failing_after or feed.articles_in_trouble
        return ("bad" if bad else "warn"), line

    def _feed_section(self, feed: FeedHealth, week: int, request: web.Request) -> str:

        kind, health = self._health(feed)
        title = feed.title or t.NO_TITLE
        folder = f' <span class="dim">[{esc(feed.category)}]</span>' if feed.category else ""
        facts = [("health", f'<span class="health {kind}">{esc(health)}</span>')]
        if feed.error_count and feed.enabled:
            since = (
                f"its last success, {when(feed.last_success_at)}"
                if feed.last_success_at
                else "it was added: no poll has succeeded yet"
            )
            facts.append(("failing since", since))
        facts.append(("last poll", when(feed.last_poll_at)))
        facts.append(("last success", when(feed.last_success_at)))
        if feed.last_error and (feed.error_count or not feed.enabled):
            facts.append(("last error", f'<span class="last-error">{esc(feed.last_error)}</span>'))
        if feed.last_warning and feed.enabled:
            facts.append(("warning", esc(feed.last_warning)))
        facts.append(("next poll", when(feed.next_poll_at, "none scheduled")))
        facts.append(
            (
                "articles",
                f'<a href="{link("/", feed=feed.id)}">{esc(t.plural(week, "article"))} '
                "this week</a> · "
                f"{esc(t.plural(feed.entries, 'entry', 'entries'))} · latest "
                + when(feed.latest_published, "none"),
            )
        )
        trouble = articles_line(feed)
        if trouble:
            facts.append(("failing articles", f'<a href="/failed">{esc(trouble)}</a>'))
        if feed.moved_from:
            facts.append(("moved from", esc(feed.moved_from)))
        atom = esc(request.link(f"/feeds/{feed.id}.atom"))
        json_feed = esc(request.link(f"/feeds/{feed.id}.json"))
        facts.append(
            (
                "full text",
                f'<a class="atom" href="{atom}">Atom</a> · '
                f'<a class="jsonfeed" href="{json_feed}">JSON Feed</a>',
            )
        )
        rows = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in facts)
        return (
            f'<section class="feed {kind}" id="feed-{feed.id}"><h2>{esc(title)}{folder}</h2>'
            f'<p class="meta">{original_link(feed.url, cls="url")}</p>'
            f'<dl class="facts">{rows}</dl></section>'
        )

    # ------------------------------------------------------------ /failed

    def failed_page(self, storage: Storage, request: web.Request) -> web.Response:
        """``/failed``: the articles that failed (to be tried again) and those given up,
        each with its reason and, for the first, its next try (``feedsync news --state
        failed`` and ``--state given-up``)."""
        main = ["<h1>Failed articles</h1>"]
        parts: list[object] = ["failed"]
        for state, heading, none in (
            ("failed", "Failed, to be tried again", "None is failing."),
            ("gone", "Given up", "None was given up."),
        ):
            entries = storage.entries_in_state(state, "", None, FAILED_SHOWN)
            count = (
                storage.entries_count(state, "", None)
                if len(entries) >= FAILED_SHOWN
                else len(entries)
            )
            parts.append((state, count, entries))
            shown = f" ({count})" if count else ""
            main.append(
                f'<h2 id="{"failed" if state == "failed" else "given-up"}">{heading}{shown}</h2>'
            )
            if not entries:
                main.append(f'<p class="dim">{none}</p>')
                continue
            if count > len(entries):
                name = "failed" if state == "failed" else "given-up"
                main.append(
                    f'<p class="dim">The newest {len(entries)} of {count}; all of them: '
                    f"<code>feedsync news --state {name}</code></p>"
                )
            main.append('<ul class="items">')
            main += [self._entry(e) for e in entries]
            main.append("</ul>")
        return page_answer(request, parts, "Failed articles", "".join(main), here="/failed")

    def _entry(self, entry: StagedEntry) -> str:

        feeds = ", ".join(
            f'<a href="/feeds#feed-{i}">{esc(title or url)}</a>' for i, url, title in entry.feeds
        )
        reason = f'<p class="reason bad">{esc(entry.last_error)}</p>' if entry.last_error else ""
        return (
            f'<li class="item entry {esc(entry.state)}">'
            f"{original_link(entry.url, entry.title or entry.url, cls='title')}"
            f'<p class="meta">{feeds or "-"} · {when(entry.published or entry.first_seen_at)}</p>'
            f'<p class="state">{esc(entry_state_line(entry, self.max_attempts))}</p>'
            f"{reason}</li>"
        )

    # ------------------------------------------------------------ /status

    def status_page(self, storage: Storage, request: web.Request) -> web.Response:
        """``/status``: ``feedsync status``'s facts: the daemon, the feeds by health, the
        queue, the articles, the clock, the RAM disk and the card against their budgets
        and the last save."""
        from feedsync import status

        report = status.report(self.config, storage)
        stable = {k: v for k, v in report.items() if k != "clock"}  # it reads "now"
        main = _status(report)
        return page_answer(
            request, ["status", stable, report["clock"]["state"]], "Status", main, here="/status"
        )

    # ------------------------------------------------------------ /style.css

    def stylesheet(self, storage: Storage, request: web.Request) -> web.Response:
        """``/style.css``: the one stylesheet (feedsync/serve/style.py)."""
        return web.conditional(request, STYLE_ETAG, None, CSS, lambda: STYLE_BYTES, max_age=3600)


STYLE_BYTES = STYLE.encode()
STYLE_ETAG = web.etag_of("style", STYLE)


# ---------------------------------------------------------------- pieces


def _search(storage: Storage, query: str, page: int) -> web.Body:
    """A search's page of hits: counted up to :data:`SEARCH_COUNTED` (or this page's
    last) without snippets, only this page's hits made."""
    counted = max(page * PER_PAGE, SEARCH_COUNTED)
    total = storage.search_count(query, counted + 1)
    hits = storage.search(query, page * PER_PAGE, (t.MARK_ON, t.MARK_OFF))
    shown = hits[(page - 1) * PER_PAGE : page * PER_PAGE]
    if total > counted:
        found = f"More than {counted} articles found"
    else:
        found = f"{t.plural(total, 'article')} found".capitalize()
    if not shown and total:
        found += f"; page {page} is past the last one"
    blocks = [f'<h1>Search: {esc(query)}</h1><p class="count">{esc(found)}.</p>']
    blocks.append(f'<ol class="items">{"".join(_hit_item(h) for h in shown)}</ol>')
    prev = link("/search", q=query, page=page - 1 if page > 2 else None)
    later = link("/search", q=query, page=page + 1)
    nav = [
        f'<a class="prev" href="{prev}">← Better matches</a>' if page > 1 else "<span></span>",
        f'<a class="next" href="{later}">More →</a>' if total > page * PER_PAGE else "",
    ]
    blocks.append(f'<nav class="pages">{"".join(nav)}</nav>')
    return page_body(f"Search: {query}", "".join(blocks), query=query)


def _news_item(item: NewsItem) -> str:
    return (
        f'<li class="item" id="a{item.id}"><a class="title" href="/article/{item.id}">'
        f"{esc(item.title)}</a>"
        f'<p class="meta"><span class="feed">{esc(item.feed_title or "-")}</span> · '
        f"{when(item.published or item.fetched_at)}</p>"
        f'<p class="lead">{esc(lead(item.body))}</p></li>'
    )


def _hit_item(hit: SearchHit) -> str:
    return (
        f'<li class="item" id="a{hit.id}"><a class="title" href="/article/{hit.id}">'
        f"{esc(hit.title)}</a>"
        f'<p class="meta"><span class="feed">{esc(hit.feed_title or "-")}</span> · '
        f"{when(hit.published, 'undated')}</p>"
        f'<p class="snippet">{marked(hit.snippet)}</p></li>'
    )


def _article(item: NewsItem, feeds: Sequence[tuple[int, str, str | None]]) -> str:
    language = item.language if item.language and _LANGUAGE.fullmatch(item.language) else None
    lang = f' lang="{esc(language)}"' if language else ""
    byline = [when(item.published, "date unknown")]
    if item.author:
        byline.append(f'<span class="author">{esc(item.author)}</span>')
    byline.append(
        ", ".join(
            f'<a class="feed" href="/feeds#feed-{i}">{esc(title or url)}</a>'
            for i, url, title in feeds
        )
        or esc(item.feed_title or "-")
    )
    paragraphs = "".join(
        f"<p>{esc(line)}</p>" for line in t.clean(item.body).split("\n") if line.strip()
    )
    return (
        f'<h1{lang} dir="auto">{esc(item.title)}</h1>'
        f'<p class="meta">{" · ".join(byline)}</p>'
        f'<p class="meta">{original_link(item.url, "Read the original")} '
        f'<span class="dim">({esc(item.url)})</span></p>'
        f'<article id="text"{lang} dir="auto">{paragraphs}</article>'
        f'<p class="meta">Fetched {when(item.fetched_at)} · article {item.id}</p>'
    )


def _not_there(storage: Storage) -> str:
    """Where the news is empty: the articles that are not there, so "no articles yet"
    never hides 20 failing ones (as ``feedsync news`` says it)."""

    found = []
    for name, state in ENTRY_STATES.items():
        count = storage.entries_count(state, "", None)
        if count:
            found.append(f"{count} {name}")
    if not found:
        return ""
    return f' But {", ".join(found)}: see <a href="/failed">Failed</a>.'


def _meter(used: int | None, budget: int | None) -> str:
    if used is None or not budget:
        return ""
    return (
        f'<br><meter min="0" max="{budget}" low="{budget * 7 // 10}" high="{budget * 9 // 10}" '
        f'optimum="0" value="{min(used, budget)}">{used * 100 // budget}%</meter>'
    )


def _status(report: dict[str, object]) -> str:
    """The status report (feedsync/status.py) as the page shows it."""
    from feedsync import status
    from feedsync.records import StorageStatus

    daemon_raw = report["daemon"]
    storage_raw = report["storage"]
    feeds = report["feeds"]
    queue = report["queue"]
    articles = report["articles"]
    clock = report["clock"]
    assert isinstance(daemon_raw, dict) and isinstance(storage_raw, dict)
    assert isinstance(feeds, dict) and isinstance(queue, dict)
    assert isinstance(articles, dict) and isinstance(clock, dict)
    daemon = status.DaemonState(**daemon_raw)
    where = StorageStatus(**storage_raw)
    if daemon.running:
        state = (
            f'<span class="ok">running</span> (pid {daemon.pid} on {esc(daemon.host)}, '
            f"since {when(daemon.since)}; last seen {when(daemon.last_seen)})"
        )
    elif daemon.last_seen:
        state = f'<span class="warn">not running</span> (last seen {when(daemon.last_seen)})'
    else:
        state = "not running (never started here; <code>feedsync run</code> works without it)"
    facts: list[tuple[str, str]] = [
        ("feedsync", esc(str(report["version"]))),
        ("daemon", state),
        (
            "feeds",
            f'<a href="/feeds">{feeds["total"]}</a>: {feeds["healthy"]} ok, '
            f"{feeds['retrying']} retrying, {feeds['failing']} failing, "
            f"{feeds['disabled']} disabled",
        ),
        (
            "queue",
            f'{queue["new"]} new, <a href="/failed#failed">{queue["failed_waiting"]} failed</a> '
            f'(waiting to retry), <a href="/failed#given-up">{queue["given_up"]} given up</a>',
        ),
        ("articles", f'{articles["today"]} today, <a href="/">{articles["total"]} in all</a>'),
        ("next poll", when(_str(report["next_poll_at"]), "none scheduled")),
        ("last success", when(_str(report["last_success_at"]))),
        ("clock", _clock(clock)),
    ]
    alerts: list[str] = []
    if where.snapshot is None:  # a server's database: its name, never a password
        from feedsync.storage import NO_CARD

        facts += [
            ("database", f"{esc(where.live)} ({esc(t.size(where.live_bytes))})"),
            ("saved", esc(f"no card: {NO_CARD}")),
        ]
    else:
        unsaved = where.unsaved_changes or 0
        changes = t.plural(unsaved, "change")
        if where.snapshot_at is None:
            saved = "never, " + (
                f"{changes} not on the card yet" if unsaved else "nothing to save yet"
            )
            saved_html = esc(saved)
        else:
            rest = (
                f"{changes} since, not on the card yet"
                if unsaved
                else "nothing since: the card is current"
            )
            saved_html = f"{when(where.snapshot_at)}, {esc(rest)}"
        facts += [
            (
                "RAM disk",
                f"{esc(t.size(where.live_bytes))} of its {esc(t.size(where.ram_budget))} budget, "
                f"{esc(t.size(where.ram_disk_free))} free of {esc(t.size(where.ram_disk_size))}"
                f"{_meter(where.live_bytes, where.ram_budget)}"
                f'<br><span class="dim">{esc(where.live)}</span>',
            ),
            (
                "card",
                f"{esc(t.size(where.snapshot_bytes))} of its {esc(t.size(where.card_budget))} "
                f"budget, {esc(t.size(where.card_disk_free))} free of "
                f"{esc(t.size(where.card_disk_size))}"
                f"{_meter(where.snapshot_bytes, where.card_budget)}"
                f'<br><span class="dim">{esc(where.snapshot)}</span>',
            ),
            ("saved", saved_html),
        ]
        if where.card_behind:
            alerts.append(f"CARD BEHIND: {where.card_behind}: the next save fills it")
        if where.card_read_only:
            alerts.append(f"READ-ONLY: {where.card_read_only}")
    alerts += [f"NEARLY FULL: {problem}" for problem in where.nearly_full]
    if where.not_taking:
        alerts.append(f"NOT TAKING new entries: {where.not_taking}")
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in facts)
    warnings = "".join(f'<p class="alert">{esc(a)}</p>' for a in alerts)
    return f'<h1>Status</h1>{warnings}<dl class="facts status">{rows}</dl>'


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _clock(state: dict[str, str]) -> str:
    """``feedsync status``'s clock line: believed or not, and why."""
    from feedsync import clock

    why = esc(state.get("why", ""))
    if state.get("state") == clock.SYNCHRONIZED:
        return f'<span class="ok">synchronized</span> ({why})'
    if state.get("state") == clock.UNKNOWN:
        return f"not known to be synchronized ({why}); believed"
    word = "NOT SYNCHRONIZED" if state.get("state") == clock.UNSYNCHRONIZED else "CANNOT BE RIGHT"
    return f'<span class="bad">{word}</span>: retention waits for it<br>{why}'
