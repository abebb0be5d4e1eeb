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

-- name: identity_batch
-- sql/identity.sql's identity_batch, with LATERAL joins: the three lookups for every row one
-- poll created (:fresh, a JSON array of {id, ord, url, guid}), in one round trip instead
-- of three per row. One insert per entry let each row's lookups see only the entries
-- staged before it; here the whole poll is staged already, so what came later in the
-- feed is left out: a row created later (by_url, by_guid), a link to this feed made
-- later in the same poll (:linked, {id, ord}: by_guid). The match itself is returned,
-- with its revision_of: a match created by this same poll is only now being resolved
-- (feedsync/storage/postgresql.py follows it to its root in feed order).
WITH fresh AS (
    SELECT * FROM jsonb_to_recordset(CAST(:fresh AS jsonb))
                  AS f(id bigint, ord integer, url text, guid text)
),
linked AS (
    SELECT * FROM jsonb_to_recordset(CAST(:linked AS jsonb)) AS l(id bigint, ord integer)
)
SELECT f.id, g.id AS guid_id, g.revision_of AS guid_revision_of,
       u.id AS url_id, u.revision_of AS url_revision_of, p.root AS page_root
  FROM fresh AS f
  LEFT JOIN LATERAL (
        SELECT s.id, s.revision_of
          FROM news_summary AS s
          JOIN feed_entries AS fe ON fe.summary_id = s.id
         WHERE f.guid IS NOT NULL AND fe.feed_id = :feed_id AND s.guid = f.guid
           AND s.id <> f.id AND s.first_seen_at >= :since
           AND NOT EXISTS (SELECT 1 FROM linked AS l WHERE l.id = s.id AND l.ord > f.ord)
         ORDER BY s.id
         LIMIT 1) AS g ON true
  LEFT JOIN LATERAL (
        SELECT s.id, s.revision_of
          FROM news_summary AS s
         WHERE s.url = f.url AND s.id <> f.id AND s.first_seen_at >= :since
           AND NOT EXISTS (SELECT 1 FROM fresh AS x WHERE x.id = s.id AND x.ord > f.ord)
         ORDER BY s.id
         LIMIT 1) AS u ON true
  LEFT JOIN LATERAL (
        SELECT n.summary_id AS root
          FROM news_all AS n
         WHERE n.canonical_url = f.url AND n.canonical_url <> n.url
           AND n.fetched_at >= :since
         ORDER BY n.id
         LIMIT 1) AS p ON true
 ORDER BY f.ord;
