"""Stage 3 of a pass: the article queue drained, each page fetched once and extracted.

Drawn as a pipe in docs/architecture.md ("One pass", the one drawing of the pass): until
the queue has nothing more for this pass, a row claimed with its lease (a short
transaction), its page fetched when its host's turn comes (politeness.hosts, no
transaction open), extracted by trafilatura in worker processes (CPU, bounded), then
``storage.save_article``, or ``decide.after_failure`` and
``storage.record_extract_failure`` (a short transaction).

Exactly once across overlapping processes: the staging insert (feedsync/polling.py)
names the rows it really created and leases them to this process; claims skip rows
leased to someone else. A pass walks the queue once, in id order (``after_id``), so a
row that fails is not retried in the same pass but on a later one, with its backoff.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING

from feedsync import decide, fetch, logs, timestamps
from feedsync.canonical import host_of
from feedsync.context import PassContext, unexpected
from feedsync.extract import ExtractError, Extractor
from feedsync.guard import Guard
from feedsync.politeness.gate import HostBlocked
from feedsync.progress import article_line
from feedsync.records import ArticleJob
from feedsync.storage import StorageUnavailable

if TYPE_CHECKING:
    from feedsync.pass_plan import PassPlan

# how long a worker's crash waits to be judged: a stop signal it died of is known by then
CRASH_GRACE = 1.0
HTML_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "application/xml", "text/xml")


class ArticleQueue:
    """The article queue of one pass (see the module). The extraction workers start
    only when a page is to be extracted. Of the pass's plan it takes ``own_only``: only
    the rows this pass's polls staged (``run --feed``), not the rest of the queue."""

    def __init__(self, context: PassContext, plan: PassPlan):
        self.context = context
        self._own_only = plan.own_only
        config = context.config
        self._extractor = Extractor(
            workers=config.extract.workers, timeout=config.extract.timeout.total_seconds()
        )

    def close(self, kill: bool) -> None:
        """Stop the extraction workers: after their page, or at once (``kill``)."""
        self._extractor.close(kill=kill)

    async def drain(self, due_before: str) -> None:
        """Claim and extract queue rows until none is left for this pass.

        At most ``concurrency`` articles are in work at once, and at most that many more
        are claimed ahead, so leases stay short. Cancelled (a stop), it cancels the
        articles in work and waits for them: none may run on after the pass, on clients
        it has closed.
        """
        self.context.progress.start_articles()
        running: set[asyncio.Task[None]] = set()
        try:
            await self._drain(due_before, running)
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running)
        # what another run held, so that "0 articles extracted" does not hide them
        c = self.context
        now = c.clock()
        c.stats.articles_busy = await c.on_lane(
            c.storage.articles_held_elsewhere,
            c.owner,
            timestamps.to_iso(now),
            timestamps.to_iso(now + c.config.extract.lease),
        )

    async def _drain(self, due_before: str, running: set[asyncio.Task[None]]) -> None:
        c = self.context
        width = c.config.poll.concurrency
        pending: deque[ArticleJob] = deque()
        after_id = 0
        exhausted = False
        while True:
            while len(running) < width:
                if not pending and not exhausted:
                    now = c.clock()
                    batch = await c.on_lane(
                        c.storage.claim_articles,
                        c.owner,
                        after_id,
                        due_before,
                        timestamps.to_iso(now),
                        timestamps.to_iso(now + c.config.extract.lease),
                        width,
                        decide.retry_horizon(now, c.config.extract.retry_backoff),
                        self._own_only,
                    )
                    if batch:
                        after_id = batch[-1].id
                        pending.extend(batch)
                        c.progress.articles_claimed(len(batch))
                    else:
                        exhausted = True
                if not pending:
                    break
                job = pending.popleft()
                running.add(asyncio.create_task(self._extract(job)))
            if not running:
                return
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            running -= done
            for task in done:
                task.result()  # a bug in _extract must surface, not vanish

    async def _extract(self, job: ArticleJob) -> None:
        """One article, its failures contained like a feed's (polling.FeedPolls._poll):
        recorded on the article as a failed attempt, retried later with the usual
        backoff."""
        try:
            await self._extract_article(job)
        except StorageUnavailable:
            raise
        except Exception as exc:
            reason = unexpected(exc)
            logs.LOGGER.debug("article %s: %s", job.url, reason, exc_info=True)
            await self._record_failure(job, reason, permanent=False)
            self.context.progress.article_done()

    async def _extract_article(self, job: ArticleJob) -> None:
        c = self.context
        config = c.config
        host = host_of(job.url)
        if c.hosts.blocked(host):  # the host asked us to wait: later, no attempt spent
            await c.on_lane(c.storage.release_job, job.id, c.owner)
            c.stats.deferred += 1
            c.progress.article_done()
            return
        # private addresses only on the host of the LAN feed document that staged the
        # entry (decided then, kept with it) and the owner's lan_hosts: feedsync/guard.py
        guard = Guard.article(
            allow_private=config.fetch.allow_private,
            lan_host=job.lan_host,
            lan_hosts=config.fetch.lan_hosts,
        )
        try:
            # its host slot given back at once (a feed poll's goes with its record)
            async with c.hosts.turn(job.url):
                page = await fetch.get(
                    c.clients["pages"],
                    job.url,
                    max_bytes=config.extract.max_page_bytes,
                    deadline=config.poll.timeout.total_seconds(),
                    accept=fetch.PAGE_ACCEPT,
                    guard=guard,
                )
            kind = (page.content_type or "text/html").split(";")[0].strip().lower()
            if kind not in HTML_TYPES:
                raise ExtractError(f"not an HTML page ({kind}): skipped", permanent=True)
            article = await self._extractor.extract(
                page.body,
                page.url,
                page.content_type,
                # the page's date only stands in for the feed's (decide.article_published)
                page_date=not job.published,
            )
        except HostBlocked:  # it said 429/503 while this one waited for its turn
            await c.on_lane(c.storage.release_job, job.id, c.owner)
            c.stats.deferred += 1
        except fetch.FetchError as exc:
            if exc.host_busy:
                await c.hosts.refused(host, exc)
                await c.on_lane(c.storage.release_job, job.id, c.owner)
                c.stats.deferred += 1
            else:
                await self._record_failure(job, str(exc), exc.permanent)
        except ExtractError as exc:
            if exc.crashed and not c.stopping:
                # A signal to the whole process group (Ctrl-C, systemd stopping the
                # service) kills the workers the instant it reaches feedsync, whose own
                # handler may run a moment after the dead worker is noticed: the crash
                # is judged once that moment has passed (a stop then gives the page back).
                await asyncio.sleep(CRASH_GRACE)
            await self._record_failure(job, str(exc), exc.permanent)
        else:
            await c.hosts.answered(host)
            now = c.clock()
            article = article._replace(author=job.author or article.author)
            published = decide.article_published(job.published, article.date, now)
            window = timestamps.to_iso(now - config.identity.window) if job.heuristics else None
            link = await c.on_lane(
                c.storage.save_article,
                job.id,
                article,
                published,
                timestamps.to_iso(now),
                window,
            )
            if link is None:
                c.stats.extracted += 1
            else:
                c.stats.duplicates += 1
        c.progress.article_done()

    async def _record_failure(self, job: ArticleJob, error: str, permanent: bool) -> None:
        c = self.context
        if c.stopping:
            # A failure met while the pass stops is the stop's doing, not the page's: a
            # signal to the whole process group (Ctrl-C, systemd's SIGTERM) reaches the
            # extraction workers and the forkserver too. The article goes back to the
            # queue as it was, no attempt spent.
            await c.on_lane(c.storage.release_job, job.id, c.owner)
            return
        outcome = decide.after_failure(
            job.attempts,
            error,
            c.clock(),
            max_attempts=c.config.extract.max_attempts,
            backoff=c.config.extract.retry_backoff,
            permanent=permanent,
        )
        await c.on_lane(c.storage.record_extract_failure, job.id, c.owner, outcome)
        if outcome.state == "gone":
            c.stats.gone += 1
        else:
            c.stats.extract_failed += 1
        # every one in the stats (run --json); progress groups them by host and reason
        c.stats.errors.append(article_line(job.url, error, outcome))
        c.progress.article_failed(job.url, error, outcome)
