-- Version 9 (as sql/migrations/0009_feed_user_title.sql, which says why): feeds.user_title,
-- the title the owner gave a feed, apart from the feed's own (feeds.title).
ALTER TABLE feeds ADD COLUMN user_title TEXT;
