"""The PostgreSQL backend: one database on a server, shared by pollers on many machines.

Chosen by ``[storage] url = "postgresql://..."``. The methods are those of
:class:`feedsync.storage.base.SQLStorage`, over the queries of ``sql/`` with those of
``sql/postgresql/`` in place of the ones PostgreSQL writes differently (the
same names, tables and columns as SQLite's); what differs is here:

- connections come from psycopg's pool; each storage method is one transaction on one
  pooled connection (``autocommit`` off only inside ``conn.transaction()``), and no
  network I/O to the feeds happens while one is open;
- a checkout costs no round trip (no ``check`` on every ``getconn``): a connection the
  server dropped (a restart, a failover, an idle timeout) is found when a statement
  fails on it, and then the pool's idle connections are checked once and the work is
  run again on a live one, unless the connection broke during the COMMIT, when whether
  the work was applied is unknown (then it is StorageUnavailable, as any lost server);
- concurrency is the server's: ``ON CONFLICT DO NOTHING RETURNING id`` names the rows
  one poller really created, claims use ``FOR NO KEY UPDATE SKIP LOCKED`` plus the same leases,
  and a transaction the server aborted as a deadlock or serialization failure is run
  again whole (it is short and has no side effect outside the database);
- every session is named (``application_name``, :func:`session_name`), so that a claim
  sees another feedsync process as soon as it is connected, before it claims anything;
- the schema is applied under ``pg_advisory_xact_lock``, so pollers starting together
  on an empty database apply it once;
- no snapshots (pg_dump and the server's backups do that job); search through pg_trgm.

psycopg is an optional extra (``pip install 'feedsync[postgresql]'``): it is imported
only when a ``postgresql://`` url is configured. The password (in the URL, PGPASSWORD or
~/.pgpass, as libpq finds it) never appears in a message: :func:`display_url` is what is
shown.
"""

from __future__ import annotations

import os
import random
import secrets
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from feedsync.records import (
    NewsItem,
    SearchHit,
    SnapshotResult,
    StorageStatus,
)
from feedsync.storage import search as fulltext
from feedsync.storage.base import SQLStorage, search_hit
from feedsync.storage.pg_connect import (
    display_url,
    driver,
    first_line,
    reason,
)
from feedsync.storage.pg_staging import PGStaging
from feedsync.storage.sqlfiles import pyformat, queries, schema_steps, steps_to_apply
from feedsync.storage_errors import StorageError, StorageUnavailable

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

T = TypeVar("T")

ENGINE_DIR = "postgresql"
CONNECT_TIMEOUT_S = 10
POOL_SIZE = 4  # the pipeline uses one connection at a time; the daemon a second, rarely
# Retries of a transaction the server aborted (deadlock, serialization failure).
CONFLICT_RETRIES = 10
# Runs again of work whose connection the server had dropped, each on a connection that
# a check of the pool's idle ones left alive: one is enough after a restart (the check
# replaces every dead idle connection); two spare a rare race with the pool's refill.
RECONNECT_RETRIES = 2
# SQLSTATEs worth running the whole transaction again for
_RETRYABLE = {"40001", "40P01"}


def session_name() -> str:
    """The application_name of this storage's sessions, the same for all of them and no
    other process's: how a claim sees another feedsync process connected to the
    database (sql/postgresql/poll.sql, others_at_work). Within PostgreSQL's 63 bytes."""
    return f"feedsync {socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(4)}"


def _session_views(conn: psycopg.Connection[Any]) -> None:
    """The names the shared queries read (sql/postgresql/admin.sql: session_views), made
    on each new connection of the pool."""
    conn.execute(pyformat(queries(ENGINE_DIR)["session_views"]).encode())


