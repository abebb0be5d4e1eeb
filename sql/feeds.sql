-- Feeds: the list the owner manages (config file, `feedsync add` / `remove` / `feeds`).
-- Named queries, loaded by feedsync/storage/sqlfiles.py: each starts at a
-- "-- name: <name>" line and is one statement with :named parameters.

-- name: feed_insert
-- A new feed; an existing URL is left alone (RETURNING then gives no row).
INSERT INTO feeds (url, origin, added_at) VALUES (:url, :origin, :now)
ON CONFLICT (url) DO NOTHING
RETURNING id;

-- name: feed_by_url
SELECT id, url, origin, enabled, disabled_reason FROM feeds WHERE url = :url;

-- name: feeds_by_origin
SELECT id, url, enabled, disabled_reason FROM feeds WHERE origin = :origin;

-- name: feed_adopt_for_config
-- A feed that is (again) in the config file: owned by the config, and enabled again if
-- it was disabled only because it had left the config.
UPDATE feeds
   SET origin = 'config',
       enabled = CASE WHEN disabled_reason = :left_config THEN 1 ELSE enabled END,
       disabled_reason = CASE WHEN disabled_reason = :left_config THEN NULL
                              ELSE disabled_reason END
 WHERE url = :url;

-- name: feed_disable
UPDATE feeds SET enabled = 0, disabled_reason = :reason WHERE id = :id;

-- name: feed_delete
-- Its feed_entries links go with it (ON DELETE CASCADE); news_summary and news stay, so
-- the articles are kept and never fetched again.
DELETE FROM feeds WHERE id = :id;

-- name: feeds_to_poll
SELECT id, url, latest_published, etag, last_modified
  FROM feeds
 WHERE enabled = 1
 ORDER BY id;

-- name: feed_health
SELECT f.id, f.url, f.title, f.enabled, f.disabled_reason, f.origin, f.latest_published,
       f.last_poll_at, f.last_success_at, f.error_count, f.last_error,
       (SELECT count(*) FROM feed_entries AS fe WHERE fe.feed_id = f.id) AS entries
  FROM feeds AS f
 ORDER BY f.id;
