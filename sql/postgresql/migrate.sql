-- `feedsync migrate`: writing what sql/migrate.sql reads from an SQLite database. Rows
-- keep their ids (links and references stay true); ON CONFLICT DO NOTHING makes a batch
-- that was half-copied before a crash, or copied twice, harmless.

-- name: migrate_source_of
SELECT value FROM meta WHERE key = 'migrated_from';

-- name: migrate_mark_source
INSERT INTO meta (key, value) VALUES ('migrated_from', :lineage)
ON CONFLICT (key) DO NOTHING;

-- name: migrate_watermarks
-- Where each table's copy stands (the batches commit in key order).
SELECT (SELECT coalesce(max(id), 0) FROM feeds) AS feeds,
       (SELECT coalesce(max(id), 0) FROM news_summary) AS news_summary,
       (SELECT coalesce(max(id), 0) FROM news) AS news,
       coalesce((SELECT summary_id FROM feed_entries
                  ORDER BY summary_id DESC, feed_id DESC LIMIT 1), 0) AS entries_summary,
       coalesce((SELECT feed_id FROM feed_entries
                  ORDER BY summary_id DESC, feed_id DESC LIMIT 1), 0) AS entries_feed;

-- name: migrate_write_feeds
INSERT INTO feeds (id, url, title, origin, enabled, disabled_reason, latest_published, etag,
                   last_modified, added_at, last_poll_at, last_success_at, next_poll_at,
                   error_count, last_error, moved_from, redirect_to, redirect_seen,
                   last_warning, category, identity, user_title)
VALUES (:id, :url, :title, :origin, :enabled, :disabled_reason, :latest_published, :etag,
        :last_modified, :added_at, :last_poll_at, :last_success_at, :next_poll_at,
        :error_count, :last_error, :moved_from, :redirect_to, :redirect_seen,
        :last_warning, :category, :identity, :user_title)
ON CONFLICT DO NOTHING;

-- name: migrate_write_news_summary
INSERT INTO news_summary (id, url, title, published, summary, author, guid, first_seen_at,
                          state, attempts, next_attempt_at, last_error, revision_of,
                          link_reason, lan_host)
VALUES (:id, :url, :title, :published, :summary, :author, :guid, :first_seen_at,
        :state, :attempts, :next_attempt_at, :last_error, :revision_of, :link_reason,
        :lan_host)
ON CONFLICT DO NOTHING;

-- name: migrate_write_feed_entries
INSERT INTO feed_entries (feed_id, summary_id, first_seen_at)
VALUES (:feed_id, :summary_id, :first_seen_at)
ON CONFLICT DO NOTHING;

-- name: migrate_write_news
INSERT INTO news (id, summary_id, url, title, published, feed_title, author, language, body,
                  fetched_at, canonical_url, fingerprint)
VALUES (:id, :summary_id, :url, :title, :published, :feed_title, :author, :language, :body,
        :fetched_at, :canonical_url, :fingerprint)
ON CONFLICT DO NOTHING;

-- name: migrate_write_duplicates
UPDATE news_summary SET duplicate_of = :duplicate_of
 WHERE id = :id AND duplicate_of IS DISTINCT FROM :duplicate_of;

-- name: migrate_write_hosts
INSERT INTO hosts (host, not_before, backoff_count, reason)
VALUES (:host, :not_before, :backoff_count, :reason)
ON CONFLICT DO NOTHING;

-- name: migrate_sequences
-- Rows came with their ids: the identities continue after the highest one.
SELECT setval(pg_get_serial_sequence('feeds', 'id'),
              greatest((SELECT max(id) FROM feeds), 1)),
       setval(pg_get_serial_sequence('news_summary', 'id'),
              greatest((SELECT max(id) FROM news_summary), 1)),
       setval(pg_get_serial_sequence('news', 'id'),
              greatest((SELECT max(id) FROM news), 1));
