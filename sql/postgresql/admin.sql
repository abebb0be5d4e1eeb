-- The schema's own bookkeeping on PostgreSQL (feedsync/storage/postgresql.py: _migrate),
-- and what `feedsync migrate` needs to copy rows in with their ids.

-- name: schema_lock
-- Held until the migrating transaction ends: a second process starting at the same time
-- waits here, then finds the schema applied. The key is feedsync's own ('feedsync' as
-- a number), so other programs' advisory locks on the same database never collide.
SELECT pg_advisory_xact_lock(7371758918474417008);

-- name: schema_version_table
CREATE TABLE IF NOT EXISTS feedsync_schema (version INTEGER NOT NULL);

-- name: schema_version
SELECT coalesce(max(version), 0) AS version FROM feedsync_schema;

-- name: schema_version_set
WITH gone AS (DELETE FROM feedsync_schema)
INSERT INTO feedsync_schema (version) VALUES (:version);

-- name: database_size
SELECT pg_database_size(current_database()) AS bytes;

-- name: session_views
-- The names the shared queries read (on SQLite, views over the RAM disk and the card:
-- sql/card.sql); here, one database, they are the tables themselves. Temporary: made on
-- each connection of the pool, never in the schema.
CREATE TEMP VIEW news_summary_all AS SELECT * FROM news_summary;
CREATE TEMP VIEW feed_entries_all AS SELECT * FROM feed_entries;
CREATE TEMP VIEW news_all AS SELECT * FROM news;
