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

-- name: news_list
-- Newest first, since a time, optionally from one feed; without the body.
SELECT n.id, n.url, n.title, n.published, n.feed_title, n.author, n.language, n.fetched_at,
       '' AS body
  FROM news AS n
 WHERE coalesce(n.published, n.fetched_at) >= :since
   -- (the CAST: PostgreSQL cannot type a parameter it only sees tested for NULL)
   AND (CAST(:feed_id AS bigint) IS NULL OR EXISTS (
        SELECT 1 FROM feed_entries AS fe JOIN news_summary AS s ON s.id = fe.summary_id
         WHERE fe.feed_id = :feed_id
           AND (s.id = n.summary_id OR s.revision_of = n.summary_id OR s.duplicate_of = n.id)))
 ORDER BY coalesce(n.published, n.fetched_at) DESC, n.id DESC
 LIMIT :limit;

-- name: news_by_id
SELECT id, url, title, published, feed_title, author, language, fetched_at, body
  FROM news WHERE id = :id;

-- name: news_by_url
SELECT id, url, title, published, feed_title, author, language, fetched_at, body
  FROM news WHERE url = :url ORDER BY id DESC LIMIT 1;

-- name: news_carried_by
-- The feeds that carried an article (one story in several category feeds), its
-- revisions and its duplicates included.
SELECT DISTINCT f.id, f.url, f.title
  FROM news AS n
  JOIN news_summary AS s
    ON s.id = n.summary_id OR s.revision_of = n.summary_id OR s.duplicate_of = n.id
  JOIN feed_entries AS fe ON fe.summary_id = s.id
  JOIN feeds AS f ON f.id = fe.feed_id
 WHERE n.id = :id
 ORDER BY f.id;

-- name: news_search
-- Full text (sql/migrations/0004_search.sql): ranked by bm25, with a snippet of the best
-- column (64 tokens: with trigrams, characters), the matches between :open and :close.
SELECT n.id, n.url, n.title, n.published, n.feed_title,
       snippet(news_fts, -1, :open, :close, '…', 64) AS snippet
  FROM news_fts
  JOIN news AS n ON n.id = news_fts.rowid
 WHERE news_fts MATCH :query
 ORDER BY bm25(news_fts), n.id DESC
 LIMIT :limit;

-- name: news_search_short
-- Terms of one or two characters are below the trigram index: a scan, titles first.
SELECT n.id, n.url, n.title, n.published, n.feed_title, n.body AS snippet
  FROM news AS n
 WHERE (n.title || ' ' || n.body) LIKE :pattern ESCAPE '\'
 ORDER BY n.title LIKE :pattern ESCAPE '\' DESC, coalesce(n.published, n.fetched_at) DESC
 LIMIT :limit;

-- name: news_export
-- Every field, oldest first, streamed (the caller iterates the cursor).
SELECT id, url, title, published, feed_title, author, language, fetched_at, body
  FROM news
 WHERE coalesce(published, fetched_at) >= :since
 ORDER BY id;

-- name: status_counts
-- feedsync status: feeds by health, the queue, articles today and in all.
SELECT (SELECT count(*) FROM feeds) AS feeds,
       (SELECT count(*) FROM feeds WHERE enabled = 0) AS disabled,
       (SELECT count(*) FROM feeds WHERE enabled = 1 AND error_count >= :failing_after)
           AS failing,
       (SELECT count(*) FROM feeds WHERE enabled = 1 AND error_count > 0
                                      AND error_count < :failing_after) AS retrying,
       (SELECT count(*) FROM news_summary WHERE state = 'new') AS queue_new,
       (SELECT count(*) FROM news_summary WHERE state = 'failed') AS queue_failed,
       (SELECT count(*) FROM news_summary WHERE state = 'gone') AS gone,
       (SELECT count(*) FROM news WHERE fetched_at >= :today) AS articles_today,
       (SELECT count(*) FROM news) AS articles,
       (SELECT min(next_poll_at) FROM feeds WHERE enabled = 1) AS next_poll_at;

-- name: news_summary_of
SELECT summary_id FROM news WHERE id = :id;
