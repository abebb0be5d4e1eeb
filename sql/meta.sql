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

-- name: clock_suspect
-- A pass on a clock feedsync cannot believe (feedsync/clock.py): the articles it stores
-- from now on, from the next id, carry a fetch time that retention must not judge them
-- by. The earliest mark stands until retention, on a clock it believes, settles them
-- (clock_settle_news). On SQLite the live database always holds the newest article.
INSERT INTO meta (key, value)
VALUES ('clock_suspect_from', (SELECT CAST(coalesce(max(id), 0) + 1 AS text) FROM news))
ON CONFLICT (key) DO NOTHING;

-- name: clock_suspect_clear
DELETE FROM meta WHERE key = 'clock_suspect_from';

-- name: clock_settle_news
-- Articles stored under a clock feedsync could not believe (ids from :first_id) take :now,
-- on a clock it believes, as their fetch time: no earlier than the real one, so
-- retention keeps them at least as long as it should, never less.
UPDATE news SET fetched_at = :now WHERE id >= CAST(:first_id AS integer) AND fetched_at < :now
RETURNING id;
