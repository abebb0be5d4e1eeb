"""The storage layer: schema (SQLite files), then staging, claims, several writers, the
feed list and retention on both engines (an SQLite file, a database on a throwaway
PostgreSQL server), through the same Storage methods."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from conftest import BACKENDS, FeedsyncEnv, live_and_card, wait_until, what_feedsync_sees
from hypothesis import HealthCheck, given, settings

from feedsync.records import (
    FAILED,
    GONE,
    NOT_MODIFIED,
    Article,
    Entry,
    FailureOutcome,
    HostNote,
    HostWait,
    PollIntent,
    RedirectState,
)
from feedsync.storage import StorageError, sqlfiles
from feedsync.storage.base import SQLStorage
from feedsync.storage.sql_core import LEFT_CONFIG
from feedsync.storage.sql_feeds import ConfigPlan, reconcile_config
from feedsync.storage.sql_polling import merge_repeats
from feedsync.storage.sqlfiles import schema_steps, split_statements
from feedsync.storage.sqlite import SQLiteStorage
from feedsync.timestamps import to_iso

T0 = "2026-11-22T10:00:00Z"
LATER = "2026-11-22T11:00:00Z"


@pytest.fixture
def db(tmp_path: Path) -> SQLiteStorage:
    storage = SQLiteStorage.open(tmp_path / "feedsync.db")
    yield storage
    storage.close()


class Engine:
    """One database on one engine: open it again (another process would), query it."""

    def __init__(self, opener: Callable[[], SQLStorage], query: Callable[..., list[Any]]):
        self.open = opener
        self.query = query


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    if request.param == "sqlite":
        path = tmp_path / "feedsync.db"

        def sqlite_rows(sql: str, *params: Any) -> list[Any]:
            conn = what_feedsync_sees(*live_and_card(path, None))
            try:
                return conn.execute(sql, params).fetchall()
            finally:
                conn.close()

        return Engine(lambda: SQLiteStorage.open(path), sqlite_rows)
    from feedsync.storage.postgresql import PostgreSQLStorage

    url: str = request.getfixturevalue("pg_url")

    def pg_rows(sql: str, *params: Any) -> list[Any]:
        import psycopg

        with psycopg.connect(url) as conn:
            return conn.execute(sql.replace("?", "%s"), params).fetchall()  # type: ignore[arg-type]

    return Engine(lambda: PostgreSQLStorage.open(url), pg_rows)


@pytest.fixture
def store(engine: Engine) -> Iterator[SQLStorage]:
    """The storage on each engine, freshly created."""
    storage = engine.open()
    yield storage
    storage.close()


NOTE = HostNote()  # a poll with nothing to say about its host


def feed_id(storage: SQLStorage, url: str = "https://e.com/feed") -> int:
    storage.add_feed(url, T0)
    return next(f.id for f in storage.feeds_to_poll() if f.url == url)


def intent(
    fid: int, entries: list[Entry], owner: str = "A", newest: str = "", now: str = T0
) -> PollIntent:
    return PollIntent(
        feed_id=fid,
        polled_at=now,
        entries=tuple(entries),
        newest_published=newest,
        warning=None,
        feed_title="Feed",
        etag='"v1"',
        last_modified=None,
        next_poll_at=LATER,
        owner=owner,
        lease_until="2026-11-22T10:15:00Z",
    )


def claim_feed(
    store: SQLStorage,
    fid: int,
    owner: str,
    now: str,
    lease_until: str,
    due_before: str | None = None,
) -> bool:
    """One feed through the batch claim: is it ``owner``'s now?"""
    return fid in store.claim_feeds([fid], owner, now, lease_until, due_before).ids


def poll_failed(store: SQLStorage, fid: int, error: str, now: str, next_poll_at: str) -> None:
    store.record_poll(PollIntent(fid, now, next_poll_at, FAILED, error=error))


def wait_for_lock_waits(watch: Any, count: int, what: str) -> None:
    """Until ``count`` sessions of the test's PostgreSQL database wait on a lock (seen
    through ``watch``, an autocommit connection): the moment a test has set up."""
    wait_until(
        lambda: (
            watch.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchone()[0]
            == count
        ),
        what,
    )


def entry(n: int, published: str | None = None) -> Entry:
    return Entry(url=f"https://e.com/{n}", title=f"Story {n}", published=published)


# ---------------------------------------------------------------- schema


def test_a_new_database_gets_the_whole_schema(db: SQLiteStorage) -> None:
    conn = sqlite3.connect(db.path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"feeds", "news_summary", "feed_entries", "news"} <= tables
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(schema_steps())
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _open_and_close(path: str) -> None:
    SQLiteStorage.open(Path(path)).close()


def test_processes_opening_an_empty_database_at_once_apply_the_schema_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "race.db"
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_open_and_close, args=(str(path),)) for _ in range(6)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [p.exitcode for p in processes] == [0] * 6
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(schema_steps())
    tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'feeds'").fetchone()
    assert tables == (1,)


def test_migrations_run_once_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    SQLiteStorage.open(path).close()
    newest = len(schema_steps())
    migration = tmp_path / f"{newest + 1:04d}_add_notes.sql"
    migration.write_text(
        "ALTER TABLE feeds ADD COLUMN notes TEXT;\n"
        "CREATE TRIGGER feeds_note AFTER INSERT ON feeds BEGIN\n"
        "  UPDATE feeds SET notes = 'new'; END;\n"
    )
    steps = [*schema_steps(), (newest + 1, migration)]
    monkeypatch.setattr(sqlfiles, "schema_steps", lambda: steps)
    for _ in range(2):  # the second open must not apply it again (ALTER would fail)
        storage = SQLiteStorage.open(path)
        storage.add_feed("https://e.com/x", T0)
        storage.close()
    for database in live_and_card(path, None):  # the live database and the card's
        conn = sqlite3.connect(database)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == newest + 1
    conn = what_feedsync_sees(*live_and_card(path, None))
    assert conn.execute("SELECT notes FROM feeds").fetchone() == ("new",)


def test_a_version_1_database_is_upgraded_in_place(tmp_path: Path) -> None:
    # a database as the first release left it: schema.sql only, with data in it
    path = tmp_path / "v1.db"
    v1 = schema_steps()[0][1].read_text()
    with sqlite3.connect(path) as conn:
        conn.executescript(v1 + "PRAGMA user_version = 1;")
        conn.execute("INSERT INTO feeds (url, added_at) VALUES ('https://e.com/f', ?)", (T0,))
        conn.execute(
            "INSERT INTO news_summary (url, title, published, first_seen_at) "
            "VALUES ('https://e.com/1', 'Story 1', ?, ?)",
            (T0, T0),
        )
        conn.execute("INSERT INTO feed_entries VALUES (1, 1, ?)", (T0,))
    storage = SQLiteStorage.open(path)
    try:
        assert storage.counts()["entries"] == 1  # kept
        fid = storage.feeds_to_poll()[0].id
        before = storage._meta()["content_version"]
        storage.record_poll(intent(fid, [entry(2, LATER)], newest=LATER))
        assert int(storage._meta()["content_version"]) > int(before)
        assert storage.counts()["entries"] == 2
    finally:
        storage.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(schema_steps())


def test_a_database_from_a_newer_feedsync_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    SQLiteStorage.open(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StorageError, match="schema version 99, newer"):
        SQLiteStorage.open(path)


