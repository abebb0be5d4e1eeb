"""Stage 2 on PostgreSQL in a few round trips: a poll's entries staged in one statement
(``stage_batch``, the entries as one JSON parameter), the revision lookups of the rows
it created in one more (``identity_batch``), instead of a statement per entry over the
network. The rules are feedsync/identity.py's; SQLite stages through the shared code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from feedsync import identity
from feedsync.records import Entry, PollIntent, PollRecord
from feedsync.storage.sql_polling import SQLPolling


class PGStaging(SQLPolling):
    """``_stage`` (and what it needs) in place of the shared one, per poll."""

    def _stage(self, conn: Any, intent: PollIntent) -> PollRecord:
        """In record_poll's transaction: the poll's candidates staged, linked, their dates
        filled in, in ONE statement (``stage_batch``), and the revision lookups of the rows
        it created in one more (``identity_batch``). Every statement is a round trip to
        the server, inside an open transaction: the per-entry statements of the shared
        ``_stage`` cost two to five per entry. What is decided is the same as theirs, entry
        by entry in feed order: the rows created, the links made, the revisions."""
        entries = _merge_repeats(intent.entries)
        rows = self._exec(
            conn,
            "stage_batch",
            entries=json.dumps(
                [
                    {
                        "ord": ord_,
                        "url": e.url,
                        "title": e.title,
                        "published": e.published,
                        "summary": e.summary,
                        "author": e.author,
                        "guid": e.guid,
                    }
                    for ord_, e in enumerate(entries)
                ],
                ensure_ascii=False,
            ),
            feed_id=intent.feed_id,
            now=intent.polled_at,
            owner=intent.owner,
            lease_until=intent.lease_until,
        ).fetchall()
        created: list[tuple[int, int, Entry]] = []  # (ord, id, entry)
        newly_linked: list[tuple[int, int]] = []  # (ord, id)
        for row in rows:
            ord_ = int(row["ord"])
            entry = entries[ord_]
            if row["created_id"] is not None:
                created.append((ord_, int(row["created_id"]), entry))
                summary_id = int(row["created_id"])
            elif row["found_id"] is not None:
                summary_id = int(row["found_id"])
            else:
                # another poller's row, committed while stage_batch ran: seen now
                summary_id = self._stage_existing(conn, intent, entry)
            if row["linked"] or (
                row["created_id"] is None
                and row["found_id"] is None
                and self._link(conn, intent, summary_id)
            ):
                newly_linked.append((ord_, summary_id))
        revisions = 0
        if intent.identity == identity.AUTO and created:
            revisions = self._link_revisions(conn, intent, created, newly_linked)
        self._feed_polled(conn, intent)
        return PollRecord(
            created_ids=tuple(summary_id for _, summary_id, _ in created),
            linked=len(newly_linked),
            revisions=revisions,
        )

    def _stage_existing(self, conn: Any, intent: PollIntent, entry: Entry) -> int:
        """The row of an entry that another transaction inserted while ``stage_batch``
        ran (rare: two pollers staging the same story at once), through the per-entry
        statements, which see that commit: its id, its date filled in."""
        existing = self._exec(conn, "stage_lookup", url=entry.url, title=entry.title).fetchone()
        summary_id = int(existing["id"])
        if existing["published"] is None and entry.published is not None:
            self._exec(conn, "stage_fill_date", id=summary_id, published=entry.published)
        return summary_id

    def _link_revisions(
        self,
        conn: Any,
        intent: PollIntent,
        created: list[tuple[int, int, Entry]],
        newly_linked: list[tuple[int, int]],
    ) -> int:
        """The created rows that are another version of an earlier story
        (``identity.revision``), found in one round trip, then marked and their article
        retitled in feed order (a statement or two per revision: rare, a title edited).
        A match created by this same poll may itself be a revision found here: it is
        followed to its root, as one insert per entry, marked before the next, gave it."""
        found = self._exec(
            conn,
            "identity_batch",
            fresh=json.dumps(
                [
                    {"id": summary_id, "ord": ord_, "url": e.url, "guid": e.guid or None}
                    for ord_, summary_id, e in created
                ],
                ensure_ascii=False,
            ),
            linked=json.dumps(
                [{"id": summary_id, "ord": ord_} for ord_, summary_id in newly_linked]
            ),
            feed_id=intent.feed_id,
            since=intent.window_start,
        ).fetchall()
        matches = {int(row["id"]): row for row in found}
        roots: dict[int, int] = {}  # a row created by this poll -> the root of its story

        def root(match_id: Any, revision_of: Any) -> int | None:
            if match_id is None:
                return None
            if int(match_id) in roots:
                return roots[int(match_id)]
            return int(revision_of) if revision_of is not None else int(match_id)

        revisions = 0
        for _, summary_id, entry in created:
            row = matches[summary_id]
            link = identity.revision(
                by_guid=root(row["guid_id"], row["guid_revision_of"]),
                by_url=root(row["url_id"], row["url_revision_of"]),
                by_canonical=None if row["page_root"] is None else int(row["page_root"]),
            )
            if link is None or link.target == summary_id:
                roots[summary_id] = summary_id
                continue
            roots[summary_id] = link.target
            self._exec(
                conn,
                "identity_mark_revision",
                id=summary_id,
                root=link.target,
                reason=link.reason,
            )
            self._exec(conn, "identity_retitle", root=link.target, title=entry.title)
            revisions += 1
        return revisions


def _merge_repeats(entries: Sequence[Entry]) -> list[Entry]:
    """One entry per (url, title), in feed order: the first one's fields, with the first
    date any of them gives, which is what one insert per entry made of repeats (the first
    inserted, a later one filling in a missing date). ``decide.candidates`` already drops
    repeats; this keeps ``stage_batch`` right whoever builds the intent."""
    merged: dict[tuple[str, str], Entry] = {}
    for entry in entries:
        key = (entry.url, entry.title)
        first = merged.get(key)
        if first is None:
            merged[key] = entry
        elif first.published is None and entry.published is not None:
            merged[key] = replace(first, published=entry.published)
    return list(merged.values())
