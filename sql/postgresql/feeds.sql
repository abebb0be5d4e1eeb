-- (PostgreSQL: only the queries written differently from sql/feeds.sql; the others are
-- taken from there by name, see feedsync/storage/sqlfiles.py.)
-- Feeds: the list the owner manages (config file, `feedsync add` / `remove` / `feeds`).
-- Named queries, loaded by feedsync/storage/sqlfiles.py: each starts at a
-- "-- name: <name>" line and is one statement with :named parameters.

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
   AND (CAST(:due_before AS text) IS NULL OR f.next_poll_at IS NULL OR f.next_poll_at <= :due_before)
 GROUP BY f.id
 ORDER BY f.id;