def test_a_file_that_is_not_a_database_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError, match="not a database"):
        SQLiteStorage.open(path)
    assert path.read_bytes() == b"this is not sqlite" * 100  # left as it was


def test_statement_splitting_keeps_triggers_whole() -> None:
    script = (
        "CREATE TABLE a (x);\n-- a comment; with a semicolon\nCREATE TRIGGER t AFTER "
        "INSERT ON a BEGIN\n  UPDATE a SET x = 1;\n  UPDATE a SET x = 2;\nEND;\n"
    )
    statements = split_statements(script)
    assert len(statements) == 2 and statements[1].endswith("END;")
    with pytest.raises(ValueError, match="incomplete"):
        split_statements("CREATE TABLE b (x")


# ---------------------------------------------------------------- staging


def test_staging_reports_only_the_rows_it_created(store: SQLStorage) -> None:
    a, b = feed_id(store, "https://e.com/a"), feed_id(store, "https://e.com/b")
    first = store.record_poll(intent(a, [entry(1), entry(2)]))
    second = store.record_poll(intent(b, [entry(2), entry(3)]))
    assert len(first.created_ids) == 2 and first.linked == 2
    assert len(second.created_ids) == 1 and second.linked == 2
    again = store.record_poll(intent(b, [entry(2), entry(3)]))
    assert again.created_ids == () and again.linked == 0
    counts = store.counts()
    assert (counts["entries"], counts["links"]) == (3, 4)


def test_latest_published_never_moves_backwards(store: SQLStorage) -> None:
    fid = feed_id(store)

    def latest() -> str:
        return next(f.latest_published for f in store.feeds_to_poll())

    assert latest() == ""
    store.record_poll(intent(fid, [entry(1, LATER)], newest=LATER))
    assert latest() == LATER
    store.record_poll(intent(fid, [entry(2, T0)], newest=T0))  # an older writer finishing last
    assert latest() == LATER
    store.record_poll(intent(fid, [entry(3)], newest=""))  # only undated entries
    assert latest() == LATER


def test_a_later_dated_copy_fills_in_a_missing_date(store: SQLStorage, engine: Engine) -> None:
    a, b = feed_id(store, "https://e.com/a"), feed_id(store, "https://e.com/b")
    store.record_poll(intent(a, [entry(1)]))
    store.record_poll(intent(b, [entry(1, T0)], newest=T0))
    store.record_poll(intent(b, [entry(1, LATER)], newest=LATER))  # an existing date is kept
    assert engine.query("SELECT published FROM news_summary") == [(T0,)]


def test_one_poll_stages_its_new_entries_once_among_repeats_and_known_ones(
    store: SQLStorage, engine: Engine
) -> None:
    # PostgreSQL stages a poll in one statement (stage_batch), SQLite in three (stage_known,
    # stage_new, stage_link_batch): both must name exactly the rows created, in feed
    # order, each stored once, as one insert per entry did
    a, b = feed_id(store, "https://e.com/a"), feed_id(store, "https://e.com/b")
    known = store.record_poll(intent(a, [entry(1, T0), entry(2)])).created_ids
    poll = [
        entry(3),  # new, undated here...
        entry(1, T0),  # known, from feed a
        entry(4, T0),  # new
        entry(3, LATER),  # ...a repeat in the same document, which gives its date
        entry(2, LATER),  # known and undated: this feed dates it
        entry(4, LATER),  # a repeat whose date is not taken: the first one's stays
        entry(5),  # new
    ]
    record = store.record_poll(intent(b, poll, newest=LATER))

    rows = engine.query("SELECT id, url, published FROM news_summary ORDER BY id")
    by_url = {url: (row_id, published) for row_id, url, published in rows}
    assert len(rows) == 5  # 1, 2 from feed a; 3, 4, 5 from this poll, each once
    assert record.created_ids == tuple(by_url[f"https://e.com/{n}"][0] for n in (3, 4, 5))
    assert record.created_ids == tuple(sorted(record.created_ids))  # ids follow the feed
    assert not set(record.created_ids) & set(known)
    assert record.linked == 5  # every distinct entry of the poll, linked to feed b once
    assert {n: by_url[f"https://e.com/{n}"][1] for n in range(1, 6)} == {
        1: T0,
        2: LATER,
        3: LATER,
        4: T0,
        5: None,
    }
    links = engine.query("SELECT feed_id, summary_id FROM feed_entries")
    assert sorted(links) == sorted(
        [(a, known[0]), (a, known[1])] + [(b, by_url[f"https://e.com/{n}"][0]) for n in range(1, 6)]
    )
    # the rows this poll created are the ones leased to it, for it alone to fetch
    assert claim(store, "A") == list(known) + list(record.created_ids)
    again = store.record_poll(intent(b, poll, newest=LATER))
    assert (again.created_ids, again.linked) == ((), 0)
    assert store.counts()["entries"] == 5


@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
def test_an_entry_another_poller_commits_meanwhile_is_linked_not_created(
    store: SQLStorage, engine: Engine, pg_url: str
) -> None:
    # stage_batch waits on the other poller's row, which its snapshot does not hold: the
    # entry is then found again, linked and dated, and not reported as this poll's
    import psycopg

    fid = feed_id(store)
    with psycopg.connect(pg_url) as other, psycopg.connect(pg_url, autocommit=True) as watch:
        other.execute(
            "INSERT INTO news_summary (url, title, first_seen_at) VALUES (%s, %s, %s)",
            ("https://e.com/7", "Story 7", T0),
        )
        records: list[Any] = []
        staging = threading.Thread(
            target=lambda: records.append(
                store.record_poll(intent(fid, [entry(6), entry(7, T0)], newest=T0))
            )
        )
        staging.start()
        wait_for_lock_waits(watch, 1, "the staging statement waiting for the other poller's row")
        other.commit()
        staging.join(60)
    (record,) = records
    rows = engine.query("SELECT id, url, published FROM news_summary ORDER BY url")
    assert [(url, published) for _, url, published in rows] == [
        ("https://e.com/6", None),
        ("https://e.com/7", T0),
    ]
    assert record.created_ids == (rows[0][0],)
    assert record.linked == 2
    links = engine.query("SELECT summary_id FROM feed_entries WHERE feed_id = ?", fid)
    assert sorted(links) == sorted([(rows[0][0],), (rows[1][0],)])


