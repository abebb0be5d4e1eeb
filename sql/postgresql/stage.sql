-- (PostgreSQL: only the queries written differently from sql/stage.sql; the others are
-- taken from there by name, see feedsync/storage/sqlfiles.py.)
-- Stage 2: staging the candidates of one feed poll. THIS is where entries are
-- deduplicated: UNIQUE(url, title) + INSERT ... ON CONFLICT DO NOTHING. All of one poll runs in ONE short
-- write transaction (feedsync/storage/base.py: record_poll), so latest_published never
-- moves without the rows it covers.

-- name: stage_insert
-- RETURNING gives the id only when this insert really created the row: exactly those
-- rows are extracted by this process (leased to it until :lease_until).
-- A second poller inserting the same (url, title) at the same instant waits for the
-- first's commit, then does nothing: exactly one of them gets the id.
INSERT INTO news_summary
       (url, title, published, summary, author, guid, first_seen_at, lease_owner, lease_until)
VALUES (:url, :title, :published, :summary, :author, :guid, :now, :owner, :lease_until)
ON CONFLICT (url, title) DO NOTHING
RETURNING id;

-- name: stage_link
INSERT INTO feed_entries (feed_id, summary_id, first_seen_at)
VALUES (:feed_id, :summary_id, :now)
ON CONFLICT DO NOTHING;

-- name: stage_feed_polled
-- GREATEST() in SQL: latest_published never moves backwards, whichever process writes last.
-- The validators are replaced by this response's (never latched).
UPDATE feeds
   SET latest_published = GREATEST(latest_published, :newest),
       title = coalesce(:title, title),
       etag = :etag,
       last_modified = :last_modified,
       last_poll_at = :now,
       last_success_at = :now,
       next_poll_at = :next_poll_at,
       error_count = 0,
       last_error = NULL,
       last_warning = :warning,
       lease_owner = NULL,
       lease_until = NULL
 WHERE id = :feed_id;
