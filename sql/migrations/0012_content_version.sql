-- Version 12: the owner's title and folder of a feed count as content. feedsync serve
-- tags its pages and feeds with Reading.content_key (meta's content_version among
-- others), and a feed's name and folder show on them: a change of user_title or
-- category (`feedsync add --title`, the config's [[feeds]] title or folder) left the
-- counter as it was, so a reader kept the old names, and a save found nothing to write
-- until something else changed. PostgreSQL gains its counter in the same version
-- (sql/postgresql/migrations/0012_content_version.sql). Poll bookkeeping still counts
-- for nothing (0002_snapshot_meta.sql says why).
DROP TRIGGER meta_feeds_update;
CREATE TRIGGER meta_feeds_update AFTER UPDATE ON feeds
WHEN old.url IS NOT new.url OR old.title IS NOT new.title OR old.origin IS NOT new.origin
  OR old.enabled IS NOT new.enabled OR old.disabled_reason IS NOT new.disabled_reason
  OR old.latest_published IS NOT new.latest_published
  OR old.user_title IS NOT new.user_title OR old.category IS NOT new.category BEGIN
    UPDATE meta SET value = value + 1 WHERE key = 'content_version';
END;
