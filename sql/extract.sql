-- Stage 3: the extraction queue. Rows of news_summary are claimed with a lease in one
-- short transaction, fetched and extracted outside any transaction, and the outcome is
-- written in another.

-- name: extract_held_elsewhere
-- Queue rows another process holds (its lease runs, and was set by a clock like ours:
-- the claim would take the others), for a pass that found none of them to take.
SELECT count(*) AS n
  FROM news_summary
 WHERE state IN ('new', 'failed')
   AND lease_owner IS NOT NULL AND lease_owner <> :owner
   AND lease_until >= :now AND lease_until <= :lease_horizon;

-- name: extract_claim
-- Up to :limit rows after :after_id (a run walks the queue once, in id order; with
-- :own_only = 1, only the rows leased to this process already: `run --feed`): new rows,
-- and failed rows whose retry time has come; free, leased to this process already (rows
-- its own staging insert created), or with an expired lease (a crashed process). A retry
-- time or a lease further ahead than any can be set (:retry_horizon, :lease_horizon; a
-- NULL horizon bounds nothing) was set by a clock ahead of this one: it has come.
UPDATE news_summary
   SET lease_owner = :owner,
       lease_until = :lease_until
 WHERE id IN (
        SELECT id
          FROM news_summary
         WHERE state IN ('new', 'failed')
           AND id > :after_id
           AND (state = 'new' OR next_attempt_at <= :due_before
                OR next_attempt_at > CAST(:retry_horizon AS text))
           AND (lease_owner = :owner OR lease_until IS NULL OR lease_until < :now
                OR lease_until > :lease_horizon)
           AND (CAST(:own_only AS integer) = 0 OR lease_owner = :owner)
         ORDER BY id
         LIMIT :limit)
RETURNING id, url, title, published, author, attempts, lan_host;

-- name: extract_feeds_of
-- The feeds that carry a claimed row: do they allow the identity heuristics (none of
-- them is 'url+title')?
SELECT f.identity FROM feed_entries_all AS fe JOIN feeds AS f ON f.id = fe.feed_id
 WHERE fe.summary_id = :id;

-- name: extract_title_of
-- The title an article takes: its latest revision's, of those that have one (an entry
-- without a title is staged as '': feedsync/titles.py). With url and summary of the
-- row itself, to name an article none of whose versions has a title.
-- :id, not s.id, in the subquery: SQLite pushes a term with a parameter into each arm
-- of news_summary_all (a UNION ALL over both files) and seeks each side's primary key
-- and revision_of index; with the outer row's column it read every entry of both
-- files, the card's archive included, for every article saved (at 12,000 entries on
-- the card, 6 ms an article; 0.02 ms now).
SELECT s.url, s.summary,
       (SELECT r.title FROM news_summary_all AS r
         WHERE (r.id = :id OR r.revision_of = :id) AND r.title <> ''
         ORDER BY r.id DESC LIMIT 1) AS title
  FROM news_summary AS s
 WHERE s.id = :id;

-- name: extract_feed_title_of
-- ... and the name of the first feed that carried it: the owner's title for it, else
-- its own (the article keeps the name its feed had when it was fetched).
SELECT coalesce(f.user_title, f.title) AS title
  FROM feed_entries_all AS fe JOIN feeds AS f ON f.id = fe.feed_id
 WHERE fe.summary_id = :id
 ORDER BY fe.first_seen_at, fe.feed_id
 LIMIT 1;

-- name: extract_save
-- The article, once (:title and :feed_title from the two queries above). ON CONFLICT,
-- not INSERT OR IGNORE: both engines read it, and only a second copy is ignored.
INSERT INTO news
       (summary_id, url, title, published, feed_title, author, language, body, fetched_at,
        canonical_url, fingerprint)
SELECT s.id, s.url, :title, :published, :feed_title, :author, :language, :body,
       :fetched_at, :canonical_url, :fingerprint
  FROM news_summary AS s
 WHERE s.id = :id
ON CONFLICT DO NOTHING;

-- name: extract_done
UPDATE news_summary
   SET state = 'done',
       attempts = attempts + 1,
       next_attempt_at = NULL,
       last_error = NULL,
       lease_owner = NULL,
       lease_until = NULL
 WHERE id = :id;

-- name: extract_release
-- A process that stops before extracting the rows it holds gives them back at once, so a
-- restart need not wait for the leases to expire. Run at the end of every pass: only the
-- queue's rows hold leases, read through its index (sql/poll.sql, others_at_work), not
-- a scan of every entry the database holds.
UPDATE news_summary SET lease_owner = NULL, lease_until = NULL
 WHERE state IN ('new', 'failed', 'gone') AND lease_owner = :owner;

-- name: extract_failed
-- Only while the lease is still ours: a process that lost it records nothing.
UPDATE news_summary
   SET state = :state,
       attempts = :attempts,
       next_attempt_at = :next_attempt_at,
       last_error = :error,
       lease_owner = NULL,
       lease_until = NULL
 WHERE id = :id AND lease_owner = :owner;

-- name: extract_release_one
-- A claimed row left for later without an attempt (its host asked us to wait).
UPDATE news_summary SET lease_owner = NULL, lease_until = NULL
 WHERE id = :id AND lease_owner = :owner;
