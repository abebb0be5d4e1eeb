-- (PostgreSQL. On SQLite, retention drops a month's table on the card: sql/card.sql.)
-- Retention (the daemon's daily job): extracted articles older than [retention] news_days
-- are pruned; their news_summary rows stay as tombstones for tombstone_days, so a pruned
-- article is never fetched again while feeds may still carry it. Deleted in batches to
-- keep each write transaction short. The space comes back in the next snapshot, which is
-- written with VACUUM INTO: the card never sees a VACUUM in place.

-- name: prune_news
DELETE FROM news
 WHERE id IN (SELECT id FROM news
               WHERE coalesce(published, fetched_at) < :before
               LIMIT :limit);

-- name: prune_tombstones
-- Only dated entries: an entry older than the tombstone window is outside any feed's
-- lookback, so it cannot be staged again. An undated one is offered on every poll, and
-- its tombstone is what keeps it from being fetched again: those are kept.
DELETE FROM news_summary
 WHERE id IN (SELECT s.id FROM news_summary AS s
               WHERE s.published IS NOT NULL
                 AND s.published < :before
                 AND s.first_seen_at < :before
                 AND s.state IN ('done', 'gone')
                 AND NOT EXISTS (SELECT 1 FROM news AS n WHERE n.summary_id = s.id)
               LIMIT :limit);
