-- Article identity beyond (url, title): where revisions and duplicates are found and
-- linked (the decisions themselves: feedsync/identity.py).

-- Revisions are sought within [identity] window (7 days), and the live database keeps at
-- least that much of the entries and their links (feedsync/storage/card.py), so the
-- queries on entries read the live database's tables alone; articles may be on the card
-- already, and are read through news_all.

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
-- An article whose page named this URL as its canonical one (another URL than its own:
-- the same URL with another title is identity_by_url's).
SELECT summary_id AS root FROM news_all
 WHERE canonical_url = :url AND canonical_url <> url AND fetched_at >= :since
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