@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
def test_pollers_staging_the_same_stories_in_opposite_orders_do_not_deadlock(
    store: SQLStorage, engine: Engine, pg_url: str, pg_server: Any
) -> None:
    """Two pollers' transactions, each two feeds' polls (a group commit), bring the same
    two stories in opposite orders, and each is held after its first feed (a third
    session locks those feeds' rows). Released together, each would then wait on the
    other's new row: a deadlock, which the server breaks after deadlock_timeout (1 s) by
    aborting one of them. The entries are locked in one order first, so one waits for
    the other's commit instead: no deadlock in the server's log, each story staged once
    and linked to all four feeds."""
    import psycopg

    a1, a2, b1, b2 = (feed_id(store, f"https://e.com/feed-{n}") for n in ("a1", "a2", "b1", "b2"))
    log = pg_server.root / "server.log"
    deadlocks_before = log.read_text(errors="replace").count("deadlock detected")
    other = engine.open()
    results: list[Any] = []
    try:
        with psycopg.connect(pg_url) as blocker, psycopg.connect(pg_url, autocommit=True) as watch:
            blocker.execute("SELECT id FROM feeds WHERE id = ANY(%s) FOR UPDATE", ([a1, b1],))
            pollers = [
                threading.Thread(
                    target=lambda: results.append(
                        store.record_polls(
                            [(intent(a1, [entry(1)]), NOTE), (intent(a2, [entry(2)]), NOTE)]
                        )
                    )
                ),
                threading.Thread(
                    target=lambda: results.append(
                        other.record_polls(
                            [
                                (intent(b1, [entry(2)], owner="B"), NOTE),
                                (intent(b2, [entry(1)], owner="B"), NOTE),
                            ]
                        )
                    )
                ),
            ]
            for poller in pollers:
                poller.start()
            wait_for_lock_waits(
                watch, 2, "both pollers waiting: on the held feeds, or one on the other's entries"
            )
            blocker.commit()
            for poller in pollers:
                poller.join(60)
    finally:
        other.close()
    assert len(results) == 2
    assert log.read_text(errors="replace").count("deadlock detected") == deadlocks_before
    rows = engine.query("SELECT id, url FROM news_summary ORDER BY url")
    assert [url for _, url in rows] == ["https://e.com/1", "https://e.com/2"]
    links = engine.query("SELECT feed_id, summary_id FROM feed_entries")
    assert len(links) == 4 and {f for f, _ in links} == {a1, a2, b1, b2}
    created = sorted(i for group in results for record in group for i in record.created_ids)
    assert created == sorted(i for i, _ in rows)  # each story created by one poll only


def test_versions_of_a_story_in_one_poll_are_revisions_of_the_first(
    store: SQLStorage, engine: Engine
) -> None:
    # one document carrying a story's versions: each later one is linked to the first
    # (its root), never fetched; a story seen before links to that earlier row
    fid = feed_id(store)
    store.record_poll(intent(fid, [Entry("https://e.com/old", "Old story", None, guid="g-old")]))
    poll = [
        Entry("https://e.com/x", "Dam opens", None, guid="g-1"),
        Entry("https://e.com/x", "Dam opened", None),  # same URL, new title
        Entry("https://e.com/x-moved", "Dam opened today", None, guid="g-1"),  # same GUID
        Entry("https://e.com/old-2", "Old story, updated", None, guid="g-old"),
        Entry("https://e.com/y", "Another story", None, guid="g-2"),
    ]
    record = store.record_poll(intent(fid, poll))
    assert len(record.created_ids) == 5 and record.revisions == 3
    rows = engine.query(
        "SELECT id, title, revision_of, link_reason, state FROM news_summary ORDER BY id"
    )
    old, dam, *_ = (row[0] for row in rows)
    assert [row[1:] for row in rows] == [
        ("Old story", None, None, "new"),
        ("Dam opens", None, None, "new"),
        ("Dam opened", dam, "same URL, new title", "done"),
        ("Dam opened today", dam, "same GUID", "done"),
        ("Old story, updated", old, "same GUID", "done"),
        ("Another story", None, None, "new"),
    ]


def test_a_guid_match_counts_only_links_made_earlier_in_the_feed(
    store: SQLStorage, engine: Engine
) -> None:
    # The whole poll is staged and linked before its revisions are sought; what one
    # insert per entry decided must not change: a row another feed staged, linked to this
    # feed by this poll, is this feed's earlier row only for the entries after it.
    a, b = feed_id(store, "https://e.com/a"), feed_id(store, "https://e.com/b")
    store.record_poll(intent(a, [Entry("https://e.com/k", "Known", None, guid="g")]))
    store.record_poll(intent(a, [Entry("https://e.com/k2", "Known 2", None, guid="h")]))
    poll = [
        Entry("https://e.com/n1", "New before", None, guid="g"),  # the link comes later
        Entry("https://e.com/k", "Known", None, guid="g"),  # linked to b by this poll
        Entry("https://e.com/k2", "Known 2", None, guid="h"),
        Entry("https://e.com/n2", "New after", None, guid="h"),  # the link came before
    ]
    record = store.record_poll(intent(b, poll))
    assert len(record.created_ids) == 2 and record.revisions == 1
    rows = engine.query("SELECT url, revision_of, link_reason FROM news_summary ORDER BY id")
    ids = dict(engine.query("SELECT url, id FROM news_summary"))
    assert rows == [
        ("https://e.com/k", None, None),
        ("https://e.com/k2", None, None),
        ("https://e.com/n1", None, None),
        ("https://e.com/n2", ids["https://e.com/k2"], "same GUID"),
    ]


# Issue 41: entries sharing one link (or one GUID) made staging cubic, inside the write
# transaction that every other process waits for: 100 / 200 / 400 / 800 entries with one
# link took 0.8 / 1.2 / 7.6 / 54.2 s. The costs below are CPU time of this process, which
# runs SQLite; compared as time per entry at two sizes, never as absolute times.
VERSIONS = {
    "one link, new titles": lambda i: Entry("https://e.com/story", f"Version {i}", None),
    "one GUID, new links": lambda i: Entry(
        f"https://e.com/story-{i}", f"Version {i}", None, guid="tag:e.com,2026:story"
    ),
}


@pytest.mark.parametrize("shape", VERSIONS)
def test_versions_of_one_story_stage_in_time_linear_in_their_number(
    tmp_path: Path, shape: str
) -> None:
    per_entry: dict[int, float] = {}
    for count, run in itertools.product((500, 2000), range(3)):  # the least of 3: noise
        storage = SQLiteStorage.open(tmp_path / f"{count}-{run}.db")
        try:
            fid = feed_id(storage)
            entries = [VERSIONS[shape](i) for i in range(count)]
            started = time.process_time()
            record = storage.record_poll(intent(fid, entries))
            cost = (time.process_time() - started) / count
            per_entry[count] = min(per_entry.get(count, cost), cost)
            rows = storage._conn.execute(
                "SELECT id, state, revision_of FROM news_summary ORDER BY id"
            ).fetchall()
        finally:
            storage.close()
        # right: the first version is fetched, every later one is a revision of it
        first = rows[0]["id"]
        assert (len(record.created_ids), record.revisions) == (count, count - 1)
        assert [(r["state"], r["revision_of"]) for r in rows] == [("new", None)] + [
            ("done", first)
        ] * (count - 1)
    # linear (measured 0.7-1.1): at four times the entries, the time per entry of the
    # cubic URL lookup grew ~60 times, and of the GUID lookup, quadratic, 3.4 times
    assert per_entry[2000] < 2.5 * per_entry[500], per_entry


