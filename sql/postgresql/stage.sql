-- (PostgreSQL: only the queries written differently from sql/stage.sql; the others are
-- taken from there by name, see feedsync/storage/sqlfiles.py.)
-- Stage 2: staging the candidates of one feed poll. THIS is where entries are
-- deduplicated: UNIQUE(url, title) + INSERT ... ON CONFLICT DO NOTHING (stage_batch). All of
-- one poll runs in ONE short write transaction (feedsync/storage/sql_polling.py:
-- record_poll), so latest_published never moves without the rows it covers.

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

-- name: stage_batch
-- Every candidate of one poll in ONE statement (one round trip to the server, where
-- an insert, a lookup, a date filled in and a link would cost one each per entry):
-- :entries is a JSON array of {ord, url, title, published, summary, author, guid}, one
-- per (url, title) (feedsync/storage/sql_polling.py merges repeats first, as the
-- per-entry statements would have: the first entry's fields, the first date given).
-- The rows are inserted in feed order (ids follow it, as one insert per entry gave them).
-- :lan_host (the document's host when a private address served it) is set on the rows
-- created only, as on SQLite (sql/stage.sql, stage_new): trust is decided once.
-- `created` names exactly the rows this insert created; `found` the rows that were there
-- before this statement began (its snapshot): their missing date is filled in. Both are
-- linked to the feed. An entry neither created nor found was inserted by another
-- transaction that committed while this one ran: the caller looks it up again with the
-- per-entry statements (a later statement sees that commit).
WITH input AS (
    SELECT *
      FROM jsonb_to_recordset(CAST(:entries AS jsonb))
           AS i(ord integer, url text, title text, published text, summary text,
                author text, guid text)
),
created AS (
    INSERT INTO news_summary
           (url, title, published, summary, author, guid, first_seen_at, lease_owner,
            lease_until, lan_host)
    SELECT url, title, published, summary, author, guid, :now, :owner, :lease_until,
           CAST(:lan_host AS text)
      FROM input
     ORDER BY ord
    ON CONFLICT (url, title) DO NOTHING
    RETURNING id, url, title
),
found AS (
    SELECT s.id, i.url, i.title, i.published
      FROM input AS i
      JOIN news_summary AS s ON s.url = i.url AND s.title = i.title
     WHERE NOT EXISTS (SELECT 1 FROM created AS c WHERE c.url = i.url AND c.title = i.title)
),
dated AS (
    UPDATE news_summary AS s
       SET published = f.published
      FROM found AS f
     WHERE s.id = f.id AND s.published IS NULL AND f.published IS NOT NULL
),
linked AS (
    INSERT INTO feed_entries (feed_id, summary_id, first_seen_at)
    SELECT :feed_id, id, :now FROM created
    UNION ALL
    SELECT :feed_id, id, :now FROM found
    ON CONFLICT DO NOTHING
    RETURNING summary_id
)
SELECT i.ord, c.id AS created_id, f.id AS found_id,
       EXISTS (SELECT 1 FROM linked AS l WHERE l.summary_id = coalesce(c.id, f.id)) AS linked
  FROM input AS i
  LEFT JOIN created AS c ON c.url = i.url AND c.title = i.title
  LEFT JOIN found AS f ON f.url = i.url AND f.title = i.title
 ORDER BY i.ord;

-- name: stage_lock_entries
-- Before a transaction stages anything: a lock per entry it brings ((url, title) hashed),
-- taken in one order, the hashes' (:keys, a JSON array of [url, title]). Two pollers
-- staging the same stories (a story is in several feeds; a transaction holds several
-- feeds' polls, feedsync/group_commit.py) each wait on the other's new rows; in
-- opposite orders that was a deadlock, which the server breaks after deadlock_timeout
-- (1 s) by aborting one of them, to be run again. Taken in one order, one of them
-- waits for the other's commit instead. The two-key form, its first key 'feed' as a
-- number: apart from other programs' locks and from schema_lock's (sql/postgresql/admin.sql).
SELECT count(pg_advisory_xact_lock(1718920548, k)) AS locked
  FROM (SELECT DISTINCT hashtext((e ->> 0) || E'\n' || (e ->> 1)) AS k
          FROM jsonb_array_elements(CAST(:keys AS jsonb)) AS e
         ORDER BY k) AS sorted;
