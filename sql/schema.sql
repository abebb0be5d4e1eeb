-- feedsync schema, version 1 (SQLite).
--
-- Applied by feedsync/storage/sqlite.py to an empty database, inside one BEGIN IMMEDIATE
-- transaction, then the files in sql/migrations/ (NNNN_name.sql, NNNN = the version they
-- bring the database to) in order. PRAGMA user_version holds the version reached.
-- Times are ISO-8601 UTC text 'YYYY-MM-DDTHH:MM:SSZ' (feedsync/timestamps.py), so text
-- comparison is time comparison. This schema is a public interface: documented in
-- docs/schema.md, queried by users with sqlite3 or datasette.

-- Stage 1: one row per canonical feed URL and its polling state.
CREATE TABLE feeds (
    id               INTEGER PRIMARY KEY,
    url              TEXT    NOT NULL UNIQUE,
    title            TEXT,
    origin           TEXT    NOT NULL DEFAULT 'cli' CHECK (origin IN ('config', 'cli')),
    enabled          INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    disabled_reason  TEXT,
    -- newest date staged from this feed; '' before the first; only ever grows (max())
    latest_published TEXT    NOT NULL DEFAULT '',
    etag             TEXT,
    last_modified    TEXT,
    added_at         TEXT    NOT NULL,
    last_poll_at     TEXT,
    last_success_at  TEXT,
    next_poll_at     TEXT,
    error_count      INTEGER NOT NULL DEFAULT 0,   -- consecutive failed polls
    last_error       TEXT,
    -- a poll in progress: which process, until when (used by the multi-process claims)
    lease_owner      TEXT,
    lease_until      TEXT
);

-- Stage 2: every entry ever staged. UNIQUE(url, title) + INSERT OR IGNORE is where
-- entries are deduplicated; the row is also the durable work item of stage 3.
CREATE TABLE news_summary (
    id              INTEGER PRIMARY KEY,
    url             TEXT    NOT NULL,
    title           TEXT    NOT NULL,
    published       TEXT,                          -- NULL when the feed gives no date
    summary         TEXT    NOT NULL DEFAULT '',
    author          TEXT,
    guid            TEXT,
    first_seen_at   TEXT    NOT NULL,
    -- extraction state: new -> done | failed -> ... -> gone
    state           TEXT    NOT NULL DEFAULT 'new'
                    CHECK (state IN ('new', 'done', 'failed', 'gone')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    last_error      TEXT,
    -- claim of the row for extraction: which process, until when
    lease_owner     TEXT,
    lease_until     TEXT,
    UNIQUE (url, title)
);

-- the extraction queue: rows still to do, oldest first
CREATE INDEX news_summary_queue ON news_summary (state, id)
    WHERE state IN ('new', 'failed');

-- which feeds carried which entry: one article in two category feeds, linked twice
CREATE TABLE feed_entries (
    feed_id       INTEGER NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    summary_id    INTEGER NOT NULL REFERENCES news_summary (id) ON DELETE CASCADE,
    first_seen_at TEXT    NOT NULL,
    PRIMARY KEY (feed_id, summary_id)
) WITHOUT ROWID;

CREATE INDEX feed_entries_summary ON feed_entries (summary_id);

-- Stage 3: extracted articles.
CREATE TABLE news (
    id          INTEGER PRIMARY KEY,
    summary_id  INTEGER NOT NULL UNIQUE REFERENCES news_summary (id),
    url         TEXT    NOT NULL,
    title       TEXT    NOT NULL,
    published   TEXT,
    feed_title  TEXT,
    author      TEXT,
    language    TEXT,
    body        TEXT    NOT NULL,
    fetched_at  TEXT    NOT NULL,
    UNIQUE (url, title)
);

CREATE INDEX news_published ON news (published);
