-- Stage 2: staging the candidates of one feed poll. THIS is where entries are
-- deduplicated: UNIQUE(url, title), and a new row only for an entry found in neither the
-- live database nor the card. All of one poll runs in ONE short write transaction
-- (feedsync/storage/sql_polling.py: record_poll), so latest_published never moves without
-- the rows it covers. On SQLite the poll's entries go in three statements for the whole
-- poll (feedsync/storage/sqlite_staging.py): stage_known, stage_new, stage_link_batch.

-- name: stage_known
-- Which of a poll's candidates (:keys, a JSON array of [url, title], one per pair, in
-- feed order) are staged already. The UNIQUE constraint holds within the live database;
-- an entry the card holds (saved, and gone from RAM) is found through news_summary_all
-- (sql/card.sql): deduplication spans both files, so an entry seen years ago is never
-- staged again.
SELECT j.key AS ord, s.id, s.published
  FROM json_each(:keys) AS j
  JOIN news_summary_all AS s
    ON s.url = json_extract(j.value, '$[0]') AND s.title = json_extract(j.value, '$[1]');

-- name: stage_new
-- The candidates stage_known did not find (:entries, a JSON array of [url, title,
-- published, summary, author, guid]), inserted in feed order (ids follow it, as one insert
-- per entry gave them). Exactly these rows are created by this poll, and extracted by
-- this process (leased to it until :lease_until): RETURNING gives the id only when the
-- insert really created the row (stage_known looked in both files in this same write
-- transaction, and SQLite has one writer at a time, so OR IGNORE is only the guard).
-- :lan_host (the document's host when a private address served it, else NULL) is set
-- here only: whether the link may be on the LAN is decided once, from the document that
-- staged it, never changed by a later feed carrying the same entry.
INSERT OR IGNORE INTO news_summary
       (url, title, published, summary, author, guid, first_seen_at, lease_owner, lease_until,
        lan_host)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
       json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'),
       :now, :owner, :lease_until, :lan_host
  FROM json_each(:entries)
 ORDER BY key
RETURNING id, url, title;

-- name: stage_link_batch
-- Every entry of the poll (:ids) linked to the feed; a link already made (in either
-- file) is not made again. RETURNING names the links this poll made.
INSERT OR IGNORE INTO feed_entries (feed_id, summary_id, first_seen_at)
SELECT :feed_id, j.value, :now
  FROM json_each(:ids) AS j
 WHERE NOT EXISTS (SELECT 1 FROM feed_entries_all
                    WHERE feed_id = :feed_id AND summary_id = j.value)
RETURNING summary_id;

-- name: stage_lookup
-- One entry's row, in either file (PostgreSQL: an entry another poller committed while
-- this poll's batch ran).
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
