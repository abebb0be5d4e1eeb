-- Feeds: the list the owner manages (config file, `feedsync add` / `remove` / `feeds`).
-- Named queries, loaded by feedsync/storage/sqlfiles.py: each starts at a
-- "-- name: <name>" line and is one statement with :named parameters.

-- name: feed_insert
-- A new feed; an existing URL is left alone (RETURNING then gives no row).
INSERT INTO feeds (url, origin, added_at, category, title)
VALUES (:url, :origin, :now, :category, :title)
ON CONFLICT (url) DO NOTHING
RETURNING id;

-- name: feed_by_url
-- By its URL, or by the URL it was added under before it moved (301/308).
SELECT id, url, origin, enabled, disabled_reason FROM feeds
 WHERE url = :url OR moved_from = :url
 ORDER BY url = :url DESC
 LIMIT 1;

-- name: feeds_by_origin
SELECT id, url, moved_from, enabled, disabled_reason FROM feeds WHERE origin = :origin;

-- name: feed_adopt_for_config
-- A feed that is (again) in the config file: owned by the config, and enabled again if
-- it was disabled only because it had left the config.
UPDATE feeds
   SET origin = 'config',
       enabled = CASE WHEN disabled_reason = :left_config THEN 1 ELSE enabled END,
       disabled_reason = CASE WHEN disabled_reason = :left_config THEN NULL
                              ELSE disabled_reason END
 WHERE id = :id;

-- name: feed_set_identity
UPDATE feeds SET identity = :identity WHERE id = :id AND identity <> :identity;

-- name: feed_disable
UPDATE feeds SET enabled = 0, disabled_reason = :reason WHERE id = :id;

-- name: feed_delete
-- Its feed_entries links go with it (ON DELETE CASCADE); news_summary and news stay, so
-- the articles are kept and never fetched again.
DELETE FROM feeds WHERE id = :id;

-- name: feeds_to_poll
-- Enabled feeds; with :due_before, only those whose next poll time has come. Each with
-- its publishing over the last week (:week_ago), for the adaptive interval
-- (feedsync/decide.py: next_poll_at).
SELECT f.id, f.url, f.latest_published, f.etag, f.last_modified, f.error_count,
       f.redirect_to, f.redirect_seen, f.identity,
       f.last_poll_at IS NOT NULL AS polled_before,
       count(s.id) AS recent_entries,
       min(coalesce(s.published, s.first_seen_at)) AS recent_oldest
  FROM feeds AS f
  LEFT JOIN feed_entries AS fe ON fe.feed_id = f.id
  LEFT JOIN news_summary AS s
         ON s.id = fe.summary_id AND coalesce(s.published, s.first_seen_at) >= :week_ago
 WHERE f.enabled = 1
   -- (the CAST: PostgreSQL cannot type a parameter it only sees tested for NULL)
   AND (CAST(:due_before AS text) IS NULL OR f.next_poll_at IS NULL OR f.next_poll_at <= :due_before)
 GROUP BY f.id
 ORDER BY f.id;

-- name: feed_health
SELECT f.id, f.url, f.title, f.enabled, f.disabled_reason, f.origin, f.latest_published,
       f.last_poll_at, f.last_success_at, f.error_count, f.last_error, f.last_warning,
       f.moved_from, f.category, f.next_poll_at,
       (SELECT count(*) FROM feed_entries AS fe WHERE fe.feed_id = f.id) AS entries
  FROM feeds AS f
 ORDER BY f.id;
