"""What both engines share: every storage method written once, over named queries.

:class:`SQLStorage` holds the logic of :class:`feedsync.storage.Storage` (which queries
run, in which transaction, how rows become records). An engine subclass
(:mod:`feedsync.storage.sqlite`, :mod:`feedsync.storage.postgresql`) supplies how a
transaction is opened and retried, how one named query runs, and what only it can do
(snapshots, full-text search, streaming). The queries have the same names, tables and
columns on both engines (``sql/``; ``sql/postgresql/`` replaces the ones PostgreSQL
writes differently), so the same method works on both.
"""

from __future__ import annotations

from feedsync.storage.sql_core import LEFT_CONFIG, Connection, SQLCore, like_escape, search_hit
from feedsync.storage.sql_feeds import SQLFeeds
from feedsync.storage.sql_hosts import SQLHostPacing
from feedsync.storage.sql_polling import SQLPolling
from feedsync.storage.sql_queue import SQLArticleQueue
from feedsync.storage.sql_reading import SQLReading

__all__ = ["LEFT_CONFIG", "Connection", "SQLCore", "SQLStorage", "like_escape", "search_hit"]


class SQLStorage(SQLFeeds, SQLPolling, SQLHostPacing, SQLArticleQueue, SQLReading):
    """The engine-independent part of a storage backend: every role of
    :class:`feedsync.storage.interface.Storage`, each written once in its own module
    (``sql_feeds``, ``sql_polling``, ``sql_hosts``, ``sql_queue``, ``sql_reading``) over
    :class:`SQLCore`, which an engine subclass completes."""
