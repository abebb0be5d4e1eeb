-- Reading what was collected (feedsync demo now; the user commands later).

-- name: counts
SELECT (SELECT count(*) FROM feeds) AS feeds,
       (SELECT count(*) FROM feeds WHERE enabled = 1) AS feeds_enabled,
       (SELECT count(*) FROM feeds WHERE enabled = 1 AND error_count > 0) AS feeds_failing,
       (SELECT count(*) FROM news_summary) AS entries,
       (SELECT count(*) FROM feed_entries) AS links,
       (SELECT count(*) FROM news) AS articles,
       (SELECT count(*) FROM news_summary WHERE state = 'new') AS queue_new,
       (SELECT count(*) FROM news_summary WHERE state = 'failed') AS queue_failed,
       (SELECT count(*) FROM news_summary WHERE state = 'gone') AS gone;

-- name: news_recent
SELECT id, url, title, published, feed_title, author, language, fetched_at, body
  FROM news
 ORDER BY coalesce(published, fetched_at) DESC, id DESC
 LIMIT :limit;
