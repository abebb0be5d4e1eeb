-- Feeds: the list the owner manages (config file, `feedsync add` / `remove` / `feeds`).
-- Named queries, loaded by feedsync/storage/sqlfiles.py: each starts at a
-- "-- name: <name>" line and is one statement with :named parameters.

-- name: feed_insert
-- A new feed (:title: the owner's, user_title); an existing URL is left alone (RETURNING
-- then gives no row).
INSERT INTO feeds (url, origin, added_at, category, user_title)
VALUES (:url, :origin, :now, :category, :title)
ON CONFLICT (url) DO NOTHING
RETURNING id;

-- name: feeds_insert_config
-- The config file's feeds new to the database, in ONE statement (:feeds, a JSON array
-- of [url, identity, title, category] in the file's order, which the ids follow; title
-- and category null when the file gives none): a statement per feed
-- was a round trip each on PostgreSQL, at every start with a new config. RETURNING names
-- the rows this statement created; a URL another process added meanwhile is left alone
-- (feedsync/storage/sql_feeds.py looks at it again).
INSERT INTO feeds (url, origin, added_at, identity, user_title, category)
SELECT json_extract(value, '$[0]'), 'config', :now, json_extract(value, '$[1]'),
       json_extract(value, '$[2]'), json_extract(value, '$[3]')
  FROM json_each(:feeds)
 WHERE true
 ORDER BY CAST(key AS INTEGER)
ON CONFLICT (url) DO NOTHING
RETURNING url;

-- name: feed_by_url
-- By its URL, or by the URL it was added under before it moved (301/308).
SELECT id, url, origin, enabled, disabled_reason FROM feeds
 WHERE url = :url OR moved_from = :url
 ORDER BY url = :url DESC
 LIMIT 1;

-- name: feeds_for_config
-- The whole list, read once when the config file's feeds are brought in
-- (feedsync/storage/sql_feeds.py: reconcile_config decides what changes).
SELECT id, url, moved_from, origin, enabled, disabled_reason, identity, user_title, category
  FROM feeds;

-- name: feed_adopt_for_config
-- A feed that is (again) in the config file: owned by the config, and enabled again if
-- it was disabled only because it had left the config.
UPDATE feeds
   SET origin = 'config',
       enabled = CASE WHEN disabled_reason = :left_config THEN 1 ELSE enabled END,
       disabled_reason = CASE WHEN disabled_reason = :left_config THEN NULL
                              ELSE disabled_reason END
 WHERE id = :id;

-- name: feed_name
-- One feed's names, for its page and its full-text feeds: one row by its key, where
-- feed_health reads every feed and counts their entries.
SELECT id, url, coalesce(user_title, title) AS title FROM feeds WHERE id = :id;

-- name: category_feed
-- A feed in the folder :category or a folder below it ("News" covers "News/World", not
-- "Newsletters"; news_window's rule): whether a category's full-text feed exists.
SELECT id FROM feeds
 WHERE category = :category
    OR substr(category, 1, length(:category) + 1) = :category || '/'
 LIMIT 1;

-- name: feed_set_identity
UPDATE feeds SET identity = :identity WHERE id = :id AND identity <> :identity;

-- name: feed_set_names
-- A config feed's title and folder, as the config file now gives them (NULL: none).
UPDATE feeds SET user_title = :title, category = :category WHERE id = :id;

-- name: feed_disable
UPDATE feeds SET enabled = 0, disabled_reason = :reason WHERE id = :id;

-- name: feed_delete_links
-- A removed feed's links go with it (on SQLite, foreign keys are not enforced: links
-- may point from the live database to the card's entries; the card's links go at the
-- next save); news_summary and news stay, so the articles are kept and never fetched
-- again.
DELETE FROM feed_entries WHERE feed_id = :id;

-- name: feed_delete
DELETE FROM feeds WHERE id = :id;

