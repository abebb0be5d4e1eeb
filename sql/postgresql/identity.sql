-- (PostgreSQL; the same queries as sql/identity.sql.)
-- Article identity beyond (url, title): where revisions and duplicates are found and
-- linked (the decisions themselves: feedsync/identity.py).

-- name: identity_by_guid
-- An earlier row of the same feed with the same GUID: the first row of its story.
SELECT coalesce(s.revision_of, s.id) AS root
  FROM news_summary AS s
  JOIN feed_entries AS fe ON fe.summary_id = s.id
 WHERE fe.feed_id = :feed_id AND s.guid = :guid AND s.id <> :id
   AND s.first_seen_at >= :since
 ORDER BY s.id
 LIMIT 1;

-- name: identity_by_url
-- An earlier row with the same URL and another title (the title was edited).
SELECT coalesce(revision_of, id) AS root
  FROM news_summary
 WHERE url = :url AND id <> :id AND first_seen_at >= :since
 ORDER BY id
 LIMIT 1;

-- name: identity_by_canonical_page
-- An article whose page named this URL as its canonical one.
SELECT summary_id AS root FROM news
 WHERE canonical_url = :url AND fetched_at >= :since
 ORDER BY id
 LIMIT 1;

-- name: identity_mark_revision
-- Never fetched: the story is the root's.
UPDATE news_summary
   SET state = 'done', revision_of = :root, link_reason = :reason,
       lease_owner = NULL, lease_until = NULL
 WHERE id = :id;

-- name: identity_retitle
-- The revision's title replaces the article's (every title stays in news_summary).
-- Not when another article already has this (url, title): SQLite's UPDATE OR IGNORE.
UPDATE news AS n SET title = :title
 WHERE n.summary_id = :root
   AND NOT EXISTS (SELECT 1 FROM news AS o
                    WHERE o.url = n.url AND o.title = :title AND o.id <> n.id);

-- name: identity_news_by_canonical
SELECT id FROM news WHERE canonical_url = :canonical ORDER BY id LIMIT 1;

-- name: identity_recent_prints
SELECT id, fingerprint FROM news WHERE fetched_at >= :since AND fingerprint IS NOT NULL;

-- name: identity_mark_duplicate
-- Its page was an article already stored: linked to it, not stored twice.
UPDATE news_summary
   SET state = 'done', attempts = attempts + 1, next_attempt_at = NULL, last_error = NULL,
       duplicate_of = :news_id, link_reason = :reason, lease_owner = NULL, lease_until = NULL
 WHERE id = :id;

-- name: identity_revisions
-- The titles an article had, oldest first (for feedsync show).
SELECT id, url, title, first_seen_at, link_reason
  FROM news_summary
 WHERE id = :root OR revision_of = :root
 ORDER BY id;

-- name: identity_duplicates
-- The entries found to be this article under another URL (for feedsync show).
SELECT id, url, title, first_seen_at, link_reason
  FROM news_summary
 WHERE duplicate_of = :news_id
 ORDER BY id;
