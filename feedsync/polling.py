"""Stages 1-2 of a pass: every feed polled, what is new staged, one write per feed.

Drawn as a pipe in docs/architecture.md ("One pass", the one drawing of the pass): the
feeds listed (one read), claimed in batches by host (claims.FeedClaims), each request's
turn from the hosts' politeness (politeness.hosts.Hosts.turn) and a conditional GET,
the parse on the parse thread, ``decide.poll(feed, Fetched | NotModified | Failed)`` ->
the feed's change (PollIntent, pure), and ``storage.record_polls`` with the poll's
HostNote: at most one transaction per feed, where entries are deduplicated.

Feed documents are parsed on a thread of their own (feedsync/parse_thread.py), beside
the database lane, so the lane runs only short transactions. A feed poll writes once,
whatever its outcome (the decision is one intent), and gives its host's turn back in
that same write (its ticket, feedsync/politeness/ticket.py, handed to the record); the
polls that finish while the lane is busy share one transaction
(feedsync/group_commit.py). Whatever goes wrong with one feed is recorded on that feed;
the pass goes on with the others.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from feedsync import decide, fetch, logs, timestamps
from feedsync.canonical import canonical_url, host_of
from feedsync.claims import FeedClaims, ahead_for
from feedsync.context import PassContext, unexpected
from feedsync.group_commit import GroupCommit
from feedsync.guard import Guard
from feedsync.parse_thread import ParseThread, parse_bound, parse_document
from feedsync.politeness.gate import HostBlocked
from feedsync.politeness.ticket import Ticket
from feedsync.records import (
    GONE,
    NOT_MODIFIED,
    STAGED,
    Answer,
    Failed,
    Feed,
    FeedClaim,
    Fetched,
    FetchOutcome,
    HostNote,
    NotModified,
    ParsedFeed,
    PollIntent,
    PollRecord,
)
from feedsync.storage import StorageFull, StorageUnavailable

if TYPE_CHECKING:
    from feedsync.pass_plan import PassPlan

P = ParamSpec("P")
T = TypeVar("T")


class FeedPolls:
    """The polls of one pass (see the module). Of the pass's plan they take which feeds
    and how (feedsync/pass_plan.py): every enabled one, or (``due_only``: the daemon,
    ``run --due``) those whose next poll time has come, or only the ids in ``only``
    (``feedsync add`` polls the new one). With ``extract``, the rows staged are leased to
    this pass's article queue; without (stage only), they are claimable by anyone at
    once. ``prefetched``: a feed's document fetched a moment ago (by ``feedsync add``'s
    discovery), with the guard that fetched it: its poll uses that response rather than
    asking again (taken from a copy: the plan is not changed)."""

    def __init__(self, context: PassContext, plan: PassPlan):
        self.context = context
        config = context.config
        self._due_only = plan.due_only
        self._only = plan.only
        self._prefetched = dict(plan.prefetched or {})
        self._due_before: str | None = None  # due-only passes: the feeds' due time
        self._claims = FeedClaims((), self._claim_feeds, self._claim_ahead)  # in listed
        self._feed_hosts: dict[int, str] = {}  # in listed
        self._parser = ParseThread()
        # the polls' writes: those that finish while the lane is busy go in one transaction
        self._records: GroupCommit[tuple[PollIntent, HostNote], PollRecord] = GroupCommit(
            lambda polls: context.on_lane(context.storage.record_polls, polls),
            whole=(StorageUnavailable,),
        )
        self._rules = decide.PollRules(
            base=config.poll.interval,
            min_interval=config.poll.min_interval,
            max_interval=config.poll.max_interval,
            lookback=config.poll.lookback,
            identity_window=config.identity.window,
            extract_lease=config.extract.lease if plan.extract else None,
            owner=context.owner,
        )

    async def listed(self, started_at: str, now: datetime) -> list[Feed]:
        """The feeds this pass polls, counted; when there is no room in RAM for what they
        would bring, none is polled (each is polled when there is room again)."""
        c = self.context
        self._due_before = started_at if self._due_only else None
        feeds = await c.on_lane(
            c.storage.feeds_to_poll, self._due_before, timestamps.to_iso(now - decide.WEEK)
        )
        if self._only is not None:
            feeds = [feed for feed in feeds if feed.id in self._only]
        c.stats.feeds = len(feeds)
        self._claims = FeedClaims(feeds, self._claim_feeds, self._claim_ahead)
        self._feed_hosts = {feed.id: host_of(feed.url) for feed in feeds}
        if feeds:
            # extraction and the save go on
            full = await c.on_lane(c.storage.room_for_entries)
            if full is not None:
                c.stats.not_taking = full
                c.problem(full)
        return feeds

    async def poll_all(self, feeds: list[Feed], started_at: str, now: datetime) -> None:
        """Every listed feed polled (at most ``concurrency`` documents in memory), those
        refused for a moment swept once more; then the held hosts given back."""
        c = self.context
        c.progress.start_feeds(len(feeds))
        # Bodies waiting for the parser count against the same bound as downloads, so
        # at most `concurrency` feed documents are in memory at once.
        in_memory = asyncio.Semaphore(c.config.poll.concurrency)
        keeper = asyncio.create_task(c.hosts.keep_holds())
        try:
            await asyncio.gather(*(self._poll(f, in_memory) for f in feeds))
            await self._sweep(in_memory, started_at, now)
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        await c.hosts.end()

    async def _sweep(self, in_memory: asyncio.Semaphore, started_at: str, now: datetime) -> None:
        """Once more, the feeds this pass was refused that are still due and free now. A
        claim skips a feed that another transaction has locked at that instant (on
        PostgreSQL: another poller's claim or a daemon bringing its config's feeds in),
        and the one holding the lock may not poll it either: without this it waited a
        whole tick (found by bench scenario 10)."""
        c = self.context
        refused = self._claims.refused
        if not refused or c.stopping:
            return
        listed = await c.on_lane(
            c.storage.feeds_to_poll, started_at, timestamps.to_iso(now - decide.WEEK)
        )
        again = [feed for feed in listed if feed.id in refused]
        if not again:
            return
        c.stats.busy -= len(again)
        self._claims = FeedClaims(again, self._claim_feeds, self._claim_ahead)
        await asyncio.gather(*(self._poll(f, in_memory) for f in again))

    # ------------------------------------------------------------ one feed

    async def _poll(self, feed: Feed, in_memory: asyncio.Semaphore) -> None:
        """One feed's poll, its failures contained: whatever goes wrong with it (any
        exception type: a parser, a header, a library bug on hostile input) is recorded
        on the feed and the pass goes on with the others. Its ticket keeps the host slots
        its request held, for its record to give back; what no record took goes back
        here."""
        ticket = Ticket()
        try:
            await self._poll_feed(feed, in_memory, ticket)
        except StorageUnavailable:
            raise  # the server is down: the pass ends, the daemon waits for it
        except Exception as exc:
            reason = unexpected(exc)
            logs.LOGGER.debug("feed %s: %s", feed.url, reason, exc_info=True)
            # this write failing too means the database's own trouble: that ends the pass
            intent = self._decide(feed, Failed(reason))
            record = await self._record(intent, HostNote(), ticket)
            self._count_feed(feed, intent, record)
        finally:
            # not given back by a record: the poll went otherwise
            await self.context.hosts.give_back(ticket)

    async def _record(self, intent: PollIntent, note: HostNote, ticket: Ticket) -> PollRecord:
        """The poll's one write: the feed's change, and its host's ``note`` with the host
        slots its request held (``ticket``) and, for a host this pass holds, the question
        whether another process wants it."""
        c = self.context
        given = ticket.slots
        held = c.hosts.holding(self._feed_hosts[intent.feed_id])
        record = await self._records((intent, note._replace(slots=given, held=held)))
        ticket.handed_in(given)
        if record.host_wanted:
            # another process was refused a turn on the held host: nothing more is held
            await c.hosts.company_came()
        return record

    async def _poll_feed(self, feed: Feed, in_memory: asyncio.Semaphore, ticket: Ticket) -> None:
        """fetch | parse | decide.poll | storage.record_poll: one write for the outcome."""
        c = self.context
        poll = c.config.poll
        parsed: ParsedFeed | None = None
        by_308 = False
        host = self._feed_hosts[feed.id]  # found once, when the pass listed it
        if c.stats.not_taking is not None:  # no room for new entries: poll it later
            self._defer()
            return
        if c.hosts.blocked(host):  # it asked us to wait: not even a conditional GET
            self._defer()
            return
        async with contextlib.AsyncExitStack() as memory:
            try:
                # the claim before the host's turn: a feed another process is polling
                # spends no slot and no start of the host's; room for the body once the
                # turn has come: a feed waiting for its host holds none
                async with c.hosts.turn(
                    feed.url,
                    first=lambda: self._claims.take(feed),
                    ready=lambda: memory.enter_async_context(in_memory),
                    ticket=ticket,
                ) as claimed:
                    if not claimed:
                        c.stats.busy += 1  # another process is polling it right now
                        c.progress.feed_done(0)
                        return
                    first = self._prefetched.pop(feed.id, None)
                    if first is not None:  # fetched a moment ago: not asked for again
                        response, guard = first
                    else:
                        guard = Guard.feed()
                        response = await fetch.get(
                            c.clients["feeds"],
                            feed.url,
                            max_bytes=poll.max_feed_bytes,
                            deadline=poll.timeout.total_seconds(),
                            accept=fetch.FEED_ACCEPT,
                            etag=feed.etag,
                            last_modified=feed.last_modified,
                            guard=guard,
                        )
            except HostBlocked:  # it said 429/503 while this feed waited for its turn
                await c.on_lane(c.storage.release_feed, feed.id, c.owner)
                self._defer()
                return
            except fetch.FetchError as exc:
                note = HostNote()
                hint = exc.retry_after
                if exc.host_busy:
                    hint, wait = c.hosts.block(host, exc)
                    note = HostNote(wait=wait)
                intent = self._decide(feed, Failed(str(exc), hint, gone=exc.status == 410))
            else:
                answer = Answer(
                    etag=response.etag,
                    last_modified=response.last_modified,
                    max_age=response.max_age,
                    moved_to=canonical_url(response.moved_to) if response.moved_to else None,
                    moved_by_308=response.moved_by_308,
                    # trust decided here, once, from the peer that served this document
                    lan_host=host_of(response.url) if guard.on_lan else None,
                )
                by_308 = response.moved_by_308
                note = HostNote(clear=c.hosts.unblocked(host))
                if response.not_modified:
                    intent = self._decide(feed, NotModified(answer))
                else:
                    intent, parsed = await self._parse_and_decide(feed, response, answer)
        try:
            record = await self._record(intent, note, ticket)
        except StorageFull as exc:
            # the RAM disk is full and the card cannot take more: nothing of this poll
            # is recorded (the feed is polled again later), no further feed is polled
            # in this pass; extraction and the save go on
            if c.stats.not_taking is None:
                c.stats.not_taking = str(exc)
                c.problem(str(exc))
            await c.on_lane(c.storage.release_feed, feed.id, c.owner)
            self._defer()
            return
        self._count_feed(feed, intent, record, parsed, by_308)

    def _defer(self) -> None:
        self.context.stats.deferred += 1
        self.context.progress.feed_done(0)

    async def _parse_and_decide(
        self, feed: Feed, response: fetch.Response, answer: Answer
    ) -> tuple[PollIntent, ParsedFeed | None]:
        """The document parsed on the parse thread; a parse that fails (not a feed, or a
        parser bug on hostile input) is the poll's failure, not the pass's."""
        fetched_at = self.context.clock()
        try:
            parsed = await self._parser.run(
                self.context.progress.working,
                parse_bound(len(response.body)),
                parse_document,
                response.body,
                response.url,
                fetched_at,
                response.content_type,
            )
        except Exception as exc:  # a parser bug on hostile input must not end the pass
            reason = f"cannot parse: {type(exc).__name__}: {exc}".splitlines()[0][:300]
            return self._decide(feed, Failed(reason)), None
        if isinstance(parsed, str):  # not a feed: why
            return self._decide(feed, Failed(parsed)), None
        return self._decide(feed, Fetched(answer, parsed), fetched_at), parsed

    def _decide(self, feed: Feed, outcome: FetchOutcome, now: datetime | None = None) -> PollIntent:
        """decide.poll at this pass's rules, with the jitter of its random source."""
        c = self.context
        return decide.poll(
            feed, outcome, now or c.clock(), self._rules, jitter=c.rng.uniform(-0.1, 0.1)
        )

    def _count_feed(
        self,
        feed: Feed,
        intent: PollIntent,
        record: PollRecord,
        parsed: ParsedFeed | None = None,
        by_308: bool = False,
    ) -> None:
        c = self.context
        s = c.stats
        s.polled += 1
        s.not_modified += intent.outcome == NOT_MODIFIED
        s.parsed += intent.outcome == STAGED
        if parsed is not None:
            s.entries_seen += len(parsed.entries) + parsed.skipped
            s.entries_skipped += parsed.skipped
        s.candidates += len(intent.entries)
        s.staged += len(record.created_ids)
        s.revisions += record.revisions
        error = intent.error
        if intent.outcome == GONE:
            error = f"{error} (disabled)"
        if error:
            s.feed_errors += 1
            c.problem(f"feed {feed.url}: {error}", feed.url)
        note = decide.move_note(intent, record.move_refused, by_308)
        if note:
            c.progress.problem(f"feed {feed.url}: {note}", feed.url)
        c.progress.feed_done(len(record.created_ids))

    # ------------------------------------------------------------ claims and holds

    async def _claim_feeds(self, ids: list[int]) -> FeedClaim:
        """One claim transaction (feedsync.claims), which also holds the feeds' hosts
        while the pass is alone (feedsync/politeness/holds.py)."""
        c = self.context
        now = c.clock()
        claim = await c.on_lane(
            c.storage.claim_feeds,
            ids,
            c.owner,
            timestamps.to_iso(now),
            timestamps.to_iso(now + c.config.poll.lease),
            self._due_before,
            c.hosts.to_hold(self._feed_hosts[i] for i in ids if i in self._feed_hosts),
            c.config.fetch.host_delay.total_seconds(),
            c.hosts.hold_lease,
        )
        await c.hosts.claimed(claim.held, claim.others)
        return claim

    def _claim_ahead(self, alone: bool) -> int:
        config = self.context.config
        poll = config.poll
        return ahead_for(
            poll.lease, config.fetch.host_delay, poll.per_host, poll.concurrency, alone=alone
        )
