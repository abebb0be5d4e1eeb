-- Version 11 (as sql/migrations/0011_feed_entries_feed.sql): a feed's links found by the
-- feed. PostgreSQL has had that index from the start (feed_entries' primary key is
-- (feed_id, summary_id)): nothing changes here; the version moves so that one version
-- means the same schema on both engines.
SELECT 1;
