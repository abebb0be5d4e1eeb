-- Version 2: what snapshots to the SD card need to know (feedsync/storage/snapshot.py).

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- lineage: a random id given to a database when it is created. A snapshot and a live
--   database restored from it share it, so the snapshot of one database is never
--   overwritten by another.
-- content_version: bumped by the triggers below on every change worth keeping.
-- snapshot_seq / snapshot_content_version / snapshot_at: in the live database, the last
--   snapshot written from it (or restored into it); in a snapshot file, its own.
INSERT INTO meta (key, value) VALUES
    ('lineage', lower(hex(randomblob(16)))),
    ('content_version', '0'),
    ('snapshot_seq', '0'),
    ('snapshot_content_version', '-1'),
    ('snapshot_at', '');

-- "Worth keeping" is content: entries, articles, links, the feed list, latest_published,
-- extraction outcomes. Poll bookkeeping (last_poll_at, next_poll_at, validators, error
-- streaks) and leases are not: losing them in a power cut costs at most one early poll or
-- one full GET, and counting them would rewrite the whole database to the card after every
-- pass of 304s.
CREATE TRIGGER meta_news_summary_insert AFTER INSERT ON news_summary BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_news_summary_update AFTER UPDATE ON news_summary
WHEN old.state IS NOT new.state OR old.attempts IS NOT new.attempts
  OR old.published IS NOT new.published OR old.last_error IS NOT new.last_error BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_news_summary_delete AFTER DELETE ON news_summary BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_news_insert AFTER INSERT ON news BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_news_update AFTER UPDATE ON news BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_news_delete AFTER DELETE ON news BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_feed_entries_insert AFTER INSERT ON feed_entries BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_feed_entries_delete AFTER DELETE ON feed_entries BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_feeds_insert AFTER INSERT ON feeds BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_feeds_update AFTER UPDATE ON feeds
WHEN old.url IS NOT new.url OR old.title IS NOT new.title OR old.origin IS NOT new.origin
  OR old.enabled IS NOT new.enabled OR old.disabled_reason IS NOT new.disabled_reason
  OR old.latest_published IS NOT new.latest_published BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
CREATE TRIGGER meta_feeds_delete AFTER DELETE ON feeds BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
