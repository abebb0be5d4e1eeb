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
