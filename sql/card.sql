-- The RAM disk and the card (SQLite; feedsync/storage/card.py and tiers.py).
--
-- Two files with the same schema (schema.sql + migrations/). The live database, on the
-- RAM disk, holds what is hot: the feeds, the extraction queue, the entries of the last
-- days, what changed since the last save. The card database, on the SD card, holds
-- everything as of the last save; it is what `sqlite3` and datasette open, and what a
-- power cut leaves. One difference: on the card, `news` is a view over one table per
-- month of articles (news_YYYY_MM, each with its search index news_fts_YYYY_MM), so
-- that retention drops a month's table (almost nothing written) instead of deleting
-- rows (every page they were on rewritten), and the search index merges within a month.
--
-- Queries named card_* run on a connection to the card, the live database attached
-- read-only as `live`: everything that writes the card is one of them. Queries named
-- live_* run on the live connection, the card attached read-only as `card`. A template
-- says {month} (YYYY_MM, checked by the caller) or {arms} where the caller puts names.

-- ---------------------------------------------------------------- the card's layout

-- name: card_month_create
-- A month of articles: the columns of `news` (a test holds the two lists equal), the
-- indexes the reads need, all of them appended to in time order, and its search index.
CREATE TABLE news_{month} (
    id            INTEGER PRIMARY KEY,
    summary_id    INTEGER NOT NULL UNIQUE REFERENCES news_summary (id),
    url           TEXT    NOT NULL,
    title         TEXT    NOT NULL,
    published     TEXT,
    feed_title    TEXT,
    author        TEXT,
    language      TEXT,
    body          TEXT    NOT NULL,
    fetched_at    TEXT    NOT NULL,
    canonical_url TEXT,
    fingerprint   INTEGER
);
CREATE INDEX news_{month}_fetched_at ON news_{month} (fetched_at, fingerprint);
CREATE INDEX news_{month}_canonical_url ON news_{month} (canonical_url)
    WHERE canonical_url IS NOT NULL AND canonical_url <> url;
CREATE INDEX news_{month}_when ON news_{month} (coalesce(published, fetched_at));
-- contentless (the text is in news_{month}); words, case and accents folded; CJK text
-- is given to it as two-character pieces (feedsync/search.py). detail=column: which
-- column a word is in (title hits rank first), no positions (a quarter of the size).
-- No automatic merging: a month's segments (one per indexing batch) stay apart, so the
-- card never sees a merge rewrite what it already holds.
CREATE VIRTUAL TABLE news_fts_{month} USING fts5(
    title, body, content = '', tokenize = 'unicode61 remove_diacritics 2', detail = column
);
INSERT INTO news_fts_{month} (news_fts_{month}, rank) VALUES ('automerge', 0);
INSERT INTO news_fts_{month} (news_fts_{month}, rank) VALUES ('crisismerge', 200);

-- name: card_months
SELECT substr(name, 6) AS month FROM sqlite_master
 WHERE type = 'table' AND name GLOB 'news_[0-9][0-9][0-9][0-9]_[0-9][0-9]'
 ORDER BY name;

-- name: card_news_view
-- `news` on the card: every month's articles, for reading (feedsync and its users).
CREATE VIEW news AS {arms};

-- name: card_drop_news_view
DROP VIEW IF EXISTS news;

-- name: card_is_card
-- A card database: `news` is the view (a live database, or a snapshot written by
-- feedsync before version 7, has the table).
SELECT 1 FROM sqlite_master WHERE name = 'news' AND type = 'view';

-- name: card_move_table_rows
-- Turning a database with a `news` table into a card: its articles, a month of fetching
-- at a time (:start 'YYYY-MM', :end the month after), through the fetch time's index.
INSERT INTO news_{month} SELECT * FROM news WHERE fetched_at >= :start AND fetched_at < :end;

-- name: card_move_table_rest
-- ... and those whose fetch time is no month (a clock gone wrong), to the current one.
INSERT INTO news_{month}
SELECT * FROM news
 WHERE substr(fetched_at, 1, 7) NOT IN (SELECT value FROM json_each(:moved));

-- name: card_table_months
SELECT DISTINCT substr(fetched_at, 1, 7) AS month FROM news ORDER BY 1;

-- name: card_drop_news_table
DROP TABLE news;

-- ---------------------------------------------------------------- saving

