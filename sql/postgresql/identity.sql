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
