-- (PostgreSQL: only the queries written differently from sql/news.sql; the others are
-- taken from there by name, see feedsync/storage/sqlfiles.py.) One database, no RAM
-- disk and no card: the counts and listings read the tables themselves.

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

-- name: status_counts
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
       (SELECT min(next_poll_at) FROM feeds WHERE enabled = 1) AS next_poll_at,
       (SELECT max(last_success_at) FROM feeds) AS last_success_at;

-- name: news_keys
SELECT id, coalesce(published, fetched_at) AS w
  FROM news
 WHERE coalesce(published, fetched_at) >= :since
 ORDER BY w DESC, id DESC
 LIMIT :limit;

-- name: news_count
SELECT count(*) AS n FROM news WHERE coalesce(published, fetched_at) >= :since;

-- name: news_window
-- (sql/news.sql says what.) One table: read through news_when (migration 10), whose
-- order (the sort time, then the id) is the listing's, from the row after (:w, :id).
SELECT id, url, title, published, feed_title, author, language, fetched_at,
       CASE WHEN :bodies THEN body ELSE '' END AS body
  FROM news AS n
 WHERE (coalesce(n.published, n.fetched_at), n.id) < (CAST(:w AS TEXT), CAST(:id AS BIGINT))
   AND (CAST(:feed_id AS BIGINT) IS NULL AND CAST(:category AS TEXT) IS NULL
        OR EXISTS (SELECT 1 FROM news_summary AS s
                     JOIN feed_entries AS fe ON fe.summary_id = s.id
                    WHERE (s.id = n.summary_id OR s.revision_of = n.summary_id
                           OR s.duplicate_of = n.id)
                      AND fe.feed_id IN (
                          SELECT id FROM feeds
                           WHERE id = CAST(:feed_id AS BIGINT)
                              OR category = CAST(:category AS TEXT)
                              OR substr(category, 1, length(CAST(:category AS TEXT)) + 1)
                                 = CAST(:category AS TEXT) || '/')))
 ORDER BY coalesce(n.published, n.fetched_at) DESC, n.id DESC
 LIMIT :limit;

-- name: feed_plan_marks
-- (sql/news.sql says what.) One table, through its primary key (feed_id, summary_id).
SELECT coalesce((SELECT max(summary_id) FROM feed_entries), 0) AS newest,
       (SELECT summary_id FROM feed_entries WHERE feed_id = CAST(:feed_id AS BIGINT)
         ORDER BY summary_id DESC LIMIT 1 OFFSET :limit - 1) AS live_kth,
       NULL AS card_kth;

-- name: feed_links_upto
SELECT count(*) AS n
  FROM (SELECT 1 FROM feed_entries WHERE feed_id = CAST(:feed_id AS BIGINT) LIMIT :cap) AS l;

-- name: news_per_day
SELECT fe.feed_id, substr(a.fetched_at, 1, 10) AS day, count(DISTINCT a.id) AS articles
  FROM news AS a
  JOIN news_summary AS s
    ON s.id = a.summary_id OR s.revision_of = a.summary_id OR s.duplicate_of = a.id
  JOIN feed_entries AS fe ON fe.summary_id = s.id
 WHERE a.fetched_at >= :since
 GROUP BY fe.feed_id, substr(a.fetched_at, 1, 10)
 ORDER BY fe.feed_id, day;

-- name: news_search
-- Search, the candidates of one way a query can match (feedsync/search.py): every word
-- anywhere in the title or the text (:patterns, one regular expression each, in which
-- a letter stands for its accented forms too: search.accent_pattern), whatever the
-- case and the accents; :first, the longest of them, goes through the trigram index
-- (sql/postgresql/migrations/0004_search.sql: pg_trgm takes trigrams from a regular
-- expression as from a LIKE pattern). Titles that match first, then the newest.
-- Python decides on the text (where a word starts, phrases, excluded words) and cuts
-- the snippet.
SELECT n.id, n.url, n.title, n.published, n.feed_title, n.fetched_at, n.body
  FROM news AS n
 WHERE (n.title || ' ' || n.body) ~* :first
   AND (n.title || ' ' || n.body) ~* ALL (:patterns)
 ORDER BY n.title ~* ALL (:patterns) DESC, coalesce(n.published, n.fetched_at) DESC,
          n.id DESC
 LIMIT :limit;

-- name: news_search_texts
-- search_count: news_search's candidates (the same condition, order and :limit), their
-- text alone: Python judges each as search does, cuts no snippet.
SELECT n.id, n.title || ' ' || n.body AS text
  FROM news AS n
 WHERE (n.title || ' ' || n.body) ~* :first
   AND (n.title || ' ' || n.body) ~* ALL (:patterns)
 ORDER BY n.title ~* ALL (:patterns) DESC, coalesce(n.published, n.fetched_at) DESC,
          n.id DESC
 LIMIT :limit;

-- name: news_export
-- Every field, oldest first, streamed (a server-side cursor).
SELECT id, url, title, published, feed_title, author, language, fetched_at, body
  FROM news
 WHERE coalesce(published, fetched_at) >= :since
 ORDER BY id;

-- name: entries_in_state
SELECT id, url, title, summary, published, first_seen_at, state, attempts,
       next_attempt_at, last_error
  FROM news_summary AS s
 WHERE state = :state
   AND coalesce(s.published, s.first_seen_at) >= :since
   AND (CAST(:feed_id AS BIGINT) IS NULL
        OR s.id IN (SELECT summary_id FROM feed_entries WHERE feed_id = :feed_id))
 ORDER BY s.id DESC
 LIMIT :limit;

-- name: entries_count
SELECT count(*) AS n
  FROM news_summary AS s
 WHERE state = :state
   AND coalesce(s.published, s.first_seen_at) >= :since
   AND (CAST(:feed_id AS BIGINT) IS NULL
        OR s.id IN (SELECT summary_id FROM feed_entries WHERE feed_id = :feed_id));

-- name: content_key
-- Reading.content_key: the database's lineage and its content_version (counted by the
-- triggers of migrations/0011_content_version.sql, in the transaction that changed the
-- rows), two lookups by key.
SELECT (SELECT value FROM meta WHERE key = 'lineage') || '.'
       || (SELECT value FROM meta WHERE key = 'content_version') AS key;