-- name: feeds_to_poll
-- Enabled feeds; with :due_before, only those whose next poll time has come, or whose
-- schedule was written by a clock ahead of this one (last_poll_at after :written_after,
-- the clock and its slack: a clock that ran ahead then, or stepped back since; its next
-- poll time is no measure of anything, feedsync/clock.py). Each with
-- its publishing over the last week (:week_ago), for the adaptive interval
-- (feedsync/decide.py: next_poll_at).
-- The entries of the week are in the live database (it keeps at least a week and the
-- identity window, feedsync/storage/card.py), found through their first_seen_at index:
-- an entry first seen before the week was published before it too, but for one dated
-- ahead of the clock that saw it (dates are kept as given), which the pace, a heuristic,
-- can do without.
SELECT f.id, f.url, f.latest_published, f.etag, f.last_modified, f.error_count,
       f.redirect_to, f.redirect_seen, f.identity,
       f.last_poll_at IS NOT NULL AS polled_before,
       coalesce(r.entries, 0) AS recent_entries,
       r.oldest AS recent_oldest
  FROM feeds AS f
  LEFT JOIN (SELECT fe.feed_id, count(*) AS entries,
                    min(coalesce(s.published, s.first_seen_at)) AS oldest
               FROM news_summary AS s JOIN feed_entries AS fe ON fe.summary_id = s.id
              WHERE s.first_seen_at >= :week_ago
                AND coalesce(s.published, s.first_seen_at) >= :week_ago
              GROUP BY fe.feed_id) AS r ON r.feed_id = f.id
 WHERE f.enabled = 1
   -- (the CAST: PostgreSQL cannot type a parameter it only sees tested for NULL)
   AND (CAST(:due_before AS text) IS NULL OR f.next_poll_at IS NULL OR f.next_poll_at <= :due_before
        OR f.last_poll_at > :written_after)
 ORDER BY f.id;

-- name: newest_poll
-- The newest poll time the database holds: the clock cannot be before it
-- (feedsync/clock.py: judge). Enabled feeds only: each is polled again at once when its
-- poll time lies ahead of the clock (feeds_to_poll), so what a clock that ran ahead wrote
-- here is gone after one pass. With it, the time that last showed the clock wrong, until the
-- articles stored since are settled (sql/meta.sql: clock_suspect_until): a clock that was
-- behind stays wrong until it passes that time, or is synchronized.
SELECT coalesce(max(t), '') AS newest FROM (
    SELECT max(last_poll_at) AS t FROM feeds WHERE enabled = 1
    UNION ALL
    SELECT value FROM meta WHERE key = 'clock_suspect_until'
) AS times;

-- name: feed_health
-- title: the owner's if given, else the feed's own (feed_title). A feed's entries are its
-- links on the card, and those of the live database the card does not hold yet (a save
-- copies them; the live side is the last days, each probed on the card by its key):
-- counted in one pass over each side's narrow table, grouped by feed, not a count per
-- feed (no index by feed: sql/migrations/0007_ram_and_card.sql keys the links by entry),
-- nor through feed_entries_all, which probes the live database for every link of the
-- card (feedsync serve reads this for its feeds page).
WITH card_links AS (
    SELECT feed_id, count(*) AS n FROM card.feed_entries GROUP BY feed_id),
live_links AS (
    SELECT m.feed_id, count(*) AS n FROM main.feed_entries AS m
     WHERE NOT EXISTS (SELECT 1 FROM card.feed_entries AS c
                        WHERE c.summary_id = m.summary_id AND c.feed_id = m.feed_id)
     GROUP BY m.feed_id)
SELECT f.id, f.url, coalesce(f.user_title, f.title) AS title, f.title AS feed_title,
       f.user_title, f.enabled, f.disabled_reason, f.origin, f.latest_published,
       f.last_poll_at, f.last_success_at, f.error_count, f.last_error, f.last_warning,
       f.moved_from, f.category, f.next_poll_at,
       coalesce(c.n, 0) + coalesce(l.n, 0) AS entries
  FROM main.feeds AS f
  LEFT JOIN card_links AS c ON c.feed_id = f.id
  LEFT JOIN live_links AS l ON l.feed_id = f.id
 ORDER BY f.id;
