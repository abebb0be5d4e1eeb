-- Version 10: the listing order indexed, as SQLite has it since version 7 (news_when):
-- feedsync serve reads a page of the newest articles, of all feeds or one, in this
-- order from any article on (keyset paging), and without the index every page sorted
-- the whole table.
CREATE INDEX news_when ON news ((coalesce(published, fetched_at)), id);
