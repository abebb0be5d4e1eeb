-- Snapshot bookkeeping in the meta table (sql/migrations/0002_snapshot_meta.sql);
-- the snapshots themselves are written by feedsync/storage/snapshot.py.

-- name: meta_all
SELECT key, value FROM meta;

-- name: meta_set
INSERT INTO meta (key, value) VALUES (:key, :value)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: meta_read
SELECT key, value FROM meta;

-- name: snapshot_stamp
-- In the temporary copy about to become the snapshot: its own number and time.
UPDATE meta SET value = :value WHERE key = :key;

-- name: restore_free_entries
-- A restored database: whoever held these leases worked on a live database that is gone.
UPDATE news_summary SET lease_owner = NULL, lease_until = NULL WHERE lease_owner IS NOT NULL;

-- name: restore_free_feeds
UPDATE feeds SET lease_owner = NULL, lease_until = NULL WHERE lease_owner IS NOT NULL;

-- name: snapshot_copy
-- A consistent, compacted copy of the live database while writers go on (WAL), written
-- in rollback-journal mode: opening the snapshot never creates -wal/-shm on the card.
VACUUM INTO :path;

-- name: is_feedsync_database
SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'feeds';
