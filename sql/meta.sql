-- The meta table (sql/migrations/0002_snapshot_meta.sql): what saves to the card need to
-- know, and the daemon's heartbeat.

-- name: meta_all
SELECT key, value FROM meta;

-- name: meta_set
INSERT INTO meta (key, value) VALUES (:key, :value)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: restore_free_entries
-- A restored database: whoever held these leases worked on a live database that is gone.
UPDATE news_summary SET lease_owner = NULL, lease_until = NULL WHERE lease_owner IS NOT NULL;

-- name: restore_free_feeds
UPDATE feeds SET lease_owner = NULL, lease_until = NULL WHERE lease_owner IS NOT NULL;

-- name: is_feedsync_database
SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'feeds';
