-- (PostgreSQL: only the queries written differently from sql/news.sql; the others are
-- taken from there by name, see feedsync/storage/sqlfiles.py.)
-- Reading what was collected (feedsync demo now; the user commands later).

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
