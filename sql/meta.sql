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

-- name: live_missing_tables
-- The tables a feedsync database of schema :version has had since the version that made
-- each one (schema.sql, the migrations) and this one lacks. The live database must hold
-- them all: one that lacks any is damaged, and is rebuilt from the card
-- (feedsync/storage/card_restore.py). tests/test_card.py checks the list against a live
-- database built now: a migration that adds a table adds it here.
SELECT column1 AS name
  FROM (VALUES ('feeds', 1), ('news_summary', 1), ('feed_entries', 1), ('news', 1),
               ('meta', 2), ('hosts', 3), ('host_pace', 6), ('host_slots', 6))
 WHERE column2 <= :version
   AND column1 NOT IN (SELECT name FROM sqlite_master WHERE type = 'table')
 ORDER BY column1;

-- name: live_quick_check
-- Every page of the live database, as SQLite reads it (b-trees, free list, record
-- formats; not the slower index-against-table check of integrity_check): 'ok', or the
-- first thing wrong. It reads the whole file: 47 ms for a 12 MB live database on x86 (more
-- on a Pi), so it runs when a command met a malformed page and on `feedsync restore`, not
-- at every start (feedsync/storage/card_restore.py, _live_state).
PRAGMA quick_check(1);

-- name: clock_suspect
-- A pass on a clock feedsync cannot believe (feedsync/clock.py): the articles it stores
-- from now on, from the next id, carry a fetch time that retention must not judge them
-- by. The earliest mark stands until retention, on a clock it believes, settles them
-- (clock_settle_news). On SQLite the live database always holds the newest article.
INSERT INTO meta (key, value)
VALUES ('clock_suspect_from', (SELECT CAST(coalesce(max(id), 0) + 1 AS text) FROM news))
ON CONFLICT (key) DO NOTHING;

-- name: clock_suspect_until
-- ... and the newest time the database held when the clock was found wrong: a clock that
-- reads before it is still wrong (sql/feeds.sql: newest_poll), even once every feed has
-- been polled again at its time. Settling the marked articles at such a clock's time,
-- still behind, let retention take them for months old once the clock was set right.
INSERT INTO meta (key, value)
SELECT 'clock_suspect_until', newest FROM (
    SELECT coalesce(max(t), '') AS newest FROM (
        SELECT max(last_poll_at) AS t FROM feeds WHERE enabled = 1
        UNION ALL
        SELECT value FROM meta WHERE key = 'clock_suspect_until'
    ) AS times
) AS found
WHERE newest <> ''
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: clock_suspect_clear
DELETE FROM meta WHERE key IN ('clock_suspect_from', 'clock_suspect_until');

-- name: clock_settle_news
-- Articles stored under a clock feedsync could not believe (ids from :first_id) take :now,
-- on a clock it believes, as their fetch time: no earlier than the real one, so
-- retention keeps them at least as long as it should, never less.
UPDATE news SET fetched_at = :now WHERE id >= CAST(:first_id AS integer) AND fetched_at < :now
RETURNING id;
