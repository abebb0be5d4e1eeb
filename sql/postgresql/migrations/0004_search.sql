-- Version 4: full-text search over titles and bodies, and feed categories.
--
-- SQLite uses an FTS5 trigram table; here pg_trgm indexes the same text, so any
-- 3-character substring is found through the index, in Japanese, Chinese and other
-- scripts written without spaces as in English. ILIKE is the match itself (the index only
-- narrows the rows), so shorter queries, of one or two characters, match too.
-- pg_trgm ships with PostgreSQL (postgresql-contrib; Debian's postgresql-NN package) and
-- is a trusted extension: the owner of the database may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX news_text_trgm ON news USING gin ((title || ' ' || body) gin_trgm_ops);

ALTER TABLE feeds ADD COLUMN category TEXT;
