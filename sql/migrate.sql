-- `feedsync migrate`: reading an SQLite card database (or a copy of one) to copy it
-- into PostgreSQL (sql/postgresql/migrate.sql writes). Each table in key order, a batch
-- at a time after the last key the target already has, so an interrupted copy resumes
-- where it stopped and a finished one copies nothing again. Leases are not copied: the
-- processes that held them worked on the other database.

-- name: migrate_source_version
PRAGMA user_version;

-- name: migrate_source_lineage
SELECT value FROM meta WHERE key = 'lineage';

-- name: migrate_read_feeds
SELECT id, url, title, origin, enabled, disabled_reason, latest_published, etag,
       last_modified, added_at, last_poll_at, last_success_at, next_poll_at, error_count,
       last_error, moved_from, redirect_to, redirect_seen, last_warning, category, identity,
       user_title
  FROM feeds WHERE id > :after ORDER BY id LIMIT :limit;

-- name: migrate_read_news_summary
-- duplicate_of points into news, copied after this table: set by migrate_read_duplicates.
SELECT id, url, title, published, summary, author, guid, first_seen_at, state, attempts,
       next_attempt_at, last_error, revision_of, link_reason, lan_host
  FROM news_summary WHERE id > :after ORDER BY id LIMIT :limit;

-- name: migrate_read_feed_entries
-- Keyed by (summary_id, feed_id), after the last pair the target has.
SELECT feed_id, summary_id, first_seen_at
  FROM feed_entries
 WHERE (summary_id, feed_id) > (:after_summary, :after_feed)
 ORDER BY summary_id, feed_id
 LIMIT :limit;

-- name: migrate_read_news
-- One month's articles of the card, in id order (the months are merged by the caller).
SELECT id, summary_id, url, title, published, feed_title, author, language, body,
       fetched_at, canonical_url, fingerprint
  FROM news_{month} WHERE id > :after ORDER BY id;

-- name: migrate_read_duplicates
SELECT id, duplicate_of FROM news_summary WHERE duplicate_of IS NOT NULL;

-- name: migrate_read_hosts
SELECT host, not_before, backoff_count, reason FROM hosts;

-- name: migrate_count
SELECT (SELECT count(*) FROM feeds) AS feeds,
       (SELECT count(*) FROM news_summary) AS news_summary,
       (SELECT count(*) FROM feed_entries) AS feed_entries,
       (SELECT count(*) FROM (SELECT id FROM news) AS n) AS news,
       (SELECT count(*) FROM hosts) AS hosts;
