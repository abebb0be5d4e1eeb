-- (PostgreSQL: only the queries written differently from sql/news.sql; the others are
-- taken from there by name, see feedsync/storage/sqlfiles.py.)
-- Reading what was collected (feedsync demo now; the user commands later).

-- name: news_list
-- Newest first, since a time, optionally from one feed; without the body.
SELECT n.id, n.url, n.title, n.published, n.feed_title, n.author, n.language, n.fetched_at,
       '' AS body
  FROM news AS n
 WHERE coalesce(n.published, n.fetched_at) >= :since
   AND (CAST(:feed_id AS bigint) IS NULL OR EXISTS (
        SELECT 1 FROM feed_entries AS fe JOIN news_summary AS s ON s.id = fe.summary_id
         WHERE fe.feed_id = :feed_id
           AND (s.id = n.summary_id OR s.revision_of = n.summary_id OR s.duplicate_of = n.id)))
 ORDER BY coalesce(n.published, n.fetched_at) DESC, n.id DESC
 LIMIT :limit;

-- name: news_search
-- Every term anywhere in the title or the text (:patterns, '%term%' each, LIKE-escaped),
-- case-insensitively; :first, the longest of them, goes through the trigram index
-- (sql/postgresql/migrations/0004_search.sql). Titles that match first, then the newest.
-- The body is returned whole: the snippet is cut around the match in Python.
SELECT n.id, n.url, n.title, n.published, n.feed_title, n.body AS snippet
  FROM news AS n
 WHERE (n.title || ' ' || n.body) ILIKE :first
   AND (n.title || ' ' || n.body) ILIKE ALL (:patterns)
 ORDER BY n.title ILIKE ALL (:patterns) DESC, coalesce(n.published, n.fetched_at) DESC,
          n.id DESC
 LIMIT :limit;
