-- Version 7: the live database in RAM holds what is hot, the card holds everything
-- (feedsync/storage/card.py, sql/card.sql). Both files have this schema; on the card,
-- `news` is then turned into a view over one table per month (card.sql). The tables and
-- columns a user sees do not change; the indexes do, so that the card is written in
-- appends, not at random places:

-- 1. The trigram index (2.5x the article text, kept in step on every insert) goes.
--    Search uses one FTS5 table per month of articles on the card, filled in batches.
DROP TRIGGER news_fts_insert;
DROP TRIGGER news_fts_delete;
DROP TRIGGER news_fts_update;
DROP TABLE news_fts;

-- 2. news_summary: the index on guid (an insert at a random place per entry) gives way
--    to one on (first_seen_at, guid), appended to in time order; it serves what looks
--    back only a week or the identity window (a GUID seen again, the publishing rate,
--    the rows the live database keeps). The queue's index also holds the given-up rows,
--    which `feedsync status` counts.
DROP INDEX news_summary_guid;
CREATE INDEX news_summary_recent ON news_summary (first_seen_at, guid);
DROP INDEX news_summary_queue;
CREATE INDEX news_summary_queue ON news_summary (state, id)
    WHERE state IN ('new', 'failed', 'gone');

-- 3. feed_entries keyed by (summary_id, feed_id): a new entry's links go at the end.
--    The columns stay in their order.
CREATE TABLE feed_entries_v7 (
    feed_id       INTEGER NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    summary_id    INTEGER NOT NULL REFERENCES news_summary (id) ON DELETE CASCADE,
    first_seen_at TEXT    NOT NULL,
    PRIMARY KEY (summary_id, feed_id)
) WITHOUT ROWID;
INSERT INTO feed_entries_v7 (feed_id, summary_id, first_seen_at)
SELECT feed_id, summary_id, first_seen_at FROM feed_entries;
DROP TABLE feed_entries;
ALTER TABLE feed_entries_v7 RENAME TO feed_entries;
CREATE TRIGGER meta_feed_entries_insert AFTER INSERT ON feed_entries BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_feed_entries_delete AFTER DELETE ON feed_entries BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;

-- 4. news: the canonical URL is indexed only where it is not the article's own URL
--    (the rare case worth an index; the common one is found through the URL); the
--    fetch time with the fingerprint (the identity window's scan reads the index
--    alone); and the listing order, newest first.
DROP INDEX news_canonical_url;
CREATE INDEX news_canonical_url ON news (canonical_url)
    WHERE canonical_url IS NOT NULL AND canonical_url <> url;
DROP INDEX news_fetched_at;
CREATE INDEX news_fetched_at ON news (fetched_at, fingerprint);
DROP INDEX news_published;
CREATE INDEX news_when ON news (coalesce(published, fetched_at));
