-- (PostgreSQL: only the queries written differently from sql/identity.sql; the others are
-- taken from there by name, see feedsync/storage/sqlfiles.py.)
-- Article identity beyond (url, title): where revisions and duplicates are found and
-- linked (the decisions themselves: feedsync/identity.py).

-- name: identity_retitle
-- The revision's title replaces the article's (every title stays in news_summary).
-- Not when another article already has this (url, title): SQLite's UPDATE OR IGNORE.
UPDATE news AS n SET title = :title
 WHERE n.summary_id = :root
   AND NOT EXISTS (SELECT 1 FROM news AS o
                    WHERE o.url = n.url AND o.title = :title AND o.id <> n.id);

-- name: identity_mark_revisions
-- sql/identity.sql's, the marks read with jsonb_to_recordset.
UPDATE news_summary AS s
   SET state = 'done', revision_of = m.root, link_reason = m.reason,
       lease_owner = NULL, lease_until = NULL
  FROM jsonb_to_recordset(CAST(:marks AS jsonb)) AS m(id bigint, root bigint, reason text)
 WHERE s.id = m.id;

-- name: identity_batch
-- sql/identity.sql's identity_batch (the same four kinds of rows, the same parameters, as
-- JSON arrays), in one round trip. Here the lookups that leave out this poll's rows are
-- anti-joins (NOT EXISTS against the hashed list), the lowest id per key a GROUP BY
-- joined back to its row for revision_of, and news_all (on PostgreSQL the news table)
-- is reached through its canonical_url index: per key, never per created row.
WITH fresh AS (
    SELECT CAST(value AS bigint) AS id
      FROM jsonb_array_elements_text(CAST(:fresh AS jsonb))
),
linked AS (
    SELECT CAST(value AS bigint) AS id
      FROM jsonb_array_elements_text(CAST(:linked AS jsonb))
),
url_first AS (
    SELECT s.url AS key, min(s.id) AS id
      FROM news_summary AS s
     WHERE s.url IN (SELECT value FROM jsonb_array_elements_text(CAST(:urls AS jsonb)))
       AND s.first_seen_at >= :since
       AND NOT EXISTS (SELECT 1 FROM fresh AS f WHERE f.id = s.id)
     GROUP BY s.url
),
guid_first AS (
    SELECT s.guid AS key, min(s.id) AS id
      FROM news_summary AS s
      JOIN feed_entries AS fe ON fe.summary_id = s.id AND fe.feed_id = :feed_id
     WHERE s.guid IN (SELECT value FROM jsonb_array_elements_text(CAST(:guids AS jsonb)))
       AND s.first_seen_at >= :since
       AND NOT EXISTS (SELECT 1 FROM linked AS l WHERE l.id = s.id)
     GROUP BY s.guid
)
SELECT 'url' AS kind, u.key, u.id, s.revision_of, CAST(NULL AS bigint) AS summary_id
  FROM url_first AS u
  JOIN news_summary AS s ON s.id = u.id
UNION ALL
SELECT 'guid', g.key, g.id, s.revision_of, NULL
  FROM guid_first AS g
  JOIN news_summary AS s ON s.id = g.id
UNION ALL
SELECT 'page', n.canonical_url, n.id, NULL, n.summary_id
  FROM news_all AS n
 WHERE n.canonical_url IN (SELECT value FROM jsonb_array_elements_text(CAST(:urls AS jsonb)))
   AND n.canonical_url <> n.url AND n.fetched_at >= :since
UNION ALL
SELECT 'row', s.guid, s.id, s.revision_of, NULL
  FROM news_summary AS s
 WHERE s.id IN (SELECT CAST(value AS bigint)
                  FROM jsonb_array_elements_text(CAST(:rows AS jsonb)))
   AND s.first_seen_at >= :since;
