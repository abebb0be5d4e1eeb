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
