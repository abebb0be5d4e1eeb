-- Version 9: the title the owner gave a feed ([[feeds]] title, `feedsync add --title`, an
-- OPML outline's title), kept apart from the feed's own (feeds.title, which each poll
-- refreshes): the owner's wins wherever a feed is named (feeds, news, export, OPML), the
-- feed's own shows when the owner gave none. An OPML import wrote its title into
-- feeds.title until now, where the first poll replaced it: those are lost already.
ALTER TABLE feeds ADD COLUMN user_title TEXT;
