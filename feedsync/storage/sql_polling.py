"""Stages 1 and 2, written once for both engines (the Polling role): claiming feeds
with the hosts a pass holds alone, and a poll's whole outcome in one transaction, its
entries staged and their revisions linked (the rules are feedsync/decide.py's and
feedsync/identity.py's; the transaction applies them). A poll's entries go in a few
statements for the whole poll, not a few per entry: the engine's batch
(feedsync/storage/sqlite_staging.py, feedsync/storage/pg_staging.py), then the revision
lookups of the rows it created in one more (``identity_batch``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from feedsync import clock, identity
from feedsync.records import (
    FAILED,
    GONE,
    NO_HOST_NOTE,
    NOT_MODIFIED,
    STAGED,
    Entry,
    FeedClaim,
    HostNote,
    PollIntent,
    PollRecord,
)
from feedsync.storage import sql_hosts
from feedsync.storage.sql_core import Connection, SQLCore


class SQLPolling(SQLCore):
    """The Polling role over named queries (a claim holds hosts and a poll writes its
    host's note through sql_hosts.py's functions, in the same transaction)."""

    def record_poll(self, intent: PollIntent, host: HostNote = NO_HOST_NOTE) -> PollRecord:
        """One feed poll, whatever its outcome, in one transaction: the staged entries
        (this is where they are deduplicated), the feed's row (schedule, validators,
        errors, its claim given back), its move, and its host's note."""
        return self.record_polls([(intent, host)])[0]

    def record_polls(self, polls: Sequence[tuple[PollIntent, HostNote]]) -> list[PollRecord]:
        """Several polls in one transaction, one after the other as record_poll writes
        each: what a poll later in the list stages sees what an earlier one staged."""
        intents = [intent for intent, _ in polls]

        def work(conn: Connection) -> list[PollRecord]:
            self._lock_entries(conn, intents)
            return [self._apply_poll(conn, intent, host) for intent, host in polls]

        return self._write(work)

    def _lock_entries(self, conn: Connection, intents: Sequence[PollIntent]) -> None:
        """In record_polls's transaction, before it writes a row: whatever makes the
        transactions of several processes that stage the same entries wait for each other
        in one order (PostgreSQL, feedsync/storage/pg_staging.py). Nothing on SQLite,
        where one writer at a time has the whole file."""

    def _apply_poll(self, conn: Connection, intent: PollIntent, host: HostNote) -> PollRecord:
        """In record_polls's transaction: one poll's whole outcome, then its host's note."""
        record = PollRecord()
        if intent.outcome == STAGED:
            record = self._stage(conn, intent)
        elif intent.outcome == NOT_MODIFIED:
            self._exec(
                conn,
                "poll_not_modified",
                feed_id=intent.feed_id,
                etag=intent.etag,
                last_modified=intent.last_modified,
                now=intent.polled_at,
                next_poll_at=intent.next_poll_at,
            )
        elif intent.outcome == FAILED:
            self._exec(
                conn,
                "poll_failed",
                feed_id=intent.feed_id,
                error=intent.error,
                now=intent.polled_at,
                next_poll_at=intent.next_poll_at,
            )
        elif intent.outcome == GONE:
            self._exec(
                conn,
                "poll_disable",
                feed_id=intent.feed_id,
                reason=intent.error,
                now=intent.polled_at,
            )
        else:
            raise ValueError(f"unknown poll outcome {intent.outcome!r}")
        if intent.redirect is not None:
            record = record._replace(move_refused=self._move(conn, intent))
        return sql_hosts.note(self, conn, host, intent.owner, record)

    def _stage(self, conn: Connection, intent: PollIntent) -> PollRecord:
        """In record_poll's transaction: the poll's candidates staged (INSERT, only those
        found in neither file nor table: this is where entries are deduplicated), linked
        to the feed, their missing dates filled in, in a few statements for the whole poll
        (:meth:`_stage_rows`, the engine's), then the revision lookups of the rows it
        created in one more (``identity_batch``). What is decided is what one insert per
        entry in feed order decided: the rows created, the links made, the revisions (a
        statement per entry cost ~50 µs of CPU each on SQLite, a round trip each on
        PostgreSQL)."""
        entries = merge_repeats(intent.entries)
        created: list[tuple[int, int, Entry]] = []  # (ord, id, entry)
        newly_linked: list[tuple[int, int]] = []  # (ord, id)
        for row in self._stage_rows(conn, intent, entries):
            entry = entries[row.ord]
            if row.created_id is not None:
                created.append((row.ord, row.created_id, entry))
                summary_id = row.created_id
            elif row.found_id is not None:
                summary_id = row.found_id
            else:
                # another poller's row, committed while the batch ran: seen now
                summary_id = self._stage_existing(conn, intent, entry)
            if row.linked or (
                row.created_id is None
                and row.found_id is None
                and self._link(conn, intent, summary_id)
            ):
                newly_linked.append((row.ord, summary_id))
        revisions = 0
        if intent.identity == identity.AUTO and created:
            revisions = self._link_revisions(conn, intent, created, newly_linked)
        self._feed_polled(conn, intent)
        return PollRecord(
            created_ids=tuple(summary_id for _, summary_id, _ in created),
            linked=len(newly_linked),
            revisions=revisions,
        )

    def _stage_rows(
        self, conn: Connection, intent: PollIntent, entries: Sequence[Entry]
    ) -> list[StagedRow]:
        """The engine's part of :meth:`_stage`: ``entries`` (one per (url, title)) staged,
        linked to the feed and dated, one :class:`StagedRow` per entry in feed order."""
        raise NotImplementedError

    def _stage_existing(self, conn: Connection, intent: PollIntent, entry: Entry) -> int:
        """The row of an entry that another transaction inserted while the batch ran
        (on PostgreSQL, rare: two pollers staging the same story at once), through the
        per-entry statements, which see that commit: its id, its date filled in."""
        existing = self._exec(conn, "stage_lookup", url=entry.url, title=entry.title).fetchone()
        summary_id = int(existing["id"])
        if existing["published"] is None and entry.published is not None:
            self._fill_date(conn, summary_id, entry.published)
        return summary_id

    def _link(self, conn: Connection, intent: PollIntent, summary_id: int) -> int:
        """The polled feed linked to an entry (1), or 0 when it already was."""
        return int(
            self._exec(
                conn,
                "stage_link",
                feed_id=intent.feed_id,
                summary_id=summary_id,
                now=intent.polled_at,
            ).rowcount
        )

    def _fill_date(self, conn: Connection, summary_id: int, published: str) -> None:
        """The row was staged first from a feed that gave no date; this one gives one."""
        self._pull_entry(conn, summary_id)
        self._exec(conn, "stage_fill_date", id=summary_id, published=published)

    def _feed_polled(self, conn: Connection, intent: PollIntent) -> None:
        """The feed's row after a poll that parsed: validators, schedule, its newest
        date (never backwards), no error; the last statement of every engine's stage."""
        self._exec(
            conn,
            "stage_feed_polled",
            feed_id=intent.feed_id,
            newest=intent.newest_published,
            title=intent.feed_title,
            etag=intent.etag,
            last_modified=intent.last_modified,
            now=intent.polled_at,
            next_poll_at=intent.next_poll_at,
            warning=intent.warning,
        )

    def _move(self, conn: Connection, intent: PollIntent) -> str | None:
        """In record_poll's transaction: a redirect seen (pending) or trusted (the feed
        takes the new URL). Returns why the move was refused: another feed has the URL,
        and this one is disabled."""
        state = intent.redirect
        assert state is not None
        if state.move_to is None:
            self._exec(
                conn,
                "poll_redirect_pending",
                feed_id=intent.feed_id,
                redirect_to=state.pending,
                seen=state.seen,
            )
            return None
        if self._exec(conn, "poll_move", feed_id=intent.feed_id, url=state.move_to).rowcount:
            return None
        reason = f"moved to {state.move_to}, which is already in the list as another feed"
        self._exec(conn, "feed_disable", id=intent.feed_id, reason=reason)
        return reason

    def claim_feeds(
        self,
        feed_ids: Sequence[int],
        owner: str,
        now: str,
        lease_until: str,
        due_before: str | None = None,
        hold: Sequence[str] = (),
        hold_delay: float = 0.0,
        hold_lease: float = 0.0,
    ) -> FeedClaim:
        """Claim feeds for polling, in one transaction: those no other live process holds
        (and, with ``due_before``, still due: another poller may have polled one since the
        pass listed it). Says too whether another process is at work on the database;
        when none is, holds the ``hold`` hosts it can (``sql_hosts.hold``)."""

        def work(conn: Connection) -> FeedClaim:
            taken = frozenset(
                int(row["id"])
                for row in self._exec(
                    conn,
                    "poll_claim",
                    ids=json.dumps(list(feed_ids)),
                    owner=owner,
                    now=now,
                    lease_until=lease_until,
                    lease_horizon=clock.horizon(lease_until),
                    due_before=due_before,
                    written_after=clock.horizon(due_before) if due_before else None,
                ).fetchall()
            )
            others = bool(
                self._exec(conn, "others_at_work", owner=owner, now=now).fetchone()["others"]
            )
            held: list[tuple[str, float]] = []
            if not others:
                for host in hold:
                    ahead = sql_hosts.hold(self, conn, host, owner, hold_delay, hold_lease)
                    if ahead is not None:
                        held.append((host, ahead))
            return FeedClaim(ids=taken, others=others, held=tuple(held))

        return self._write(work)

    def _link_revisions(
        self,
        conn: Connection,
        intent: PollIntent,
        created: list[tuple[int, int, Entry]],
        newly_linked: list[tuple[int, int]],
    ) -> int:
        """The created rows that are another version of an earlier story
        (``identity.revision``), judged in feed order from one statement's answer
        (``identity_batch``), each revision's article retitled as it is found (a
        statement per revision: a title edited is rare), all of them marked in one
        statement at the end. A match created by this same poll may itself be a revision
        found here: it is followed to its root (``roots``), as one insert per entry,
        marked before the next, gave it.

        The statement answers per key (URL, GUID) from the rows this poll neither created
        nor linked; walking the poll in feed order, the rows it created (URL) and linked
        (GUID) earlier in the feed than the row judged are added to that, so each row's
        candidates are what one insert per entry let it see, and the lowest id of them
        is its match, as before. The cost follows the poll's entries and the rows that
        share their keys: when each created row looked up every row of its URL and
        checked each against every row the poll created, 800 entries with one link took
        59 s of CPU inside the write transaction."""
        fresh = [summary_id for _, summary_id, _ in created]
        linked = [summary_id for _, summary_id in newly_linked]
        found = self._exec(
            conn,
            "identity_batch",
            fresh=json.dumps(fresh),
            linked=json.dumps(linked),
            rows=json.dumps(list(dict.fromkeys(fresh + linked))),
            urls=json.dumps(list(dict.fromkeys(e.url for _, _, e in created)), ensure_ascii=False),
            guids=json.dumps(
                list(dict.fromkeys(e.guid for _, _, e in created if e.guid)), ensure_ascii=False
            ),
            feed_id=intent.feed_id,
            since=intent.window_start,
        ).fetchall()
        by_url: dict[str, Match] = {}  # the first row of a URL, besides this poll's
        by_guid: dict[str, Match] = {}  # the feed's first row of a GUID, besides this poll's
        pages: dict[str, tuple[int, int]] = {}  # canonical URL -> (first article, its entry)
        windowed: dict[int, tuple[str | None, Match]] = {}  # this poll's rows: GUID, match
        for row in found:
            kind, key, row_id = str(row["kind"]), row["key"], int(row["id"])
            if kind == "page":
                if key not in pages or row_id < pages[key][0]:
                    pages[key] = (row_id, int(row["summary_id"]))
                continue
            match = Match(row_id, None if row["revision_of"] is None else int(row["revision_of"]))
            if kind == "url":
                by_url[key] = match
            elif kind == "guid":
                by_guid[key] = match
            else:  # "row": created or linked by this poll, first seen within the window
                windowed[row_id] = (key, match)

        roots: dict[int, int] = {}  # a row created by this poll -> the root of its story
        pulled: set[int] = set()  # roots whose article _pull_article_of brought already
        marks: list[dict[str, int | str]] = []  # the revisions found, marked at the end

        def root(match: Match | None) -> int | None:
            if match is None:
                return None
            if match.id in roots:
                return roots[match.id]
            return match.id if match.revision_of is None else match.revision_of

        made_at = {ord_: (summary_id, entry) for ord_, summary_id, entry in created}
        linked_at = dict(newly_linked)
        earlier_url: dict[str, Match] = {}  # created earlier in the feed (within the window)
        earlier_guid: dict[str, Match] = {}  # linked earlier in the feed (within the window)
        for ord_ in sorted(made_at.keys() | linked_at.keys()):
            made = made_at.get(ord_)
            if made is not None:
                summary_id, entry = made
                self._judge_revision(
                    conn,
                    summary_id,
                    entry,
                    by_guid=root(lower(by_guid.get(entry.guid), earlier_guid.get(entry.guid)))
                    if entry.guid
                    else None,
                    by_url=root(lower(by_url.get(entry.url), earlier_url.get(entry.url))),
                    by_canonical=pages[entry.url][1] if entry.url in pages else None,
                    roots=roots,
                    pulled=pulled,
                    marks=marks,
                )
                if summary_id in windowed:
                    keep_lowest(earlier_url, entry.url, windowed[summary_id][1])
            linked_id = linked_at.get(ord_)
            if linked_id is not None and linked_id in windowed:
                guid, earlier = windowed[linked_id]
                if guid is not None:
                    keep_lowest(earlier_guid, guid, earlier)
        if marks:
            self._exec(conn, "identity_mark_revisions", marks=json.dumps(marks, ensure_ascii=False))
        return len(marks)

    def _judge_revision(
        self,
        conn: Connection,
        summary_id: int,
        entry: Entry,
        *,
        by_guid: int | None,
        by_url: int | None,
        by_canonical: int | None,
        roots: dict[int, int],
        pulled: set[int],
        marks: list[dict[str, int | str]],
    ) -> None:
        """One created row judged (``identity.revision``), its root noted in ``roots``
        for the rows after it; a revision goes into ``marks`` (all marked in one
        statement after the poll is judged) and retitles its article now (in feed
        order: which title an article ends with depends on the order of the retitles).
        A root's article is brought where changes are made once per poll (``pulled``):
        once there it stays for the transaction, and on SQLite a pull is three
        statements, for each of the 2,000 versions of a story a feed may carry."""
        link = identity.revision(by_guid=by_guid, by_url=by_url, by_canonical=by_canonical)
        if link is None or link.target == summary_id:
            roots[summary_id] = summary_id
            return
        roots[summary_id] = link.target
        marks.append({"id": summary_id, "root": link.target, "reason": link.reason})
        if link.target not in pulled:
            pulled.add(link.target)
            self._pull_article_of(conn, link.target)
        if entry.title:  # an untitled version keeps the article's title
            self._exec(conn, "identity_retitle", root=link.target, title=entry.title)

    def release_feed(self, feed_id: int, owner: str) -> None:
        self._write(lambda conn: self._exec(conn, "poll_unclaim", feed_id=feed_id, owner=owner))

    def has_work(
        self,
        feeds_due_before: str | None,
        articles_due_before: str | None,
        now: str,
        *,
        lease_horizon: str | None = None,
        retry_horizon: str | None = None,
    ) -> bool:
        (row,) = self._read(
            "pass_has_work",
            feeds_due_before=feeds_due_before,
            written_after=clock.horizon(feeds_due_before) if feeds_due_before else None,
            articles_due_before=articles_due_before,
            now=now,
            lease_horizon=lease_horizon,
            retry_horizon=retry_horizon,
        )
        return bool(row["work"])

    def room_for_entries(self) -> str | None:
        """A database on a server or a disk has no RAM budget (SQLiteStorage has one)."""
        return None


