-- Stage 3: the extraction queue (PostgreSQL: only the queries written differently from
-- sql/extract.sql; the others are taken from there). Rows of news_summary are claimed
-- with a lease in one short transaction, fetched and extracted outside any
-- transaction, and the outcome is written in another.

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
-- its own staging insert created), or with an expired lease (a crashed process).
-- SKIP LOCKED: rows another poller is claiming this instant are left to it, not waited for.
-- NO KEY UPDATE, not UPDATE: a poller linking its feed to a row (feed_entries' foreign
-- key takes KEY SHARE on it) must not make the row look taken; FOR UPDATE would skip
-- it, and a row this process staged for itself would wait for its lease to end.
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
         LIMIT :limit
           FOR NO KEY UPDATE SKIP LOCKED)
RETURNING id, url, title, published, author, attempts, lan_host;

-- name: extract_release
-- As in sql/extract.sql, through PostgreSQL's queue index (its condition is
-- state IN ('new', 'failed'): a 'gone' row's lease holds nothing back).
UPDATE news_summary SET lease_owner = NULL, lease_until = NULL
 WHERE state IN ('new', 'failed') AND lease_owner = :owner;
