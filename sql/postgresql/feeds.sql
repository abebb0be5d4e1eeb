-- (PostgreSQL: only the queries written differently from sql/feeds.sql; the others are
-- taken from there by name, see feedsync/storage/sqlfiles.py.)

-- name: feeds_insert_config
-- As in sql/feeds.sql: the config file's new feeds in ONE statement, in the file's order.
INSERT INTO feeds (url, origin, added_at, identity, user_title, category)
SELECT f ->> 0, 'config', :now, f ->> 1, f ->> 2, f ->> 3
  FROM jsonb_array_elements(CAST(:feeds AS jsonb)) WITH ORDINALITY AS x(f, n)
 ORDER BY n
ON CONFLICT (url) DO NOTHING
RETURNING url;

-- name: feed_health
-- (sql/feeds.sql says what.) One table: the links counted by feed.
SELECT f.id, f.url, coalesce(f.user_title, f.title) AS title, f.title AS feed_title,
       f.user_title, f.enabled, f.disabled_reason, f.origin, f.latest_published,
       f.last_poll_at, f.last_success_at, f.error_count, f.last_error, f.last_warning,
       f.moved_from, f.category, f.next_poll_at,
       coalesce(c.entries, 0) AS entries
  FROM feeds AS f
  LEFT JOIN (SELECT feed_id, count(*) AS entries FROM feed_entries GROUP BY feed_id) AS c
         ON c.feed_id = f.id
 ORDER BY f.id;
