-- Version 12 (with sql/migrations/0012_content_version.sql): a counter of content
-- changes, meta's content_version, as SQLite has had since version 2. feedsync serve
-- tags its pages and feeds with it (Reading.content_key: a 304 instead of a page read
-- again), so it must move whenever an article, a feed's link to one, or what names a
-- feed changes, in the transaction that changed it (a reader that sees the new counter
-- sees the new rows), and must survive a restart (an ETag outlives the server).
--
-- Version 2 left the counter out because triggers bumping one row make every writer
-- wait on it. Here the triggers are deferred to the commit and bump once per
-- transaction (a transaction-local setting says it was done): a writer holds the row
-- only from its commit's start to its end, not for its whole transaction. Poll
-- bookkeeping (times, validators, errors, leases) and entries' states count for nothing.
INSERT INTO meta (key, value) VALUES ('content_version', '0') ON CONFLICT (key) DO NOTHING;

CREATE FUNCTION feedsync_content_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('feedsync.content_changed', true) IS DISTINCT FROM 'y' THEN
        PERFORM set_config('feedsync.content_changed', 'y', true);
        UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'content_version';
    END IF;
    RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER news_content_changed AFTER INSERT OR UPDATE OR DELETE ON news
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION feedsync_content_changed();
CREATE CONSTRAINT TRIGGER feed_entries_content_changed
    AFTER INSERT OR UPDATE OR DELETE ON feed_entries
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION feedsync_content_changed();
CREATE CONSTRAINT TRIGGER feeds_content_added AFTER INSERT OR DELETE ON feeds
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION feedsync_content_changed();
CREATE CONSTRAINT TRIGGER feeds_content_changed AFTER UPDATE ON feeds
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.url IS DISTINCT FROM NEW.url OR OLD.title IS DISTINCT FROM NEW.title
          OR OLD.user_title IS DISTINCT FROM NEW.user_title
          OR OLD.category IS DISTINCT FROM NEW.category
          OR OLD.enabled IS DISTINCT FROM NEW.enabled)
    EXECUTE FUNCTION feedsync_content_changed();