class _CommitUnknown(Exception):
    """The connection broke while the COMMIT was on its way: the server may have applied
    the transaction or not, so it is not run again (a claim or a stage twice)."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class PostgreSQLStorage(PGStaging, SQLStorage):
    """:class:`feedsync.storage.Storage` on a PostgreSQL database."""

    def __init__(self, pool: ConnectionPool[Any], url: str):
        self._pool = pool
        self._q = {name: pyformat(text) for name, text in queries(ENGINE_DIR).items()}
        self.url = url
        self.location = display_url(url)
        self._server: str | None = None

    # ------------------------------------------------------------ opening

    @classmethod
    def open(cls, url: str) -> PostgreSQLStorage:
        """Connect, then create or migrate the schema. Raises StorageUnavailable (server
        down, wrong password) or StorageError, each one line naming host and database."""
        psycopg = driver()
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        where = display_url(url)
        session = session_name()
        try:
            first = psycopg.connect(
                url,
                connect_timeout=CONNECT_TIMEOUT_S,
                autocommit=True,
                row_factory=dict_row,
                application_name=session,
            )
        except psycopg.OperationalError as exc:
            raise StorageUnavailable(f"cannot connect to {where}: {reason(exc, url)}") from None
        try:
            cls._migrate(first, where)
        finally:
            first.close()
        pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=1,
            max_size=POOL_SIZE,
            kwargs={
                "autocommit": True,
                "row_factory": dict_row,
                "connect_timeout": CONNECT_TIMEOUT_S,
                "application_name": session,
            },
            configure=_session_views,
            timeout=CONNECT_TIMEOUT_S * 3,
            open=False,
            name="feedsync",
        )
        pool.open()
        return cls(pool, url)

    @staticmethod
    def _migrate(conn: psycopg.Connection[Any], where: str) -> None:
        """The schema and its migrations, once, under feedsync's advisory lock."""
        import psycopg

        admin = {name: pyformat(text) for name, text in queries(ENGINE_DIR).items()}
        steps = schema_steps(ENGINE_DIR)
        try:
            with conn.transaction():
                conn.execute(admin["schema_lock"])
                conn.execute(admin["schema_version_table"])
                version = conn.execute(admin["schema_version"]).fetchone()["version"]  # type: ignore[index]
                todo = steps_to_apply(steps, version, where)
                for _, script in todo:
                    conn.execute(script.read_text(encoding="utf-8").encode())
                if todo:
                    conn.execute(admin["schema_version_set"], {"version": steps[-1][0]})
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StorageError(
                f"{where}: cannot create feedsync's tables: {first_line(exc)} (the user in "
                "[storage] url must own the database, or be allowed CREATE in it)"
            ) from None
        except psycopg.Error as exc:
            raise StorageError(f"{where}: cannot set up the schema: {first_line(exc)}") from None

    def close(self) -> None:
        self._pool.close()

    # ------------------------------------------------------------ transactions

    def _run(self, attempt: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``attempt`` on a pooled connection, again when the server aborted it as a
        deadlock or a serialization failure, and again on a live connection when the one
        it had was dropped by the server before it could commit (a restarted server costs
        no failed job, and a checkout no round trip); every other failure as one
        StorageError, a lost server as StorageUnavailable."""
        import psycopg
        from psycopg_pool import PoolTimeout

        delay = 0.02
        conflicts = reconnects = 0
        while True:
            broken = False
            try:
                with self._pool.connection() as conn:
                    try:
                        return attempt(conn)
                    finally:
                        broken = conn.broken  # the pool discards it on the way back
            except _CommitUnknown as unknown:
                raise StorageUnavailable(
                    f"lost the connection to {self.location} while committing: "
                    f"{reason(unknown.error, self.url)}"
                ) from None
            except psycopg.Error as exc:
                if exc.sqlstate in _RETRYABLE and conflicts < CONFLICT_RETRIES:
                    conflicts += 1
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 1.0)
                    continue
                if broken and reconnects < RECONNECT_RETRIES:
                    # nothing was committed on it: the other idle connections are likely
                    # as dead (a restart drops them all); one round trip each, now only
                    reconnects += 1
                    self._pool.check()
                    continue
                if broken or (isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None):
                    raise StorageUnavailable(
                        f"lost the connection to {self.location}: {reason(exc, self.url)}"
                    ) from None
                raise StorageError(f"{self.location}: {first_line(exc)}") from None
            except PoolTimeout:
                raise StorageUnavailable(
                    f"cannot connect to {self.location}: no connection within "
                    f"{CONNECT_TIMEOUT_S * 3}s (is the server running?)"
                ) from None

    def _write(self, work: Callable[[Any], T]) -> T:
        def attempt(conn: psycopg.Connection[Any]) -> T:
            import psycopg

            committing = False
            try:
                with conn.transaction():
                    result = work(conn)
                    committing = True  # the block's end sends COMMIT
            except psycopg.OperationalError as exc:
                if committing and conn.broken:
                    raise _CommitUnknown(exc) from None
                raise
            return result

        self.writes += 1
        return self._run(attempt)

    def _read(self, name: str, **params: Any) -> list[Any]:
        return self._run(lambda conn: conn.execute(self._q[name], params).fetchall())

    def _exec(self, conn: Any, name: str, **params: Any) -> Any:
        return conn.execute(self._q[name], params)

    def _exec_tuples(self, conn: Any, name: str, **params: Any) -> Any:
        from psycopg.rows import tuple_row

        return conn.cursor(row_factory=tuple_row).execute(self._q[name], params)

    # ------------------------------------------------------------ what only this engine does

    def save(self, *, force: bool = False) -> SnapshotResult | None:
        """None: a PostgreSQL database has no snapshots (pg_dump, the server's backups)."""
        return None

    def status(self) -> StorageStatus:
        row = self._read("database_size")[0]
        return StorageStatus(
            engine="postgresql",
            live=self.location,
            live_bytes=int(row["bytes"]),
            snapshot=None,
            snapshot_bytes=None,
            snapshot_at=None,
            unsaved_changes=None,
        )

    def search(self, query: str, limit: int, marks: tuple[str, str]) -> list[SearchHit]:
        """The articles that match (feedsync/search.py says what that means): for each
        way the query can match, the articles holding its words, whatever the case and
        the accents, through the trigram index (one- and two-character words are checked
        by the regular expression itself); the text decides (``Query.matches``), as on
        SQLite. Titles that match first, then the newest; the snippet is cut around the
        first match."""
        wanted = fulltext.parse(query)
        rows: dict[int, dict[str, Any]] = {}
        for first, patterns in _candidates(wanted):
            for r in self._read("news_search", first=first, patterns=patterns, limit=limit * 4):
                rows.setdefault(int(r["id"]), dict(r))
        found = [r for r in rows.values() if wanted.matches(r["title"] + " " + r["body"])]
        found.sort(key=lambda r: (r["published"] or r["fetched_at"], r["id"]), reverse=True)
        found.sort(key=lambda r: not wanted.matches(r["title"]))  # stable: titles first
        return [search_hit(r, wanted, marks) for r in found[:limit]]

    def search_count(self, query: str, cap: int) -> int:
        """How many articles :meth:`search` would give with ``limit=cap``: the same
        candidates, judged the same way, counted without a snippet (and without the
        columns a hit shows); it stops at ``cap``."""
        wanted = fulltext.parse(query)
        texts: dict[int, str] = {}
        for first, patterns in _candidates(wanted):
            for r in self._read("news_search_texts", first=first, patterns=patterns, limit=cap * 4):
                texts.setdefault(int(r["id"]), str(r["text"]))
        found = 0
        for text in texts.values():
            if wanted.matches(text):
                found += 1
                if found >= cap:
                    break
        return found

    # ------------------------------------------------------------ feedsync migrate

    def bulk_read(self, name: str) -> dict[str, Any]:
        """One row of a named query of sql/postgresql/migrate.sql (watermarks, counts)."""
        rows = self._read(name)
        return dict(rows[0]) if rows else {}

    def bulk_write(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Rows through one named INSERT, all in one transaction (a batch of the copy)."""

        def work(conn: Any) -> None:
            with conn.cursor() as cursor:
                cursor.executemany(self._q[name], rows)

        self._write(work)

    def bulk_run(self, name: str, **params: Any) -> None:
        self._write(lambda conn: self._exec(conn, name, **params))

    def export_news(self, since: str) -> Iterator[NewsItem]:
        """Every article since ``since``, oldest first, through a server-side cursor in a
        transaction of its own: constant memory whatever the size of the table."""
        with (
            self._pool.connection() as conn,
            conn.transaction(),
            conn.cursor(name="feedsync_export") as cursor,
        ):
            cursor.itersize = 200
            cursor.execute(self._q["news_export"], {"since": since})
            for row in cursor:
                yield NewsItem(**row)


def _candidates(wanted: fulltext.Query) -> Iterator[tuple[str, list[str]]]:
    """(the pattern through the trigram index, every word's pattern) for each way the
    query can match (sql/postgresql/news.sql: news_search)."""
    for alternative in wanted.alternatives:
        words = [w for term in alternative for w in term.words]
        patterns = [fulltext.accent_pattern(word) for word in words]
        yield patterns[max(range(len(words)), key=lambda i: len(words[i]))], patterns
