-- Stage 1: the bookkeeping of a feed poll that stages nothing.
-- (A poll that parsed entries is written by sql/stage.sql, in the same transaction as
-- its entries.)

-- name: poll_claim
-- The feeds about to be polled (:ids, a JSON array: a pass claims them in batches, host
-- by host, ahead of their turn) are claimed, so another process (the daemon, a manual
-- run, cron) skips them meanwhile; a claim whose holder died expires at :lease_until.
-- Every outcome of a poll (sql/stage.sql, below) gives the claim back. With :due_before (a
-- pass polling due feeds only), a feed must still be due (as feeds_to_poll says it):
-- another poller may have polled it, and released it, since this pass listed it. A
-- claim further ahead than any claim lasts (:lease_horizon: this one's end and the
-- clocks' slack) was taken by a clock ahead of this one: it is over.
UPDATE feeds
   SET lease_owner = :owner, lease_until = :lease_until
 WHERE id IN (SELECT value FROM json_each(:ids))
   AND (lease_owner IS NULL OR lease_until < :now OR lease_until > :lease_horizon
        OR lease_owner = :owner)
   AND (:due_before IS NULL OR next_poll_at IS NULL OR next_poll_at <= :due_before
        OR last_poll_at > :written_after)
RETURNING id;

-- name: others_at_work
-- Is another process at work on this database right now: polling a feed, extracting an
-- article, or holding a host's slot (each by a live lease)? With company, a pass claims
-- fewer feeds ahead of their turn (feedsync/claims.py), so that the pollers share them.
-- Runs in every claim: the entries are read through the queue index, whose condition
-- SQLite uses only when the query names it whole (state IN ('new', 'failed', 'gone'),
-- sql/migrations/0007_ram_and_card.sql); a scan of news_summary instead grew with the
-- days the live database holds.
SELECT EXISTS (SELECT 1 FROM feeds WHERE lease_owner <> :owner AND lease_until > :now)
    OR EXISTS (SELECT 1 FROM news_summary
                WHERE state IN ('new', 'failed', 'gone') AND state <> 'gone'
                  AND lease_owner <> :owner AND lease_until > :now)
    OR EXISTS (SELECT 1 FROM host_slots
                WHERE owner <> :owner
                  AND lease_until > (julianday('now') - 2440587.5) * 86400.0) AS others;

-- name: pass_has_work
-- Has a pass anything to do: an enabled feed to poll (with :feeds_due_before, only one
-- whose next poll time has come, as feeds_to_poll lists them) or, with
-- :articles_due_before (a pass that extracts), a queue row extract_claim would take now
-- (:lease_horizon, :retry_horizon as there; NULL: no bound).
-- Cron's `run --due` every few minutes mostly finds nothing; it then starts no event loop,
-- HTTP client or worker (feedsync/pipeline.py: has_work). The queue is read through its
-- index, as in others_at_work.
SELECT EXISTS (SELECT 1 FROM feeds
                WHERE enabled = 1
                  AND (CAST(:feeds_due_before AS text) IS NULL OR next_poll_at IS NULL
                       OR next_poll_at <= :feeds_due_before OR last_poll_at > :written_after))
    OR (CAST(:articles_due_before AS text) IS NOT NULL
        AND EXISTS (SELECT 1 FROM news_summary
                     WHERE state IN ('new', 'failed', 'gone') AND state <> 'gone'
                       AND (state = 'new' OR next_attempt_at <= :articles_due_before
                            OR next_attempt_at > CAST(:retry_horizon AS text))
                       AND (lease_until IS NULL OR lease_until < :now
                            OR lease_until > CAST(:lease_horizon AS text)))) AS work;

-- name: poll_not_modified
-- 304: the validators still hold; a fresh value in the 304 replaces the stored one.
UPDATE feeds
   SET etag = coalesce(:etag, etag),
       last_modified = coalesce(:last_modified, last_modified),
       last_poll_at = :now,
       last_success_at = :now,
       next_poll_at = :next_poll_at,
       error_count = 0,
       last_error = NULL,
       lease_owner = NULL,
       lease_until = NULL
 WHERE id = :feed_id;

-- name: poll_failed
UPDATE feeds
   SET last_poll_at = :now,
       next_poll_at = :next_poll_at,
       error_count = error_count + 1,
       last_error = :error,
       lease_owner = NULL,
       lease_until = NULL
 WHERE id = :feed_id;

-- name: poll_disable
-- 410 Gone: the publisher removed the feed. Disabled with the reason (feedsync feeds shows
-- it), never deleted: its articles stay.
UPDATE feeds
   SET enabled = 0,
       disabled_reason = :reason,
       last_poll_at = :now,
       last_error = :reason,
       lease_owner = NULL,
       lease_until = NULL
 WHERE id = :feed_id;

-- name: poll_redirect_pending
UPDATE feeds SET redirect_to = :redirect_to, redirect_seen = :seen WHERE id = :feed_id;

-- name: poll_move
-- A permanent move: the feed takes its new URL, and remembers the one it was added under
-- (the config file still names that). OR IGNORE: another feed may already have the URL.
UPDATE OR IGNORE feeds
   SET url = :url,
       moved_from = coalesce(moved_from, url),
       redirect_to = NULL,
       redirect_seen = 0
 WHERE id = :feed_id;

-- name: hosts_waiting
-- Hosts that asked us to wait and whose time has not come, or whose backoff is running.
SELECT host, not_before, backoff_count FROM hosts
 WHERE not_before > :now OR backoff_count > 0;

-- name: host_wait
INSERT INTO hosts (host, not_before, backoff_count, reason)
VALUES (:host, :not_before, :backoff_count, :reason)
ON CONFLICT (host) DO UPDATE
   SET not_before = max(not_before, excluded.not_before),
       backoff_count = excluded.backoff_count,
       reason = excluded.reason;

-- name: poll_unclaim
-- A claimed feed left unpolled (its host said 429/503 while the feed waited for its turn).
UPDATE feeds SET lease_owner = NULL, lease_until = NULL
 WHERE id = :feed_id AND lease_owner = :owner;

-- name: poll_release
-- A process that stops gives back the feeds it was polling.
UPDATE feeds SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = :owner;

-- name: host_clear
DELETE FROM hosts WHERE host = :host;
