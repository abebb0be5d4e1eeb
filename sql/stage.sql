-- Stage 2: staging the candidates of one feed poll. THIS is where entries are
-- deduplicated: UNIQUE(url, title) + INSERT OR IGNORE. All of one poll runs in ONE short
-- write transaction (feedsync/storage/base.py: record_poll), so latest_published never
-- moves without the rows it covers.

-- name: stage_insert
-- RETURNING gives the id only when this insert really created the row: exactly those
-- rows are extracted by this process (leased to it until :lease_until). On SQLite the
-- UNIQUE constraint holds within the live database; an entry the card holds (saved,
-- and gone from RAM) is found through news_summary_all (sql/card.sql): deduplication
-- spans both files, so an entry seen years ago is never staged again.
INSERT OR IGNORE INTO news_summary
       (url, title, published, summary, author, guid, first_seen_at, lease_owner, lease_until)
SELECT :url, :title, :published, :summary, :author, :guid, :now, :owner, :lease_until
 WHERE NOT EXISTS (SELECT 1 FROM news_summary_all WHERE url = :url AND title = :title)
RETURNING id;

-- name: stage_lookup
SELECT id, published FROM news_summary_all WHERE url = :url AND title = :title;

-- name: stage_fill_date
-- The row was staged first from a feed that gave no date; this feed gives one. (On
-- SQLite the row is brought into the live database first when only the card holds it.)
UPDATE news_summary SET published = :published WHERE id = :id AND published IS NULL;

-- name: stage_link
-- A link already made (in either file) is not made again: the count of new links is
-- what the insert reports.
INSERT OR IGNORE INTO feed_entries (feed_id, summary_id, first_seen_at)
SELECT :feed_id, :summary_id, :now
 WHERE NOT EXISTS (SELECT 1 FROM feed_entries_all
                    WHERE feed_id = :feed_id AND summary_id = :summary_id);

-- name: stage_feed_polled
-- max() in SQL: latest_published never moves backwards, whichever process writes last.
-- The validators are replaced by this response's (never latched).
UPDATE feeds
   SET latest_published = max(latest_published, :newest),
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
