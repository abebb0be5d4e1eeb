-- Version 4: full-text search over titles and bodies, and feed categories (OPML folders).

-- The trigram tokenizer matches any 3-character substring, so it works for Japanese,
-- Chinese and other scripts written without spaces as for English; queries shorter than
-- three characters fall back to a LIKE scan (feedsync/storage/sqlite.py: search).
-- External content (content='news'): the text is not stored twice; triggers keep the
-- index in step with news.
CREATE VIRTUAL TABLE news_fts USING fts5(
    title, body,
    content = 'news', content_rowid = 'id',
    tokenize = 'trigram'
);

INSERT INTO news_fts (rowid, title, body) SELECT id, title, body FROM news;

CREATE TRIGGER news_fts_insert AFTER INSERT ON news BEGIN
    INSERT INTO news_fts (rowid, title, body) VALUES (new.id, new.title, new.body);
END;
CREATE TRIGGER news_fts_delete AFTER DELETE ON news BEGIN
    INSERT INTO news_fts (news_fts, rowid, title, body)
    VALUES ('delete', old.id, old.title, old.body);
END;
CREATE TRIGGER news_fts_update AFTER UPDATE OF title, body ON news BEGIN
    INSERT INTO news_fts (news_fts, rowid, title, body)
    VALUES ('delete', old.id, old.title, old.body);
    INSERT INTO news_fts (rowid, title, body) VALUES (new.id, new.title, new.body);
END;

-- The folder a feed came from in an OPML file ("News/World"), kept for export-opml.
ALTER TABLE feeds ADD COLUMN category TEXT;
