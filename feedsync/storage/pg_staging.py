"""Stage 2's batch on PostgreSQL: a poll's entries staged, linked and dated in ONE
statement (``stage_batch``, the entries as one JSON parameter), instead of a statement
per entry over the network; the entries of a transaction locked first, in one order,
so that pollers staging the same stories never deadlock. The rest of the poll's
transaction (the revisions, the feed's row) is the shared code's
(feedsync/storage/sql_polling.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from feedsync.records import Entry, PollIntent
from feedsync.storage.sql_polling import SQLPolling, StagedRow


class PGStaging(SQLPolling):
    """``_stage_rows`` in one statement (the ``created``/``found``/``linked`` CTEs)."""

    def _lock_entries(self, conn: Any, intents: Sequence[PollIntent]) -> None:
        """Every entry the transaction brings, locked in one order before any is staged
        (sql/postgresql/stage.sql, stage_lock_entries): no deadlock between pollers that
        stage the same stories. One statement, none for a group without entries."""
        keys = sorted({(e.url, e.title) for intent in intents for e in intent.entries})
        if keys:
            self._exec(conn, "stage_lock_entries", keys=json.dumps(keys, ensure_ascii=False))

    def _stage_rows(
        self, conn: Any, intent: PollIntent, entries: Sequence[Entry]
    ) -> list[StagedRow]:
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
            lan_host=intent.lan_host,
        ).fetchall()
        return [
            StagedRow(
                ord=int(row["ord"]),
                created_id=None if row["created_id"] is None else int(row["created_id"]),
                found_id=None if row["found_id"] is None else int(row["found_id"]),
                linked=bool(row["linked"]),
            )
            for row in rows
        ]