-- name: card_save_feeds
-- The feeds that differ from the card's, whole (bookkeeping included: a save happens
-- only when content changed, and then the feeds' rows are a few pages).
INSERT OR REPLACE INTO feeds SELECT * FROM live.feeds EXCEPT SELECT * FROM feeds;

-- name: card_removed_feeds
SELECT id FROM feeds WHERE id NOT IN (SELECT id FROM live.feeds);

-- name: card_save_entries
-- Entries new or changed in the live database (state, attempts, a revision's link...).
INSERT OR REPLACE INTO news_summary
SELECT * FROM live.news_summary
EXCEPT SELECT * FROM news_summary WHERE id IN (SELECT id FROM live.news_summary);

-- name: card_save_links
INSERT OR IGNORE INTO feed_entries SELECT * FROM live.feed_entries;

-- name: card_changed_articles
-- Articles new in the live database, or changed there (a revision's title).
SELECT id FROM (
    SELECT * FROM live.news
    EXCEPT SELECT * FROM news WHERE id IN (SELECT id FROM live.news)
) ORDER BY id;

-- name: card_articles_in
-- Which of these articles a month holds already, with what the index has of them (read
-- again after the save, for the index entries of the new text).
SELECT id, title, body FROM news_{month} WHERE id IN (SELECT value FROM json_each(:ids));

-- name: card_save_articles
INSERT OR REPLACE INTO news_{month}
SELECT * FROM live.news WHERE id IN (SELECT value FROM json_each(:ids));

-- name: card_save_hosts_gone
DELETE FROM hosts WHERE host NOT IN (SELECT host FROM live.hosts);

-- name: card_save_hosts
INSERT OR REPLACE INTO hosts SELECT * FROM live.hosts EXCEPT SELECT * FROM hosts;

-- name: card_live_meta
SELECT key, value FROM live.meta;

-- name: live_card_meta
-- feedsync status: what the card database itself says it holds (its own saves), read
-- beside the live database's notes of them: the two differ when the card was begun anew
-- (a damaged one set aside) or an older copy was put back.
SELECT key, value FROM card.meta
 WHERE key IN ('lineage', 'snapshot_seq', 'snapshot_at', 'snapshot_content_version',
               'saved_from');

-- ---------------------------------------------------------------- the search index

-- name: card_unindexed
-- Articles of a month not in its search index yet, in id order.
SELECT id, title, body FROM news_{month} WHERE id > :after ORDER BY id LIMIT :limit;

-- name: card_unindexed_count
SELECT count(*) AS n, min(fetched_at) AS oldest FROM news_{month} WHERE id > :after;

-- name: card_index_article
INSERT INTO news_fts_{month} (rowid, title, body) VALUES (:id, :title, :body);

-- name: card_unindex_article
-- A contentless index forgets a row when told exactly what it was given for it.
INSERT INTO news_fts_{month} (news_fts_{month}, rowid, title, body)
VALUES ('delete', :id, :title, :body);

-- name: card_search
-- One month's index: the ids that match, best first (bm25, a title hit counting as
-- ten in the body).
SELECT rowid AS id, bm25(news_fts_{month}, 10.0, 1.0) AS score
  FROM news_fts_{month}
 WHERE news_fts_{month} MATCH :query
 ORDER BY score
 LIMIT :limit;

-- name: card_search_count
-- search_count: how many of card_search's ids (the :limit best) are articles that match
-- :text (feedsync_matches: the judge search applies to each) and that the live database
-- does not hold (its copy is counted by the scan), at most :cap. No row and no text
-- leaves SQLite, no snippet is cut: the count of a search page's "N found".
SELECT count(*) AS n FROM (
    SELECT 1
      FROM (SELECT rowid AS id FROM news_fts_{month}
             WHERE news_fts_{month} MATCH :query
             ORDER BY bm25(news_fts_{month}, 10.0, 1.0)
             LIMIT :limit) AS hit
      JOIN news_{month} AS n ON n.id = hit.id
     WHERE hit.id NOT IN (SELECT id FROM main.news)
       AND feedsync_matches(:text, n.title || ' ' || n.body)
     LIMIT :cap
) AS found;

-- ---------------------------------------------------------------- retention

-- name: card_month_span
-- A month's newest article (NULL: the month is empty), one seek in its index `when`.
-- Alone: beside count(*) and min(id), SQLite read the month's whole table, article
-- texts and all: a daily retention read every month's articles but the current
-- month's (93 MB of a 262 MB card at 40,000 articles).
SELECT max(coalesce(published, fetched_at)) AS newest FROM news_{month};

-- name: card_month_settle
-- A month's articles stored under a clock feedsync could not believe take :now as their
-- fetch time (sql/meta.sql: clock_settle_news).
UPDATE news_{month} SET fetched_at = :now WHERE id >= :first_id AND fetched_at < :now
RETURNING id;

-- name: card_month_unlink
-- Entries found to be an article of a month about to go lose the link to it.
UPDATE news_summary SET duplicate_of = NULL
 WHERE duplicate_of IN (SELECT id FROM news_{month});

-- name: card_month_drop
DROP TABLE news_fts_{month};
DROP TABLE news_{month};

-- name: card_tombstones
-- Entries whose article is gone and that are older than [retention] tombstone_days,
-- dated ones only (an undated entry is offered on every poll: its row is what keeps
-- it from being fetched again). A batch at a time.
SELECT s.id FROM news_summary AS s
 WHERE s.published IS NOT NULL
   AND s.published < :before
   AND s.first_seen_at < :before
   AND s.state IN ('done', 'gone')
   AND NOT EXISTS (SELECT 1 FROM news AS n WHERE n.summary_id = s.id)
 LIMIT :limit;

-- name: card_forget_entries
-- Foreign keys are not enforced on SQLite (links may point from the live database into
-- the card's rows): what they would do on delete is done here.
DELETE FROM feed_entries WHERE summary_id IN (SELECT value FROM json_each(:ids));

-- name: card_forget_revisions
UPDATE news_summary SET revision_of = NULL
 WHERE revision_of IN (SELECT value FROM json_each(:ids));

-- name: card_forget_rows
DELETE FROM news_summary WHERE id IN (SELECT value FROM json_each(:ids));

-- ---------------------------------------------------------------- the live side

-- name: live_indexes
-- Indexes the live database has and the card does not (created when it is opened, so a
-- live database restored from the card gets them too). The GUID index serves
-- identity_batch's GUID lookup (sql/identity.sql), run for every GUID of a poll's new
-- entries: without it, each one read every
-- entry of the identity window (news_summary_recent is ordered by time), a cost that
-- grew with the window and made a first poll of many feeds quadratic (0.5 ms a row at
-- 3,000 rows). On the card it would be an insert at a random place per entry saved,
-- which is why migration 7 took it away there (sql/migrations/0007_ram_and_card.sql);
-- in RAM it costs the GUIDs of the rows the live database holds.
CREATE INDEX IF NOT EXISTS main.news_summary_guid_live ON news_summary (guid)
 WHERE guid IS NOT NULL;

-- name: live_views
-- What every read sees: the live database's rows, and the card's that the live
-- database does not hold (where both hold a row, the live one is the newer). Temporary
-- views of this connection; on PostgreSQL the same names are views of the tables
-- (sql/postgresql/admin.sql).
CREATE TEMP VIEW news_summary_all AS
SELECT * FROM main.news_summary
UNION ALL
SELECT * FROM card.news_summary AS c
 WHERE c.id NOT IN (SELECT id FROM main.news_summary);
CREATE TEMP VIEW feed_entries_all AS
SELECT * FROM main.feed_entries
UNION ALL
SELECT * FROM card.feed_entries AS c
 WHERE c.feed_id IN (SELECT id FROM main.feeds)
   AND NOT EXISTS (SELECT 1 FROM main.feed_entries AS m
                    WHERE m.summary_id = c.summary_id AND m.feed_id = c.feed_id);
CREATE TEMP VIEW news_all AS
SELECT * FROM main.news
UNION ALL
SELECT * FROM card.news AS c
 WHERE c.id NOT IN (SELECT id FROM main.news);

-- name: live_evict_articles
-- After a save: the articles the card now holds as they are here leave the RAM disk,
-- all but the newest (SQLite gives the next article max(id) + 1: it must stay).
DELETE FROM main.news
 WHERE id IN (SELECT id FROM (SELECT * FROM main.news
                              INTERSECT
                              SELECT * FROM card.news WHERE id IN (SELECT id FROM main.news)))
   AND id < (SELECT max(id) FROM main.news);

-- name: live_evict_entries
-- ... and the entries that are settled, not leased, older than the days the live
-- database keeps (:keep_since), all but the newest.
DELETE FROM main.news_summary
 WHERE id IN (SELECT id FROM (SELECT * FROM main.news_summary
                              INTERSECT
                              SELECT * FROM card.news_summary
                               WHERE id IN (SELECT id FROM main.news_summary)))
   AND state IN ('done', 'gone')
   AND lease_owner IS NULL
   AND first_seen_at < :keep_since
   AND id < (SELECT max(id) FROM main.news_summary);

-- name: live_evict_links
-- ... and the links of entries no longer here, once the card has them.
DELETE FROM main.feed_entries
 WHERE summary_id NOT IN (SELECT id FROM main.news_summary)
   AND EXISTS (SELECT 1 FROM card.feed_entries AS c
                WHERE c.summary_id = feed_entries.summary_id
                  AND c.feed_id = feed_entries.feed_id);

-- name: live_pull_entry
-- An entry about to change that only the card holds comes back to the RAM disk first
-- (the change is saved with the next save).
INSERT OR IGNORE INTO main.news_summary SELECT * FROM card.news_summary WHERE id = :id;

-- name: live_pull_article_of
INSERT OR IGNORE INTO main.news SELECT * FROM card.news WHERE summary_id = :summary_id;

-- name: live_pull_article
INSERT OR IGNORE INTO main.news SELECT * FROM card.news WHERE id = :id;

-- name: live_newest
-- The newest ids on each side: the live database must hold the newest row of each
-- table, or SQLite would hand out an id the card already has.
SELECT (SELECT max(id) FROM main.news_summary) AS live_entry,
       (SELECT max(id) FROM card.news_summary) AS card_entry,
       (SELECT max(id) FROM main.news) AS live_article;

-- name: live_card_months
SELECT substr(name, 6) AS month FROM card.sqlite_master
 WHERE type = 'table' AND name GLOB 'news_[0-9][0-9][0-9][0-9]_[0-9][0-9]'
 ORDER BY name;

-- name: live_card_watermarks
SELECT key, value FROM card.meta WHERE key GLOB 'search_indexed_*';

-- name: live_content_version
SELECT CAST(value AS INTEGER) AS version FROM main.meta WHERE key = 'content_version';

-- name: live_set_content_version
-- Eviction and pulls move rows between the files; they are not content: the counter
-- that says "something worth saving changed" is put back as it was.
UPDATE main.meta SET value = :version WHERE key = 'content_version';

-- ---------------------------------------------------------------- restoring the live side

-- name: live_restore_feeds
INSERT INTO main.feeds SELECT * FROM card.feeds;

-- name: live_restore_hosts
INSERT INTO main.hosts SELECT * FROM card.hosts;

-- name: live_restore_entries
-- The queue, the entries first seen since :keep_since, and the newest entry.
INSERT INTO main.news_summary
SELECT * FROM card.news_summary
 WHERE state IN ('new', 'failed')
    OR first_seen_at >= :keep_since
    OR id = (SELECT max(id) FROM card.news_summary);

-- name: live_restore_links
INSERT INTO main.feed_entries
SELECT * FROM card.feed_entries WHERE summary_id IN (SELECT id FROM main.news_summary);

-- name: live_restore_article
INSERT INTO main.news SELECT * FROM card.news WHERE id = :id;

-- name: live_restore_meta
INSERT OR REPLACE INTO main.meta (key, value)
SELECT key, value FROM card.meta
 WHERE key IN ('lineage', 'snapshot_seq', 'snapshot_at', 'snapshot_content_version')
    OR key GLOB 'daemon_*';

-- name: live_forget_articles
-- Retention dropped these articles from the card: the live database's copies go too
-- (the newest stays: new ids follow it).
DELETE FROM main.news
 WHERE id IN (SELECT value FROM json_each(:ids)) AND id < (SELECT max(id) FROM main.news);

-- name: live_forget_links
DELETE FROM main.feed_entries WHERE summary_id IN (SELECT value FROM json_each(:ids));

-- name: live_forget_revisions
UPDATE main.news_summary SET revision_of = NULL
 WHERE revision_of IN (SELECT value FROM json_each(:ids));

-- name: live_forget_entries
DELETE FROM main.news_summary
 WHERE id IN (SELECT value FROM json_each(:ids)) AND id < (SELECT max(id) FROM main.news_summary);

-- name: live_forget_duplicates
UPDATE main.news_summary SET duplicate_of = NULL
 WHERE duplicate_of IN (SELECT value FROM json_each(:ids));
