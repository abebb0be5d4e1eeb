-- Version 10 (as sql/postgresql/migrations/0010_news_when.sql): the listing order
-- indexed on PostgreSQL. SQLite has had that index since version 7 (news_when, on the
-- live database and on each month's table of the card): nothing changes here; the
-- version moves so that one version means the same schema on both engines.
SELECT 1;