def test_a_poll_reads_the_articles_of_the_window_by_its_links_not_all_per_entry(
    tmp_path: Path,
) -> None:
    """The revision check by canonical URL (an article whose page named a new entry's
    link) read every article fetched within the window, bodies and all, once for each
    entry a poll created. Two databases with the same 1,000 articles, fetched within the
    window in one, long before it in the other: a poll of 500 new entries costs the same
    in both (it cost ~50 times more beside the articles of the window)."""
    cost: dict[str, float] = {}
    for fetched in ("2026-01-05T10:00:00Z", T0):
        storage = SQLiteStorage.open(tmp_path / f"{fetched[:10]}.db")
        try:
            wire, fid = feed_id(storage, "https://e.com/wire"), feed_id(storage)
            storage.record_poll(
                intent(wire, [Entry(f"https://w.com/{i}", f"W {i}", None) for i in range(1000)])
            )
            jobs = storage.claim_articles("A", 0, T0, T0, "2026-11-22T10:15:00Z", 1000)
            for job in jobs:
                page = Article("word " * 400, canonical_url=job.url.replace("w.com", "c.com"))
                storage.save_article(job.id, page, None, fetched)
            assert storage.counts()["articles"] == 1000
            polls = []
            for batch in (0, 1):  # the cheaper of two polls: one checkpoint is not the cost
                started = time.process_time()
                entries = [entry(n) for n in range(batch * 250, batch * 250 + 250)]
                record = storage.record_poll(
                    intent(fid, entries)._replace(window_start="2026-11-15T10:00:00Z")
                )
                polls.append(time.process_time() - started)
                assert (len(record.created_ids), record.revisions) == (250, 0)
            cost[fetched] = min(polls)
        finally:
            storage.close()
    assert cost[T0] < 3 * cost["2026-01-05T10:00:00Z"], cost


