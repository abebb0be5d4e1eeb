"""Stage 2's batch on SQLite: a poll's entries staged, linked and dated in three
statements for the whole poll (``stage_known``, ``stage_new``, ``stage_link_batch`` in
sql/stage.sql) instead of two to three per entry, each of which cost ~20-50 µs of CPU
(most of a first poll's database time). The rest of the poll's transaction is the
shared code's (feedsync/storage/sql_polling.py).

Deduplication spans both files: ``stage_known`` looks in the live database and in the
card (news_summary_all), so an entry saved years ago is never staged again; the entries
found in neither go in with ``INSERT OR IGNORE ... RETURNING id``, which names exactly
the rows it created: those, and only those, are fetched and extracted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from feedsync.records import Entry, PollIntent
from feedsync.storage.sql_core import Connection
from feedsync.storage.sql_polling import SQLPolling, StagedRow


class SQLiteStaging(SQLPolling):
    """``_stage_rows`` in three statements (and one per date filled in: rare)."""

    def _stage_rows(
        self, conn: Connection, intent: PollIntent, entries: Sequence[Entry]
    ) -> list[StagedRow]:
        found: dict[int, int] = {}  # ord -> the row already staged
        for row in self._exec(
            conn,
            "stage_known",
            keys=json.dumps([(e.url, e.title) for e in entries], ensure_ascii=False),
        ).fetchall():  # read whole before a date is filled in
            ord_, summary_id = int(row["ord"]), int(row["id"])
            found[ord_] = summary_id
            published = entries[ord_].published
            if row["published"] is None and published is not None:
                self._fill_date(conn, summary_id, published)
        fresh = [e for ord_, e in enumerate(entries) if ord_ not in found]
        created: dict[tuple[str, str], int] = {}
        if fresh:
            created = {
                (row["url"], row["title"]): int(row["id"])
                for row in self._exec(
                    conn,
                    "stage_new",
                    entries=json.dumps(
                        [(e.url, e.title, e.published, e.summary, e.author, e.guid) for e in fresh],
                        ensure_ascii=False,
                    ),
                    now=intent.polled_at,
                    owner=intent.owner,
                    lease_until=intent.lease_until,
                    lan_host=intent.lan_host,
                )
            }
        # (an entry inserted by no one else cannot be missing from both: one writer at a
        # time; were it so, the shared code looks it up and links it, as on PostgreSQL)
        ids = [found.get(o, created.get((e.url, e.title))) for o, e in enumerate(entries)]
        linked = {
            int(row["summary_id"])
            for row in self._exec(
                conn,
                "stage_link_batch",
                ids=json.dumps([i for i in ids if i is not None]),
                feed_id=intent.feed_id,
                now=intent.polled_at,
            )
        }
        return [
            StagedRow(
                ord=ord_,
                created_id=None if ord_ in found else summary_id,
                found_id=found.get(ord_),
                linked=summary_id in linked,
            )
            for ord_, summary_id in enumerate(ids)
        ]
