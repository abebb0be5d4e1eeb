-- Article identity beyond (url, title): where revisions and duplicates are found and
-- linked (the decisions themselves: feedsync/identity.py).

-- Revisions are sought within [identity] window (7 days), and the live database keeps at
-- least that much of the entries and their links (feedsync/storage/card.py), so the
-- queries on entries read the live database's tables alone; articles may be on the card
-- already, and are read through news_all.

-- name: identity_batch
-- For every row one poll created (:fresh, a JSON array of {id, ord, url, guid}), in one
-- statement instead of three per row:
--   guid: an earlier row of the same feed with the same GUID (the index
--         news_summary_guid_live, sql/card.sql, serves it);
--   url:  an earlier row with the same URL and another title (the title was edited);
--   page: an article whose page named this URL as its canonical one (another URL than
--         its own: the same URL with another title is the url lookup's).
-- One insert per entry let each row's lookups see only the entries staged before it;
-- here the whole poll is staged already, so what came later in the feed is left out: a
-- row created later (url, guid), a link to this feed made later in the same poll
-- (:linked, {id, ord}: guid). The match itself is returned, with its revision_of: a match
-- created by this same poll is only now being resolved (feedsync/storage/sql_polling.py
-- follows it to its root in feed order).
WITH fresh AS (
    SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.ord') AS ord,
           json_extract(value, '$.url') AS url, json_extract(value, '$.guid') AS guid
      FROM json_each(:fresh)
),
linked AS (
    SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.ord') AS ord
      FROM json_each(:linked)
),
found AS (
    SELECT f.id, f.ord,
           (SELECT s.id
              FROM news_summary AS s
              JOIN feed_entries AS fe ON fe.summary_id = s.id
             WHERE f.guid IS NOT NULL AND fe.feed_id = :feed_id AND s.guid = f.guid
               AND s.id <> f.id AND s.first_seen_at >= :since
               AND NOT EXISTS (SELECT 1 FROM linked AS l WHERE l.id = s.id AND l.ord > f.ord)
             ORDER BY s.id
             LIMIT 1) AS guid_id,
           (SELECT s.id
              FROM news_summary AS s
             WHERE s.url = f.url AND s.id <> f.id AND s.first_seen_at >= :since
               AND NOT EXISTS (SELECT 1 FROM fresh AS x WHERE x.id = s.id AND x.ord > f.ord)
             ORDER BY s.id
             LIMIT 1) AS url_id,
           (SELECT n.summary_id
              FROM news_all AS n
             WHERE n.canonical_url = f.url AND n.canonical_url <> n.url
               AND n.fetched_at >= :since
             ORDER BY n.id
             LIMIT 1) AS page_root
      FROM fresh AS f
)
SELECT found.id, found.guid_id, g.revision_of AS guid_revision_of,
       found.url_id, u.revision_of AS url_revision_of, found.page_root
  FROM found
  LEFT JOIN news_summary AS g ON g.id = found.guid_id
  LEFT JOIN news_summary AS u ON u.id = found.url_id
 ORDER BY found.ord;

-- name: identity_mark_revision
-- Never fetched: the story is the root's.
UPDATE news_summary
   SET state = 'done', revision_of = :root, link_reason = :reason,
       lease_owner = NULL, lease_until = NULL
 WHERE id = :id;

-- name: identity_retitle
-- The revision's title replaces the article's (every title stays in news_summary).
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
SELECT id, url, title, first_seen_at, link_reason
  FROM news_summary_all
 WHERE id = :root OR revision_of = :root
 ORDER BY id;

-- name: identity_duplicates
-- The entries found to be this article under another URL (for feedsync show).
SELECT id, url, title, first_seen_at, link_reason
  FROM news_summary_all
 WHERE duplicate_of = :news_id
 ORDER BY id;
