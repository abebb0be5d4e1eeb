-- (PostgreSQL: only the queries written differently from sql/poll.sql; the others are
-- taken from there by name, see feedsync/storage/sqlfiles.py.)
-- Stage 1: the bookkeeping of a feed poll that stages nothing.
-- (A poll that parsed entries is written by sql/stage.sql, in the same transaction as
-- its entries.)

-- name: poll_claim
-- The feeds about to be polled (:ids, a JSON array), claimed as in sql/poll.sql.
-- SKIP LOCKED: a poller claiming the same feed this instant wins, this one skips it
-- (NO KEY UPDATE: a feed being linked to entries, KEY SHARE, is not being claimed).
UPDATE feeds
   SET lease_owner = :owner, lease_until = :lease_until
 WHERE id IN (SELECT id FROM feeds
               WHERE id IN (SELECT CAST(value AS bigint)
                              FROM json_array_elements_text(CAST(:ids AS json)))
                 AND (lease_owner IS NULL OR lease_until < :now OR lease_until > :lease_horizon
                      OR lease_owner = :owner)
                 AND (CAST(:due_before AS text) IS NULL OR next_poll_at IS NULL
                      OR next_poll_at <= :due_before OR last_poll_at > :written_after)
                 FOR NO KEY UPDATE SKIP LOCKED)
RETURNING id;

-- name: others_at_work
-- As in sql/poll.sql, and one more sign, the earliest: another feedsync process is
-- connected to this database (each one names its sessions, application_name
-- 'feedsync <host>:<pid>:<token>', feedsync/storage/postgresql.py). Pollers started
-- together all connect before any of them claims, so none takes a hold on a host that
-- the others would then wait for (feedsync/politeness/holds.py).
SELECT EXISTS (SELECT 1 FROM feeds WHERE lease_owner <> :owner AND lease_until > :now)
    OR EXISTS (SELECT 1 FROM pg_stat_activity
                WHERE datname = current_database()
                  AND application_name LIKE 'feedsync %'
                  AND application_name <> current_setting('application_name'))
    OR EXISTS (SELECT 1 FROM news_summary
                WHERE state IN ('new', 'failed')
                  AND lease_owner <> :owner AND lease_until > :now)
    OR EXISTS (SELECT 1 FROM host_slots
                WHERE owner <> :owner
                  AND lease_until > extract(epoch FROM clock_timestamp())) AS others;

-- name: pass_has_work
-- As in sql/poll.sql, through PostgreSQL's queue index (its condition is
-- state IN ('new', 'failed')).
SELECT EXISTS (SELECT 1 FROM feeds
                WHERE enabled = 1
                  AND (CAST(:feeds_due_before AS text) IS NULL OR next_poll_at IS NULL
                       OR next_poll_at <= :feeds_due_before
                       OR last_poll_at > CAST(:written_after AS text)))
    OR (CAST(:articles_due_before AS text) IS NOT NULL
        AND EXISTS (SELECT 1 FROM news_summary
                     WHERE state IN ('new', 'failed')
                       AND (state = 'new' OR next_attempt_at <= :articles_due_before
                            OR next_attempt_at > CAST(:retry_horizon AS text))
                       AND (lease_until IS NULL OR lease_until < :now
                            OR lease_until > CAST(:lease_horizon AS text)))) AS work;

-- name: poll_move
-- A permanent move: the feed takes its new URL, and remembers the one it was added under
-- (the config file still names that). Not when another feed already has the URL.
UPDATE feeds
   SET url = :url,
       moved_from = coalesce(moved_from, url),
       redirect_to = NULL,
       redirect_seen = 0
 WHERE id = :feed_id
   AND NOT EXISTS (SELECT 1 FROM feeds AS other WHERE other.url = :url AND other.id <> :feed_id);

-- name: host_wait
INSERT INTO hosts (host, not_before, backoff_count, reason)
VALUES (:host, :not_before, :backoff_count, :reason)
ON CONFLICT (host) DO UPDATE
   SET not_before = GREATEST(hosts.not_before, excluded.not_before),
       backoff_count = excluded.backoff_count,
       reason = excluded.reason;