_namespaces = itertools.count()


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # a namespace per example
)
@given(
    polls=st.lists(
        st.tuples(
            st.integers(0, 1),  # which of two feeds
            st.integers(0, 3),  # days since the previous poll
            st.sampled_from([1, 3]),  # the identity window, days
            st.booleans(),  # identity "auto" (else "url+title")
            st.lists(
                st.tuples(
                    st.integers(0, 3), st.integers(0, 4), st.sampled_from([None, "", "g0", "g1"])
                ),
                max_size=10,
            ),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_revisions_are_what_one_insert_per_entry_decided(
    store: SQLStorage,
    engine: Engine,
    polls: list[tuple[int, int, int, bool, list[tuple[int, int, str | None]]]],
) -> None:
    """A poll is staged in a few statements and its revisions judged from one more; the
    decisions must be those of one insert per entry, in feed order (each entry seeing
    only the rows staged and linked before it), which this model makes, on ids read back."""
    ns = f"https://e.com/{next(_namespaces)}"
    feeds = [feed_id(store, f"{ns}/feed-{n}") for n in (0, 1)]
    moment = datetime(2026, 11, 1, 10, tzinfo=UTC)
    plan = []
    for feed, days, window, auto, items in polls:
        moment += timedelta(days=days)
        now, since = to_iso(moment), to_iso(moment - timedelta(days=window))
        entries = [Entry(f"{ns}/u{u}", f"T{t}", None, guid=g) for u, t, g in items]
        record = store.record_poll(
            intent(feeds[feed], entries, now=now)._replace(
                window_start=since, identity="auto" if auto else "url+title"
            )
        )
        plan.append((feeds[feed], now, since, auto, entries, record))
    stored = engine.query(
        "SELECT id, url, title, revision_of, link_reason FROM news_summary WHERE url LIKE ?",
        f"{ns}/%",
    )
    ids = {(url, title): row_id for row_id, url, title, _, _ in stored}

    # the model: one insert per entry; rows: id -> [url, guid, first seen, feeds, root, reason]
    rows: dict[int, list[Any]] = {}
    for fid, now, since, auto, entries, record in plan:
        created, revisions = [], 0
        for e in merge_repeats(entries):
            row_id = ids[(e.url, e.title)]
            if row_id in rows:
                rows[row_id][3].add(fid)
                continue
            rows[row_id] = [e.url, e.guid, now, {fid}, None, None]
            created.append(row_id)
            if not auto:
                continue
            earlier = [i for i, r in rows.items() if i != row_id and r[2] >= since]
            by_guid = [i for i in earlier if e.guid and rows[i][1] == e.guid and fid in rows[i][3]]
            by_url = [i for i in earlier if rows[i][0] == e.url]
            for found, reason in ((by_guid, "same GUID"), (by_url, "same URL, new title")):
                if found:
                    match = min(found)
                    rows[row_id][4:] = [rows[match][4] or match, reason]
                    revisions += 1
                    break
        assert (list(record.created_ids), record.revisions) == (created, revisions)
    assert {i: (r[4], r[5]) for i, r in rows.items()} == {
        row_id: (root, reason) for row_id, _, _, root, reason in stored
    }


def test_every_claim_and_pass_end_reads_the_queue_not_every_entry(db: SQLiteStorage) -> None:
    # others_at_work runs in every claim transaction and extract_release at the end of
    # every pass: a scan of news_summary there cost more with every day of entries the
    # live database holds (SQLite uses the queue's partial index only when a query names
    # its condition whole)
    for name in ("others_at_work", "extract_release"):
        plan = " | ".join(
            row[3]
            for row in db._conn.execute(
                "EXPLAIN QUERY PLAN " + db._q[name], {"owner": "A", "now": T0}
            )
        )
        assert "news_summary_queue" in plan and "SCAN news_summary" not in plan, (name, plan)


def _stage_same_entry(
    engine: Engine, owner: str, barrier: threading.Barrier, created: list[int]
) -> None:
    storage = engine.open()
    try:
        fid = storage.feeds_to_poll()[0].id
        barrier.wait()
        created.extend(storage.record_poll(intent(fid, [entry(7, T0)], owner=owner)).created_ids)
    finally:
        storage.close()


def test_many_writers_staging_the_same_entry_at_once_make_one_row(
    store: SQLStorage, engine: Engine
) -> None:
    feed_id(store)
    barrier = threading.Barrier(8)
    created: list[int] = []
    threads = [
        threading.Thread(target=_stage_same_entry, args=(engine, f"owner{n}", barrier, created))
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(created) == 1  # exactly one writer created it, so exactly one extracts it
    assert store.counts()["entries"] == 1


# ---------------------------------------------------------------- claims


def claim(
    store: SQLStorage, owner: str, now: str = T0, after_id: int = 0, due_before: str = T0
) -> list[int]:
    jobs = store.claim_articles(owner, after_id, due_before, now, "2026-11-22T10:15:00Z", 10)
    return [job.id for job in jobs]


def test_rows_a_process_staged_are_leased_to_it(store: SQLStorage) -> None:
    fid = feed_id(store)
    created = store.record_poll(intent(fid, [entry(1), entry(2)], owner="A")).created_ids
    assert claim(store, "B") == []
    assert claim(store, "A") == list(created)
    # once the lease has expired (process A died), B takes the rows over
    assert claim(store, "B", now="2026-11-22T10:16:00Z") == list(created)


def test_a_run_walks_the_queue_once(store: SQLStorage) -> None:
    fid = feed_id(store)
    ids = store.record_poll(intent(fid, [entry(n) for n in range(5)], owner="A")).created_ids
    assert claim(store, "A", after_id=ids[2]) == list(ids[3:])


def test_failed_rows_wait_for_their_retry_time(store: SQLStorage) -> None:
    fid = feed_id(store)
    (row,) = store.record_poll(intent(fid, [entry(1)], owner="A")).created_ids
    claim(store, "A")
    store.record_extract_failure(row, "A", FailureOutcome("failed", 1, LATER, "HTTP 500"))
    assert claim(store, "A", due_before=T0) == []
    assert claim(store, "A", due_before=LATER) == [row]


def test_a_pass_has_work_exactly_when_its_lists_would_not_be_empty(store: SQLStorage) -> None:
    """has_work, the one read that spares an idle run (cron's `run --due`, a daemon's
    tick) its whole pass: a feed that feeds_to_poll would list, or a queue row that
    claim_articles would take."""
    assert not store.has_work(None, T0, T0)  # no feed at all
    fid = feed_id(store)
    assert store.has_work(T0, None, T0)  # never polled: due
    (row,) = store.record_poll(intent(fid, [entry(1)], owner="A")).created_ids
    assert not store.has_work(T0, None, T0)  # its next poll is at LATER
    assert store.has_work(LATER, None, T0) and store.has_work(None, None, T0)  # or not --due
    assert not store.has_work(T0, T0, T0)  # the new row is leased to A, at work on it
    assert store.has_work(T0, T0, "2026-11-22T10:16:00Z")  # A's lease expired
    assert claim(store, "A") == [row]
    store.record_extract_failure(row, "A", FailureOutcome("failed", 1, LATER, "HTTP 500"))
    assert not store.has_work(T0, T0, T0)  # failed, to be retried at LATER
    assert store.has_work(T0, LATER, T0)  # ... which has come
    assert not store.has_work(T0, None, T0)  # a pass that does not extract: nothing


def test_a_process_that_lost_its_lease_records_nothing(store: SQLStorage, engine: Engine) -> None:
    fid = feed_id(store)
    (row,) = store.record_poll(intent(fid, [entry(1)], owner="A")).created_ids
    assert claim(store, "B", now="2026-11-22T10:16:00Z") == [row]  # A's lease expired
    store.record_extract_failure(row, "A", FailureOutcome("failed", 1, LATER, "late"))
    state = engine.query("SELECT state, attempts, lease_owner FROM news_summary")
    assert state == [("new", 0, "B")]


def test_saving_an_article_completes_the_row(store: SQLStorage) -> None:
    fid = feed_id(store)
    (row,) = store.record_poll(intent(fid, [entry(1, T0)], owner="A")).created_ids
    claim(store, "A")
    store.save_article(row, Article(text="Body text.", author="Ann", language="en"), T0, LATER)
    store.save_article(row, Article(text="Again."), T0, LATER)  # a second save changes nothing
    (item,) = store.news_recent(10)
    assert (item.title, item.body, item.feed_title, item.author) == (
        "Story 1",
        "Body text.",
        "Feed",
        "Ann",
    )
    assert store.counts()["queue_new"] == 0
    assert claim(store, "A") == []


# ---------------------------------------------------------------- a clock that stepped back

A_YEAR_ON = "2027-11-22T10:00:00Z"  # what a clock a year ahead wrote, read at T0


def test_a_schedule_written_by_a_clock_ahead_of_this_one_is_due(store: SQLStorage) -> None:
    """A poll while the clock ran a year ahead set the next poll a year ahead: once the
    clock is right the feed is due at once (and polled, its schedule written again), not
    in a year. A schedule written by a clock a few seconds ahead (another machine's, on
    PostgreSQL) is not: within clock.SLACK."""
    fid = feed_id(store)
    store.record_poll(PollIntent(fid, A_YEAR_ON, "2027-11-22T10:30:00Z", NOT_MODIFIED, owner="A"))
    assert [f.id for f in store.feeds_to_poll(T0)] == [fid]
    assert store.has_work(T0, None, T0)
    assert claim_feed(store, fid, "B", T0, "2026-11-22T10:05:00Z", due_before=T0)
    store.record_poll(
        PollIntent(fid, "2026-11-22T10:00:30Z", LATER, NOT_MODIFIED, owner="B")
    )  # 30 s ahead
    assert store.feeds_to_poll(T0) == []
    assert not store.has_work(T0, None, T0)


def test_a_claim_or_lease_longer_than_any_is_over(store: SQLStorage) -> None:
    """A feed's claim and a queue row's lease taken a year ahead (the process died, or
    the clock stepped back): over at once for a claim whose own lease is shorter. One
    taken a moment ago, as long as this one's, is not."""
    fid = feed_id(store)
    assert claim_feed(store, fid, "B", A_YEAR_ON, "2027-11-22T10:05:00Z")
    assert claim_feed(store, fid, "A", T0, "2026-11-22T10:05:00Z")
    assert not claim_feed(store, fid, "C", T0, "2026-11-22T10:04:00Z")  # A's is live

    # (its next poll is not due: only the queue row says whether there is work)
    ahead = intent(fid, [entry(1)], owner="B")._replace(lease_until="2027-11-22T10:15:00Z")
    (row,) = store.record_poll(ahead).created_ids
    horizon = "2026-11-22T10:16:00Z"  # a lease of 15 minutes, and the slack
    assert store.has_work(T0, T0, T0, lease_horizon=horizon)
    assert not store.has_work(T0, T0, T0)  # no bound: B's lease, a year long
    assert claim(store, "A") == [row]  # its lease: 15 minutes
    assert claim(store, "C") == []  # A's, live


def test_a_retry_time_further_ahead_than_any_backoff_has_come(store: SQLStorage) -> None:
    fid = feed_id(store)
    (row,) = store.record_poll(intent(fid, [entry(1)], owner="A")).created_ids
    claim(store, "A")
    failed = FailureOutcome("failed", 1, "2027-11-22T11:00:00Z", "HTTP 500")
    store.record_extract_failure(row, "A", failed)
    retry_horizon = "2026-11-23T10:01:00Z"  # a day at most (decide.retry_horizon)
    assert not store.has_work(T0, T0, T0)
    assert store.has_work(T0, T0, T0, retry_horizon=retry_horizon)
    jobs = store.claim_articles("A", 0, T0, T0, "2026-11-22T10:15:00Z", 10, retry_horizon)
    assert [job.id for job in jobs] == [row]


def test_articles_fetched_under_a_clock_not_believed_take_the_believed_clocks_time(
    store: SQLStorage, engine: Engine
) -> None:
    """A pass on a clock feedsync cannot believe (1970) marks what it will store; the
    next retention, on a clock it believes, first gives those articles its own time as
    their fetch time (sql/meta.sql), on the card and in RAM alike; earlier ones keep
    theirs. The newest poll time stored is what a clock cannot be before."""
    fid = feed_id(store)
    assert store.newest_poll() == ""
    rows = store.record_poll(intent(fid, [entry(1), entry(2)], owner="A")).created_ids
    assert store.newest_poll() == T0
    claim(store, "A")
    store.save_article(rows[0], Article(text="Before."), None, T0)
    store.clock_suspect()
    store.clock_suspect()  # the first mark stands
    store.save_article(rows[1], Article(text="At 1970."), None, "1970-01-01T00:05:00Z")
    # the feed polled again by the clock that is behind: the time that showed it wrong
    # is still what a clock cannot be before, until the marked articles are settled
    behind = "2026-05-12T10:00:00Z"
    store.record_poll(intent(fid, [entry(1), entry(2)], owner="A", now=behind))
    assert store.newest_poll() == T0
    assert store.clock_settle(LATER) == 1
    fetched = dict(engine.query("SELECT title, fetched_at FROM news"))
    assert fetched == {"Story 1": T0, "Story 2": LATER}
    assert store.newest_poll() == behind  # settled: the feeds' own times again
    assert store.clock_settle("2026-11-23T10:00:00Z") == 0  # settled: the mark is gone


# ---------------------------------------------------------------- the feed list


def test_config_feeds_are_added_disabled_and_readopted(store: SQLStorage) -> None:
    assert store.sync_config_feeds(["https://e.com/1", "https://e.com/2"], T0) == [
        "https://e.com/1",
        "https://e.com/2",
    ]
    store.add_feed("https://e.com/cli", T0)
    assert store.sync_config_feeds(["https://e.com/1"], T0) == []
    health = {f.url: f for f in store.feed_health()}
    assert not health["https://e.com/2"].enabled
    assert health["https://e.com/2"].disabled_reason == "not in the config file any more"
    assert health["https://e.com/cli"].enabled  # added by hand: the config does not own it
    store.sync_config_feeds(["https://e.com/1", "https://e.com/2"], T0)
    assert all(f.enabled for f in store.feed_health())


@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
def test_config_feeds_another_process_adds_meanwhile_are_adopted_once(
    store: SQLStorage, engine: Engine, pg_url: str
) -> None:
    # daemons of one config start together on a fresh database: the second one's insert
    # waits on the first one's uncommitted row, then finds it made. It is not reported
    # as added; it becomes the config's with the config's identity mode, once; the
    # config's other feeds are still added, and nothing is disabled
    import psycopg

    with psycopg.connect(pg_url) as other, psycopg.connect(pg_url, autocommit=True) as watch:
        other.execute(
            "INSERT INTO feeds (url, origin, added_at) VALUES (%s, 'cli', %s)",
            ("https://e.com/1", T0),
        )
        added: list[list[str]] = []
        syncing = threading.Thread(
            target=lambda: added.append(
                store.sync_config_feeds(
                    {"https://e.com/1": "url+title", "https://e.com/2": "auto"}, T0
                )
            )
        )
        syncing.start()
        wait_for_lock_waits(watch, 1, "the config's insert waiting for the other process's row")
        other.commit()
        syncing.join(60)
    assert added == [["https://e.com/2"]]
    rows = engine.query("SELECT url, origin, identity, enabled FROM feeds ORDER BY url")
    assert [tuple(r) for r in rows] == [
        ("https://e.com/1", "config", "url+title", 1),
        ("https://e.com/2", "config", "auto", 1),
    ]


def _feed_row(id: int, url: str, **fields: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": id,
        "url": url,
        "moved_from": None,
        "origin": "config",
        "enabled": 1,
        "disabled_reason": None,
        "identity": "auto",
    }
    return {**row, **fields}


def test_a_config_that_did_not_change_changes_nothing() -> None:
    rows = [_feed_row(1, "https://e.com/1"), _feed_row(2, "https://e.com/cli", origin="cli")]
    plan = reconcile_config(rows, {"https://e.com/1": "auto"})
    assert plan == ConfigPlan()  # no statement but the one read: every start, every cron run


def test_the_config_plan_adds_adopts_renames_and_disables() -> None:
    rows = [
        _feed_row(1, "https://e.com/new-home", moved_from="https://e.com/old"),  # moved
        _feed_row(2, "https://e.com/gone"),  # left the config
        _feed_row(3, "https://e.com/back", enabled=0, disabled_reason=LEFT_CONFIG),
        _feed_row(4, "https://e.com/by-hand", origin="cli"),
        _feed_row(5, "https://e.com/broken", enabled=0, disabled_reason="HTTP 410"),
    ]
    modes = {
        "https://e.com/old": "auto",  # the URL it was added under: the moved feed
        "https://e.com/back": "auto",
        "https://e.com/by-hand": "url+title",
        "https://e.com/fresh": "auto",
        "https://e.com/broken": "auto",
    }
    plan = reconcile_config(rows, modes)
    assert plan.insert == ["https://e.com/fresh"]
    assert plan.adopt == [3, 4]  # enabled again / owned by the config from now on
    assert plan.identity == {4: "url+title"}
    assert plan.disable == [2]  # feed 5 stays disabled for its own reason, and is kept


def test_removing_a_feed_keeps_its_articles(store: SQLStorage) -> None:
    fid = feed_id(store)
    store.record_poll(intent(fid, [entry(1)]))
    assert store.remove_feed("https://e.com/feed")
    assert not store.remove_feed("https://e.com/feed")
    counts = store.counts()
    assert (counts["feeds"], counts["entries"], counts["links"]) == (0, 1, 0)


def test_a_folder_planted_by_another_user_in_a_shared_place_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shm"
    shared.mkdir(mode=0o777)
    shared.chmod(0o1777)  # like /dev/shm and /tmp
    planted = shared / "feedsync-1000"
    planted.mkdir()
    if os.geteuid() != 0:
        pytest.skip("needs root to give the folder to another user")
    os.chown(planted, 12345, 12345)
    with pytest.raises(StorageError, match=r"belongs to another user .* world-writable"):
        SQLiteStorage.open(planted / "feedsync.db")
    # the same folder elsewhere (a group-shared data folder) is the owner's business
    private = tmp_path / "srv" / "feedsync"
    private.mkdir(parents=True)
    os.chown(private, 12345, 12345)
    SQLiteStorage.open(private / "feedsync.db").close()


def shared_place(tmp_path: Path) -> Path:
    """A world-writable folder with the sticky bit, like /dev/shm and /tmp."""
    shared = tmp_path / "shm"
    shared.mkdir()
    shared.chmod(0o1777)
    return shared


def test_a_link_planted_where_the_live_folder_goes_is_refused(
    fs: FeedsyncEnv, tmp_path: Path
) -> None:
    """Another local user makes /dev/shm/feedsync-<uid> a link to a folder of theirs before
    feedsync's first run: the database must not be made there, where they read it."""
    theirs = tmp_path / "attacker"
    theirs.mkdir()
    link = shared_place(tmp_path) / "feedsync-1000"
    link.symlink_to(theirs)
    fs.db_path = link / "feedsync.db"
    fs.snapshot_path = tmp_path / "card" / "feedsync.db"
    done = fs.run("run", expect=3)
    assert done.stderr == (
        f"feedsync: storage error: {link} is a symbolic link (to {theirs}): "
        "refusing to keep the database there\n"
    )
    assert list(theirs.iterdir()) == []
    # `feedsync restore` builds the live database there too: the same refusal
    restored = fs.run("restore", expect=3)
    assert "is a symbolic link" in restored.stderr and list(theirs.iterdir()) == []


def test_our_own_live_folder_open_to_others_in_a_shared_place_is_closed(
    fs: FeedsyncEnv, tmp_path: Path
) -> None:
    """A folder of ours in /dev/shm that others may read (made by hand, or under a umask
    of 022 by an older feedsync) is made 0700, and the run says so; the run goes on."""
    folder = shared_place(tmp_path) / "feedsync-1000"
    folder.mkdir()
    folder.chmod(0o755)
    fs.db_path = folder / "feedsync.db"
    fs.snapshot_path = tmp_path / "card" / "feedsync.db"
    done = fs.run("run")
    assert folder.stat().st_mode & 0o7777 == 0o700
    assert (
        f"feedsync: {folder} was open to other users (mode 0755) in the world-writable "
        f"{folder.parent}: made it 0700\n"
    ) in done.stderr
    assert (folder / "feedsync.db").exists()
    again = fs.run("run")  # closed now: nothing more to say
    assert "open to other users" not in again.stderr


def test_a_file_planted_where_the_live_folder_goes_is_refused(
    fs: FeedsyncEnv, tmp_path: Path
) -> None:
    planted = shared_place(tmp_path) / "feedsync-1000"
    planted.write_text("")
    fs.db_path = planted / "feedsync.db"
    done = fs.run("run", expect=3)
    assert done.stderr == (
        f"feedsync: storage error: {planted} is not a folder: refusing to keep the database there\n"
    )


# ---------------------------------------------------------------- retention


@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
def test_retention_prunes_old_articles_and_keeps_their_tombstones(store: SQLStorage) -> None:
    """PostgreSQL prunes article by article; SQLite a month of them at once, on the card
    (tests/test_card.py)."""
    fid = feed_id(store)
    old, recent, undated = entry(1, "2025-01-01T00:00:00Z"), entry(2, LATER), entry(3)
    staged_at = "2025-01-01T00:00:00Z"
    ids = store.record_poll(
        intent(fid, [old, recent, undated], owner="A", now=staged_at)
    ).created_ids
    claim(store, "A")
    for row, staged in zip(ids, (old, recent, undated), strict=True):
        store.save_article(row, Article(text="Body."), staged.published, "2025-01-02T00:00:00Z")

    news, tombstones = store.prune("2026-01-01T00:00:00Z", None, batch=1)
    assert (news, tombstones) == (2, 0)  # the 2025 article and the undated one (fetched 2025)
    assert [n.title for n in store.news_recent(10)] == ["Story 2"]
    assert store.counts()["entries"] == 3  # every row kept: none is fetched again
    again = store.record_poll(intent(fid, [old, recent, undated], owner="B"))
    assert again.created_ids == ()

    # a tombstone is kept at least tombstone_days after it was first seen, whatever the
    # entry's date (an archive feed of old entries must not have them refetched)
    assert store.prune(None, "2024-12-31T00:00:00Z") == (0, 0)
    news, tombstones = store.prune("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
    assert (news, tombstones) == (0, 1)  # the dated 2025 tombstone goes, the undated stays
    assert store.counts()["entries"] == 2


# ---------------------------------------------------------------- feed claims


def test_a_feed_being_polled_is_skipped_by_others_until_its_claim_ends(
    store: SQLStorage,
) -> None:
    fid = feed_id(store)
    soon, later = "2026-11-22T10:05:00Z", "2026-11-22T10:06:00Z"
    assert claim_feed(store, fid, "A", T0, soon)
    assert not claim_feed(store, fid, "B", T0, soon)  # A is polling it
    assert claim_feed(store, fid, "A", T0, soon)  # A may renew its own
    assert claim_feed(store, fid, "B", later, "2026-11-22T10:11:00Z")  # A died: taken over
    poll_failed(store, fid, "HTTP 500", later, LATER)  # any outcome ends the claim
    assert claim_feed(store, fid, "C", later, "2026-11-22T10:11:00Z")


def test_a_feed_left_unpolled_is_given_back_by_its_claimant_only(store: SQLStorage) -> None:
    """Its host said 429 while the feed waited for its turn: free for anyone at once,
    still due (no poll recorded), and only the claim's holder can give it back."""
    fid = feed_id(store)
    soon = "2026-11-22T10:05:00Z"
    assert claim_feed(store, fid, "A", T0, soon, due_before=T0)
    store.release_feed(fid, "B")  # not B's to give back
    assert not claim_feed(store, fid, "B", T0, soon)
    store.release_feed(fid, "A")
    assert claim_feed(store, fid, "B", T0, soon, due_before=T0)


def test_a_feed_polled_by_another_since_it_was_listed_is_not_claimed_again(
    store: SQLStorage,
) -> None:
    fid = feed_id(store)
    assert claim_feed(store, fid, "A", T0, "2026-11-22T10:05:00Z", due_before=T0)
    poll_failed(store, fid, "HTTP 500", T0, LATER)  # A polled it: due again at LATER
    # B listed it as due at T0, before A's poll: too late now
    assert not claim_feed(store, fid, "B", T0, "2026-11-22T10:05:00Z", due_before=T0)
    # a pass that polls every feed (a manual run) still may; so may B once it is due
    assert claim_feed(store, fid, "C", T0, "2026-11-22T10:05:00Z")
    store.release_leases("C")
    assert claim_feed(store, fid, "B", LATER, "2026-11-22T11:05:00Z", due_before=LATER)


def test_a_stopping_process_gives_back_all_it_holds(store: SQLStorage) -> None:
    fid = feed_id(store)
    store.record_poll(intent(fid, [entry(1)], owner="A"))
    claim_feed(store, fid, "A", T0, "2026-11-22T10:05:00Z")
    store.release_leases("A")
    assert claim_feed(store, fid, "B", T0, "2026-11-22T10:05:00Z")
    assert claim(store, "B") != []


# ---------------------------------------------------------------- record_poll, every outcome


def health(store: SQLStorage, fid: int) -> Any:
    return next(h for h in store.feed_health() if h.id == fid)


def test_claims_are_taken_in_one_batch_and_skip_what_others_hold(store: SQLStorage) -> None:
    ids = [feed_id(store, f"https://e.com/feed{n}") for n in range(4)]
    soon = "2026-11-22T10:05:00Z"
    assert claim_feed(store, ids[1], "B", T0, soon)
    writes = store.writes
    claim = store.claim_feeds(ids, "A", T0, soon)
    assert store.writes == writes + 1  # one transaction for the batch
    assert claim.ids == {ids[0], ids[2], ids[3]}  # B is polling the second
    assert claim.others  # and says so
    store.release_leases("B")
    assert not store.claim_feeds([], "A", T0, soon).others  # alone now: only A's claims


def test_a_304_keeps_the_validators_and_ends_the_claim(store: SQLStorage) -> None:
    fid = feed_id(store)
    assert claim_feed(store, fid, "A", T0, "2026-11-22T10:05:00Z")
    store.record_poll(PollIntent(fid, T0, LATER, NOT_MODIFIED, etag='"v9"', owner="A"))
    feed = next(f for f in store.feeds_to_poll() if f.id == fid)
    assert feed.etag == '"v9"' and feed.error_count == 0
    assert health(store, fid).next_poll_at == LATER
    assert claim_feed(store, fid, "B", T0, "2026-11-22T10:05:00Z")  # the claim is over


def test_a_failure_counts_and_gone_disables_keeping_the_articles(store: SQLStorage) -> None:
    fid = feed_id(store)
    store.record_poll(intent(fid, [entry(1)]))
    store.record_poll(PollIntent(fid, T0, LATER, FAILED, error="HTTP 500"))
    store.record_poll(PollIntent(fid, T0, LATER, FAILED, error="HTTP 502"))
    assert (health(store, fid).error_count, health(store, fid).last_error) == (2, "HTTP 502")
    store.record_poll(PollIntent(fid, T0, None, GONE, error="HTTP 410: removed"))
    gone = health(store, fid)
    assert not gone.enabled and gone.disabled_reason == "HTTP 410: removed"
    assert gone.entries == 1  # its entries stay
    assert fid not in {f.id for f in store.feeds_to_poll()}


def test_a_move_is_written_with_the_poll_and_refused_onto_another_feed(store: SQLStorage) -> None:
    fid = feed_id(store)
    other = feed_id(store, "https://e.com/other")
    pending = RedirectState(None, "https://e.com/new", 1)
    store.record_poll(PollIntent(fid, T0, LATER, NOT_MODIFIED, redirect=pending))
    feed = next(f for f in store.feeds_to_poll() if f.id == fid)
    assert (feed.redirect_to, feed.redirect_seen) == ("https://e.com/new", 1)
    moved = store.record_poll(
        PollIntent(
            fid, T0, LATER, NOT_MODIFIED, redirect=RedirectState("https://e.com/new", None, 0)
        )
    )
    assert moved.move_refused is None
    assert health(store, fid).url == "https://e.com/new"
    assert health(store, fid).moved_from == "https://e.com/feed"
    onto = RedirectState("https://e.com/other", None, 0)
    refused = store.record_poll(PollIntent(fid, T0, LATER, NOT_MODIFIED, redirect=onto))
    assert refused.move_refused and "already in the list" in refused.move_refused
    assert not health(store, fid).enabled and health(store, other).enabled


def test_a_claim_alone_holds_its_hosts_and_others_wait_for_the_release(
    store: SQLStorage,
) -> None:
    """feedsync/politeness/holds.py: a pass alone holds its hosts in its claim transaction (no write
    of its own); another process gets no turn there until the hold is released, and then
    not before the pace the holder kept in memory."""
    ids = [feed_id(store, "https://e.com/a"), feed_id(store, "https://f.org/b")]
    soon = "2026-11-22T10:05:00Z"
    writes = store.writes
    claim = store.claim_feeds(ids, "A", T0, soon, hold=["e.com", "f.org"], hold_lease=15.0)
    assert store.writes == writes + 1  # the holds ride on the claim
    assert dict(claim.held).keys() == {"e.com", "f.org"} and not claim.others
    assert all(0.0 <= ahead < 1.0 for _, ahead in claim.held)
    fid = ids[0]
    alone = store.record_poll(PollIntent(fid, T0, LATER, NOT_MODIFIED), HostNote(held="e.com"))
    assert not alone.host_wanted
    assert store.host_turn("e.com", "B", 2, 1.0, 15.0) is None  # held by A
    wanted = store.record_poll(PollIntent(fid, T0, LATER, NOT_MODIFIED), HostNote(held="e.com"))
    assert wanted.host_wanted  # B's refusal asks A to give e.com up, seen by A's record
    assert store.host_turn("g.net", "B", 2, 1.0, 15.0) is not None  # not held
    assert store.host_holds_keep("A", T0, 15.0)  # B is at work: A gives its holds up
    store.host_holds_release("A", {"e.com": 30.0, "f.org": -1.0})
    turn = store.host_turn("e.com", "B", 2, 1.0, 15.0)
    assert turn is not None and 25.0 < turn[1] <= 30.0  # A's pace: its next start
    turn = store.host_turn("f.org", "B", 2, 1.0, 15.0)
    assert turn is not None and turn[1] <= 0.0  # nothing to wait for


def test_a_host_with_a_request_in_flight_is_not_held(store: SQLStorage) -> None:
    fid = feed_id(store, "https://e.com/a")
    soon = "2026-11-22T10:05:00Z"
    assert store.host_turn("e.com", "A", 2, 0.0, 15.0) is not None  # an article, say
    claim = store.claim_feeds([fid], "A", T0, soon, hold=["e.com"], hold_lease=15.0)
    assert claim.ids == {fid} and not claim.others and claim.held == ()
    assert store.host_turn("e.com", "B", 2, 0.0, 15.0) is not None  # shared turns go on
    store.release_leases("A")
    store.release_leases("B")
    claim = store.claim_feeds([fid], "C", T0, soon, hold=["e.com"], hold_lease=15.0)
    assert dict(claim.held).keys() == {"e.com"}  # nothing in flight: held
    store.release_leases("C")  # a process that stops gives its holds back too
    assert store.host_turn("e.com", "B", 2, 0.0, 15.0) is not None


@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
def test_another_feedsync_connected_is_company_before_it_claims(
    store: SQLStorage, engine: Engine
) -> None:
    """Pollers started together all connect before any claims: the first claim already
    sees the others (their sessions), so it holds no host that they would then wait
    for; once they are gone, a claim holds again. Other clients (psql, the tests' own
    connection) are not feedsync."""
    fid = feed_id(store, "https://e.com/a")
    soon = "2026-11-22T10:05:00Z"
    other = engine.open()
    try:
        other.counts()  # connected, nothing claimed
        claim = store.claim_feeds([fid], "A", T0, soon, hold=["e.com"], hold_lease=15.0)
        assert claim.ids == {fid} and claim.others and claim.held == ()
    finally:
        other.close()
    store.release_leases("A")
    engine.query("SELECT 1")
    claim = store.claim_feeds([fid], "A", T0, soon, hold=["e.com"], hold_lease=15.0)
    assert not claim.others and dict(claim.held).keys() == {"e.com"}


def test_several_polls_go_in_one_transaction_every_one_or_none(store: SQLStorage) -> None:
    """A pass's group commit (feedsync/group_commit.py): polls that finished together
    are written in one transaction, each as it would be alone, later ones seeing what
    earlier ones staged; a group that cannot be written whole writes nothing."""
    fa, fb = feed_id(store, "https://e.com/a"), feed_id(store, "https://e.com/b")
    writes = store.writes
    first, second = store.record_polls(
        [(intent(fa, [entry(1), entry(2)]), NOTE), (intent(fb, [entry(2), entry(3)]), NOTE)]
    )
    assert store.writes == writes + 1
    assert len(first.created_ids) == 2 and len(second.created_ids) == 1  # 2 was a's
    assert health(store, fb).entries == 2  # linked to b all the same
    assert {h.id: h.next_poll_at for h in store.feed_health()} == {fa: LATER, fb: LATER}

    broken = PollIntent(fb, T0, "2026-11-22T12:00:00Z", "exploded")
    with pytest.raises(ValueError, match="unknown poll outcome"):
        store.record_polls(
            [(PollIntent(fa, T0, "2026-11-22T12:00:00Z", NOT_MODIFIED), NOTE), (broken, NOTE)]
        )
    assert health(store, fa).next_poll_at == LATER  # the good one was not written either


def test_a_poll_writes_its_hosts_state_and_gives_its_slot_back(store: SQLStorage) -> None:
    fid = feed_id(store)
    turn = store.host_turn("e.com", "A", 1, 0.0, 15.0)
    assert turn is not None and store.host_turn("e.com", "B", 1, 0.0, 15.0) is None
    wait = HostWait("e.com", "2026-11-22T12:00:00Z", 1, "HTTP 429")
    writes = store.writes
    store.record_poll(
        PollIntent(
            fid,
            T0,
            LATER,
            FAILED,
            error="HTTP 429",
            owner="A",
        ),
        HostNote(wait=wait, slots=(("e.com", turn[0]),)),
    )
    assert store.writes == writes + 1
    assert store.hosts_waiting(T0) == {"e.com": ("2026-11-22T12:00:00Z", 1)}
    assert store.host_turn("e.com", "B", 1, 0.0, 15.0) is not None  # the slot is free
    store.record_poll(PollIntent(fid, T0, LATER, NOT_MODIFIED), HostNote(clear="e.com"))
    assert store.hosts_waiting(T0) == {}
