-- Article identity beyond (url, title): where revisions and duplicates are found and
-- linked (the decisions themselves: feedsync/identity.py).

-- Revisions are sought within [identity] window (7 days), and the live database keeps at
-- least that much of the entries and their links (feedsync/storage/card.py), so the
-- queries on entries read the live database's tables alone; articles may be on the card
-- already, and are read through news_all.

-- name: identity_batch
-- What the revision rule needs to judge every row one poll created, in ONE statement for
-- the poll, each lookup by key through an index, so that its cost follows the poll's
-- entries and the rows that share their URLs or GUIDs, never entries x rows:
--   url:  per URL of the created rows (:urls), the lowest id among the rows with that
--         URL first seen within the window that this poll did NOT create (:fresh), and
--         its revision_of;
--   guid: per GUID of the created rows (:guids), the lowest id among this feed's rows
--         with that GUID first seen within the window that this poll did NOT link
--         (:linked), and its revision_of (the index news_summary_guid_live, sql/card.sql);
--   page: the articles fetched within the window whose page named one of :urls as its
--         canonical URL, another than their own (id: the article's, summary_id: its
--         entry's); the caller keeps the lowest article id per URL;
--   row:  of this poll's created and linked rows (:rows), those first seen within the
--         window, with their stored GUID and revision_of.
-- One insert per entry let each row's lookups see only what was staged before it. The
-- rows this poll created or linked are therefore left out of url and guid here, and
-- feedsync/storage/sql_polling.py adds back, walking the poll in feed order, those that
-- came earlier in the feed than the row it judges (from `row`): the candidates, and so
-- the decisions, are those of one insert per entry. When every row of a poll shared one
-- URL, the correlated lookups this replaces (for each created row, every row of its URL,
-- each checked against every created row) made a poll's cost cubic: 800 entries with one
-- link took 59 s of CPU in the write transaction.
-- `page` is a plain join, not an aggregate: only so does SQLite flatten news_all (a
-- UNION ALL of the live database and the card's month tables, sql/card.sql) into it and
-- seek each file's canonical_url index; with min() or a correlated ORDER BY ... LIMIT it
-- read every article fetched within the window, for every row created. The url and guid
-- aggregates take revision_of from the row of min(id) (SQLite's rule for a bare column
-- beside a single min()).
SELECT 'url' AS kind, s.url AS key, min(s.id) AS id, s.revision_of, NULL AS summary_id
  FROM news_summary AS s
 WHERE s.url IN (SELECT value FROM json_each(:urls))
   AND s.first_seen_at >= :since
   AND s.id NOT IN (SELECT value FROM json_each(:fresh))
 GROUP BY s.url
UNION ALL
SELECT 'guid', s.guid, min(s.id), s.revision_of, NULL
  FROM news_summary AS s
  JOIN feed_entries AS fe ON fe.summary_id = s.id AND fe.feed_id = :feed_id
 WHERE s.guid IN (SELECT value FROM json_each(:guids))
   AND s.first_seen_at >= :since
   AND s.id NOT IN (SELECT value FROM json_each(:linked))
 GROUP BY s.guid
UNION ALL
SELECT 'page', n.canonical_url, n.id, NULL, n.summary_id
  FROM json_each(:urls) AS j, news_all AS n
 WHERE n.canonical_url = j.value AND n.canonical_url <> n.url AND n.fetched_at >= :since
UNION ALL
SELECT 'row', s.guid, s.id, s.revision_of, NULL
  FROM json_each(:rows) AS j
  JOIN news_summary AS s ON s.id = j.value
 WHERE s.first_seen_at >= :since;

-- name: identity_mark_revisions
-- Never fetched: the story is the root's. Every revision one poll found (:marks, a JSON
-- array of {id, root, reason}) in one statement after they were all judged, not one per
-- revision: a feed may carry 2,000 versions of a story. Nothing in the poll's
-- transaction reads these columns of its new rows after the judging (feedsync/storage/
-- sql_polling.py), so marking them last changes nothing but the count of statements.
UPDATE news_summary
   SET state = 'done', revision_of = json_extract(m.value, '$.root'),
       link_reason = json_extract(m.value, '$.reason'), lease_owner = NULL, lease_until = NULL
  FROM json_each(:marks) AS m
 WHERE news_summary.id = json_extract(m.value, '$.id');

-- name: identity_retitle
-- The revision's title replaces the article's (every title stays in news_summary); not
-- called for a revision without a title (feedsync/storage/sql_polling.py).
UPDATE OR IGNORE news SET title = :title WHERE summary_id = :root;

-- name: identity_news_by_canonical
-- An article whose page names the same canonical URL: one that names it as another
-- than its own (an index of those few), or whose own URL it is.
SELECT id FROM news_all WHERE canonical_url = :canonical AND canonical_url <> url
UNION ALL
SELECT id FROM news_all
 WHERE summary_id IN (SELECT id FROM news_summary_all WHERE url = :canonical)
ORDER BY id
LIMIT 1;

-- name: identity_recent_prints
SELECT id, fingerprint FROM news_all WHERE fetched_at >= :since AND fingerprint IS NOT NULL;

-- name: identity_mark_duplicate
-- Its page was an article already stored: linked to it, not stored twice.
UPDATE news_summary
   SET state = 'done', attempts = attempts + 1, next_attempt_at = NULL, last_error = NULL,
       duplicate_of = :news_id, link_reason = :reason, lease_owner = NULL, lease_until = NULL
 WHERE id = :id;

-- name: identity_revisions
-- The titles an article had, oldest first (for feedsync show).
SELECT id, url, title, summary, first_seen_at, link_reason
  FROM news_summary_all
 WHERE id = :root OR revision_of = :root
 ORDER BY id;

-- name: identity_duplicates
-- The entries found to be this article under another URL (for feedsync show).
SELECT id, url, title, summary, first_seen_at, link_reason
  FROM news_summary_all
 WHERE duplicate_of = :news_id
 ORDER BY id;
