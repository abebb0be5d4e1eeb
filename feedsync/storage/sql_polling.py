"""Stages 1 and 2, written once for both engines (the Polling role): claiming feeds
with the hosts a pass holds alone, and a poll's whole outcome in one transaction, its
entries staged and their revisions linked (the rules are feedsync/decide.py's and
feedsync/identity.py's; the transaction applies them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from feedsync import decide, identity
from feedsync.records import (
    FAILED,
    GONE,
    NOT_MODIFIED,
    STAGED,
    Entry,
    FeedClaim,
    PollIntent,
    PollRecord,
)
from feedsync.storage.sql_core import Connection
from feedsync.storage.sql_hosts import SQLHostPacing


class SQLPolling(SQLHostPacing):
    """The Polling role over named queries (a claim holds hosts: the host rows' code)."""

    def record_poll(self, intent: PollIntent) -> PollRecord:
        """One feed poll, whatever its outcome, in one transaction: the staged entries
        (this is where they are deduplicated), the feed's row (schedule, validators,
        errors, its claim given back), its move, its host's politeness state."""

        def work(conn: Connection) -> PollRecord:
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
                record = replace(record, move_refused=self._move(conn, intent))
            if intent.host_wait is not None:
                wait = intent.host_wait
                self._exec(
                    conn,
                    "host_wait",
                    host=wait.host,
                    not_before=wait.not_before,
                    backoff_count=wait.backoff_count,
                    reason=wait.reason,
                )
            if intent.host_clear is not None:
                self._exec(conn, "host_clear", host=intent.host_clear)
            for host, slot in intent.host_slots:
                self._exec(conn, "host_slot_release", host=host, slot=slot, owner=intent.owner)
            if intent.held_host is not None:
                wanted = self._exec(conn, "host_wanted", host=intent.held_host).fetchone()
                record = replace(record, host_wanted=bool(wanted["wanted"]))
            return record

        return self._write(work)

    def _stage(self, conn: Connection, intent: PollIntent) -> PollRecord:
        """In record_poll's transaction: the candidates, INSERT OR IGNORE, and the feed."""
        created: list[int] = []
        linked = 0
        revisions = 0
        for entry in intent.entries:
            row = self._exec(
                conn,
                "stage_insert",
                url=entry.url,
                title=entry.title,
                published=entry.published,
                summary=entry.summary,
                author=entry.author,
                guid=entry.guid,
                now=intent.polled_at,
                owner=intent.owner,
                lease_until=intent.lease_until,
            ).fetchone()
            if row is not None:
                summary_id = row["id"]
                created.append(summary_id)
                if intent.identity == identity.AUTO and self._link_revision(
                    conn, intent, entry, summary_id
                ):
                    revisions += 1
            else:
                existing = self._exec(
                    conn, "stage_lookup", url=entry.url, title=entry.title
                ).fetchone()
                summary_id = existing["id"]
                if existing["published"] is None and entry.published is not None:
                    self._pull_entry(conn, summary_id)
                    self._exec(conn, "stage_fill_date", id=summary_id, published=entry.published)
            linked += self._link(conn, intent, summary_id)
        self._feed_polled(conn, intent)
        return PollRecord(created_ids=tuple(created), linked=linked, revisions=revisions)

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
        when none is, holds the ``hold`` hosts it can (:meth:`_hold`)."""

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
                    due_before=due_before,
                ).fetchall()
            )
            others = bool(
                self._exec(conn, "others_at_work", owner=owner, now=now).fetchone()["others"]
            )
            held: list[tuple[str, float]] = []
            if not others:
                for host in hold:
                    ahead = self._hold(conn, host, owner, hold_delay, hold_lease)
                    if ahead is not None:
                        held.append((host, ahead))
            return FeedClaim(ids=taken, others=others, held=tuple(held))

        return self._write(work)

    def _hold(
        self, conn: Connection, host: str, owner: str, delay: float, lease: float
    ) -> float | None:
        """In claim_feeds' transaction: hold ``host`` whole (feedsync/holds.py) when no
        request to it is in flight anywhere. Returns the seconds until its next start may
        go (its pace, from the database), or None: not held."""
        now, next_start, taken = self._host_state(conn, host, besides=owner)
        if not decide.may_hold(now, delay, taken):
            return None
        self._exec(
            conn,
            "host_slot_take",
            host=host,
            slot=decide.HOLD,
            owner=owner,
            lease_until=now + lease,
        )
        return max(0.0, next_start - now)

    def host_holds_keep(self, owner: str, now: str, lease: float) -> bool:
        def work(conn: Connection) -> bool:
            self._exec(conn, "host_holds_renew", owner=owner, lease=lease)
            row = self._exec(conn, "others_at_work", owner=owner, now=now).fetchone()
            return bool(row["others"])

        return self._write(work)

    def host_holds_release(self, owner: str, aheads: Mapping[str, float]) -> None:
        def work(conn: Connection) -> None:
            for host, ahead in aheads.items():
                self._exec(conn, "host_slot_release", host=host, slot=decide.HOLD, owner=owner)
                self._exec(conn, "host_wanted_clear", host=host)
                self._exec(conn, "host_pace_push", host=host, ahead=max(ahead, 0.0))

        self._write(work)

    def _link_revision(
        self, conn: Connection, intent: PollIntent, entry: Entry, summary_id: int
    ) -> bool:
        """In the staging transaction: is the row just created another version of an
        earlier story (identity.revision)? Then it is linked, never fetched, and its title
        becomes the article's."""

        def root(name: str, **params: Any) -> int | None:
            row = self._exec(
                conn, name, id=summary_id, since=intent.window_start, **params
            ).fetchone()
            return None if row is None else int(row["root"])

        link = identity.revision(
            by_guid=root("identity_by_guid", feed_id=intent.feed_id, guid=entry.guid)
            if entry.guid
            else None,
            by_url=root("identity_by_url", url=entry.url),
            by_canonical=root("identity_by_canonical_page", url=entry.url),
        )
        if link is None or link.target == summary_id:
            return False
        self._exec(
            conn, "identity_mark_revision", id=summary_id, root=link.target, reason=link.reason
        )
        self._pull_article_of(conn, link.target)
        self._exec(conn, "identity_retitle", root=link.target, title=entry.title)
        return True

    def release_feed(self, feed_id: int, owner: str) -> None:
        self._write(lambda conn: self._exec(conn, "poll_unclaim", feed_id=feed_id, owner=owner))

    def room_for_entries(self) -> str | None:
        """A database on a server or a disk has no RAM budget (SQLiteStorage has one)."""
        return None