class Match(NamedTuple):
    """A row a created row may be a revision of: its id, and the root it was itself
    linked to (None: it is a root)."""

    id: int
    revision_of: int | None


def lower(a: Match | None, b: Match | None) -> Match | None:
    """The earlier (lower id) of two candidate matches, either of which may be missing."""
    if a is None or (b is not None and b.id < a.id):
        return b
    return a


def keep_lowest(first: dict[str, Match], key: str, match: Match) -> None:
    """``first[key]`` becomes ``match`` unless it holds a lower id already."""
    held = first.get(key)
    if held is None or match.id < held.id:
        first[key] = match


class StagedRow(NamedTuple):
    """One candidate of a poll after the engine's batch: the row it created, or the row
    that was there (its missing date filled in), and whether it was newly linked to the
    feed. Neither id: another transaction inserted it meanwhile (PostgreSQL)."""

    ord: int  # the entry's place in the poll (merge_repeats' order)
    created_id: int | None
    found_id: int | None
    linked: bool


def merge_repeats(entries: Sequence[Entry]) -> list[Entry]:
    """One entry per (url, title), in feed order: the first one's fields, with the first
    date any of them gives, which is what one insert per entry made of repeats (the first
    inserted, a later one filling in a missing date). ``decide.candidates`` already drops
    repeats; this keeps the batch right whoever builds the intent."""
    merged: dict[tuple[str, str], Entry] = {}
    for entry in entries:
        key = (entry.url, entry.title)
        first = merged.get(key)
        if first is None:
            merged[key] = entry
        elif first.published is None and entry.published is not None:
            merged[key] = first._replace(published=entry.published)
    return list(merged.values())
