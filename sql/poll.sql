-- Stage 1: the bookkeeping of a feed poll that stages nothing.
-- (A poll that parsed entries is written by sql/stage.sql, in the same transaction as
-- its entries.)

-- name: poll_not_modified
-- 304: the validators still hold; a fresh value in the 304 replaces the stored one.
UPDATE feeds
   SET etag = coalesce(:etag, etag),
       last_modified = coalesce(:last_modified, last_modified),
       last_poll_at = :now,
       last_success_at = :now,
       next_poll_at = :next_poll_at,
       error_count = 0,
       last_error = NULL
 WHERE id = :feed_id;

-- name: poll_failed
UPDATE feeds
   SET last_poll_at = :now,
       next_poll_at = :next_poll_at,
       error_count = error_count + 1,
       last_error = :error
 WHERE id = :feed_id;
