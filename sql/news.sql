-- Reading what was collected: the user's commands.
--
-- On SQLite the rows are in two files (sql/card.sql): a read sees the live database's
-- rows and the card's that the live database does not hold. A plain lookup goes through
-- the *_all views (the same names are plain views of the tables on PostgreSQL); a count
-- or an ordered listing names both sides itself (main., card.), because SQLite cannot
-- push a filter, an order or a count into a view made of a UNION ALL, and would read
-- every article to answer. Those queries have their PostgreSQL form in
-- sql/postgresql/news.sql.

-- name: counts
-- The queue is in the live database only (news_summary, unqualified, is main's).
SELECT (SELECT count(*) FROM feeds) AS feeds,
       (SELECT count(*) FROM feeds WHERE enabled = 1) AS feeds_enabled,
       (SELECT count(*) FROM feeds WHERE enabled = 1 AND error_count > 0) AS feeds_failing,
       (SELECT count(*) FROM main.news_summary)
       + (SELECT count(*) FROM card.news_summary
           WHERE id NOT IN (SELECT id FROM main.news_summary)) AS entries,
       (SELECT count(*) FROM main.feed_entries)
       + (SELECT count(*) FROM card.feed_entries AS c
           WHERE c.feed_id IN (SELECT id FROM main.feeds)
             AND NOT EXISTS (SELECT 1 FROM main.feed_entries AS m
                              WHERE m.summary_id = c.summary_id AND m.feed_id = c.feed_id))
           AS links,
       (SELECT count(*) FROM (
            SELECT id FROM main.news
            UNION ALL
            SELECT id FROM card.news WHERE id NOT IN (SELECT id FROM main.news))) AS articles,
       (SELECT count(*) FROM news_summary WHERE state = 'new') AS queue_new,
       (SELECT count(*) FROM news_summary WHERE state = 'failed') AS queue_failed,
       (SELECT count(*) FROM main.news_summary WHERE state = 'gone')
       + (SELECT count(*) FROM card.news_summary
           WHERE state = 'gone' AND id NOT IN (SELECT id FROM main.news_summary)) AS gone;

-- name: status_counts
-- feedsync status: feeds by health, the queue, articles today and in all, the next
-- poll and the last successful one (of any feed).
SELECT (SELECT count(*) FROM feeds) AS feeds,
       (SELECT count(*) FROM feeds WHERE enabled = 0) AS disabled,
       (SELECT count(*) FROM feeds WHERE enabled = 1 AND error_count >= :failing_after)
           AS failing,
       (SELECT count(*) FROM feeds WHERE enabled = 1 AND error_count > 0
                                      AND error_count < :failing_after) AS retrying,
       (SELECT count(*) FROM news_summary WHERE state = 'new') AS queue_new,
       (SELECT count(*) FROM news_summary WHERE state = 'failed') AS queue_failed,
       (SELECT count(*) FROM main.news_summary WHERE state = 'gone')
       + (SELECT count(*) FROM card.news_summary
           WHERE state = 'gone' AND id NOT IN (SELECT id FROM main.news_summary)) AS gone,
       (SELECT count(*) FROM (
            SELECT id FROM main.news WHERE fetched_at >= :today
            UNION ALL
            SELECT id FROM card.news
             WHERE fetched_at >= :today AND id NOT IN (SELECT id FROM main.news)))
           AS articles_today,
       (SELECT count(*) FROM (
            SELECT id FROM main.news
            UNION ALL
            SELECT id FROM card.news WHERE id NOT IN (SELECT id FROM main.news))) AS articles,
       (SELECT min(next_poll_at) FROM feeds WHERE enabled = 1) AS next_poll_at,
       (SELECT max(last_success_at) FROM feeds) AS last_success_at;

-- name: news_keys
-- The newest articles since :since (their ids and the time they sort by): each side
-- read in order through its own index and merged, so only :limit entries are read.
SELECT id, w FROM (
    SELECT id, coalesce(published, fetched_at) AS w FROM main.news
    UNION ALL
    SELECT id, coalesce(published, fetched_at) AS w FROM card.news
     WHERE id NOT IN (SELECT id FROM main.news))
 WHERE w >= :since
 ORDER BY w DESC, id DESC
 LIMIT :limit;

-- name: news_count
-- How many articles since :since (news says "20 of 51" when it shows fewer).
SELECT count(*) AS n FROM (
    SELECT id, coalesce(published, fetched_at) AS w FROM main.news
    UNION ALL
    SELECT id, coalesce(published, fetched_at) AS w FROM card.news
     WHERE id NOT IN (SELECT id FROM main.news))
 WHERE w >= :since;

-- name: news_of_feed
-- The articles a feed carried, with the time they sort by: the articles of its entries
-- (or of what they are revisions of), and those its entries turned out to duplicate.
-- The feed's links are found once (`links`: each side's narrow table read whole, there
-- being no index by feed; the card's checked against the live database's by key), its
-- entries read by their keys, then the articles by the entries' keys.
WITH links (summary_id) AS MATERIALIZED (
    SELECT summary_id FROM feed_entries_all WHERE feed_id = :feed_id),
entries (article_entry, duplicate_of) AS MATERIALIZED (
    SELECT coalesce(s.revision_of, s.id), s.duplicate_of FROM news_summary_all AS s
     WHERE s.id IN (SELECT summary_id FROM links))
SELECT n.id, coalesce(n.published, n.fetched_at) AS w
  FROM news_all AS n
 WHERE n.summary_id IN (SELECT article_entry FROM entries)
UNION
SELECT n.id, coalesce(n.published, n.fetched_at) AS w
  FROM news_all AS n
 WHERE n.id IN (SELECT duplicate_of FROM entries WHERE duplicate_of IS NOT NULL);

-- name: news_window
-- feedsync serve: a page of articles, newest first in news_keys' order, of every feed, of
-- one (:feed_id) or of a category and its subfolders (:category, "News" covers
-- "News/World"), after the article whose sort key is (:w, :id) (keyset paging; '9999'
-- and a huge id for the first page). Each side is read in order through its index on
-- the time it sorts by, and the two merged, so the page reads the articles newer than
-- its last one, never the whole table; a feed's own are told by a lookup per article
-- (its entry's links, and the entries that are its revisions or duplicates: as
-- news_of_feed), the wanted feeds' ids made once (`wanted`, none when every feed is
-- wanted). With :bodies false the text is not read at all. The outer query names w:
-- without it SQLite does not merge the two sides' orders, it reads both whole and sorts
-- (100x slower at 20,000 articles).
WITH wanted (id) AS (
    SELECT id FROM main.feeds
     WHERE id = :feed_id OR category = :category
        OR substr(category, 1, length(:category) + 1) = :category || '/')
SELECT id, url, title, published, feed_title, author, language, fetched_at, body, w
  FROM (SELECT n.id, n.url, n.title, n.published, n.feed_title, n.author, n.language,
               n.fetched_at, CASE WHEN :bodies THEN n.body ELSE '' END AS body,
               coalesce(n.published, n.fetched_at) AS w
          FROM main.news AS n
         WHERE coalesce(n.published, n.fetched_at) <= :w
           AND (:feed_id IS NULL AND :category IS NULL
                OR EXISTS (SELECT 1 FROM main.feed_entries AS fe
                            WHERE fe.summary_id = n.summary_id AND fe.feed_id IN wanted)
                OR EXISTS (SELECT 1 FROM card.feed_entries AS fe
                            WHERE fe.summary_id = n.summary_id AND fe.feed_id IN wanted)
                OR EXISTS (SELECT 1 FROM news_summary_all AS s
                            WHERE (s.revision_of = n.summary_id OR s.duplicate_of = n.id)
                              AND EXISTS (SELECT 1 FROM feed_entries_all AS fe
                                           WHERE fe.summary_id = s.id
                                             AND fe.feed_id IN wanted)))
        UNION ALL
        SELECT n.id, n.url, n.title, n.published, n.feed_title, n.author, n.language,
               n.fetched_at, CASE WHEN :bodies THEN n.body ELSE '' END AS body,
               coalesce(n.published, n.fetched_at) AS w
          FROM card.news AS n
         WHERE coalesce(n.published, n.fetched_at) <= :w
           AND n.id NOT IN (SELECT id FROM main.news)
           AND (:feed_id IS NULL AND :category IS NULL
                OR EXISTS (SELECT 1 FROM main.feed_entries AS fe
                            WHERE fe.summary_id = n.summary_id AND fe.feed_id IN wanted)
                OR EXISTS (SELECT 1 FROM card.feed_entries AS fe
                            WHERE fe.summary_id = n.summary_id AND fe.feed_id IN wanted)
                OR EXISTS (SELECT 1 FROM news_summary_all AS s
                            WHERE (s.revision_of = n.summary_id OR s.duplicate_of = n.id)
                              AND EXISTS (SELECT 1 FROM feed_entries_all AS fe
                                           WHERE fe.summary_id = s.id
                                             AND fe.feed_id IN wanted))))
 WHERE w < :w OR id < :id
 ORDER BY w DESC, id DESC
 LIMIT :limit;

-- name: feed_plan_marks
-- What news_window needs to choose a feed's plan: the newest entry of all (each side's
-- primary key ends there) and, on each side, the :limit-th newest link of the feed (NULL
-- when the side holds fewer), found by reading the side's links from the newest back
-- until it. The links are keyed by entry (summary_id, feed_id), with no index by feed (one
-- would cost every save to the card a page per feed with new entries): the read is of
-- that narrow table alone, no article's row (about 50 ns a link on a PC: 6 ms for the
-- whole of 114,000, a fraction of one page's walk). The walk reads about the entries
-- between the newest and the feed's :limit-th.
SELECT max(coalesce((SELECT max(summary_id) FROM main.feed_entries), 0),
           coalesce((SELECT max(summary_id) FROM card.feed_entries), 0)) AS newest,
       (SELECT summary_id FROM main.feed_entries WHERE feed_id = :feed_id
         ORDER BY summary_id DESC LIMIT 1 OFFSET :limit - 1) AS live_kth,
       (SELECT summary_id FROM card.feed_entries WHERE feed_id = :feed_id
         ORDER BY summary_id DESC LIMIT 1 OFFSET :limit - 1) AS card_kth;

-- name: feed_links_upto
-- How many links a feed has, counted up to :cap on each side, in each side's links table
-- (read until the cap, or whole: feed_plan_marks says what that costs). The live
-- database's links of the last days are on the card too after a save: counted twice,
-- which a choice of plan does not mind.
SELECT (SELECT count(*) FROM (SELECT 1 FROM main.feed_entries WHERE feed_id = :feed_id
                               LIMIT :cap))
     + (SELECT count(*) FROM (SELECT 1 FROM card.feed_entries WHERE feed_id = :feed_id
                               LIMIT :cap)) AS n;

-- name: content_key
-- Reading.content_key (feedsync serve's ETags): what changes whenever the articles, the
-- links or the feeds' names change, read by key in each file's meta. The live side: its
-- id (new with every live database, a restored one included: the counter starts again
-- from the save's) and content_version (the triggers of 0002 and 0011; moves between the
-- files leave it as it was, feedsync/storage/sqlite.py _neutral). The card side: a mark
-- every write to the card that changed a row sets anew (feedsync/storage/card.py
-- Card._write: a save, retention, a clock settled).
SELECT (SELECT value FROM main.meta WHERE key = 'live_id') || '.'
       || (SELECT value FROM main.meta WHERE key = 'content_version') || '.'
       || coalesce((SELECT value FROM card.meta WHERE key = 'card_mark'), '') AS key;

-- name: news_sort_key
-- The time an article sorts by in the listings (news_window's :w after it).
SELECT id, coalesce(published, fetched_at) AS w FROM news_all WHERE id = :id;

-- name: news_per_day
-- feedsync serve's chart: per feed and day of fetching (the day feedsync collected the
-- article: a feed's own dates may be late, missing or in the future), the articles
-- fetched since :since that it carried (through its entry, a revision or a duplicate, as
-- news_of_feed). The window's articles are read once (`a`), each side through its fetch
-- time's index, each article's row for its entry (the row's first page, not its text's
-- overflow pages); the card's month by month (the arms: news_per_day_month for each,
-- feedsync/storage/sqlite_reading.py), not through the card's `news` view, whose rows
-- SQLite reads whole here, bodies and all (20 ms against 5.5 for the 4,700 articles of a
-- window in 20,000). Then the entries that are their revisions or duplicates, through
-- those columns' indexes, and the links by each entry's key; a link on the card of a
-- feed since removed is told by the feed's key (an IN list of the feeds here made SQLite
-- try every feed's id against every link: 170 ms against 30).
WITH a AS MATERIALIZED (
    SELECT id, substr(fetched_at, 1, 10) AS day, summary_id AS entry
      FROM main.news WHERE fetched_at >= :since
    UNION ALL
    SELECT id, substr(fetched_at, 1, 10), summary_id FROM ({arms}) AS c
     WHERE c.id NOT IN (SELECT id FROM main.news)),
carried (id, day, entry) AS (
    SELECT id, day, entry FROM a
    UNION ALL
    SELECT a.id, a.day, s.id FROM a JOIN news_summary_all AS s ON s.revision_of = a.entry
    UNION ALL
    SELECT a.id, a.day, s.id FROM a JOIN news_summary_all AS s ON s.duplicate_of = a.id)
SELECT feed_id, day, count(DISTINCT id) AS articles
  FROM (SELECT fe.feed_id, c.day, c.id
          FROM carried AS c JOIN main.feed_entries AS fe ON fe.summary_id = c.entry
        UNION ALL
        SELECT fe.feed_id, c.day, c.id
          FROM carried AS c JOIN card.feed_entries AS fe ON fe.summary_id = c.entry
         WHERE EXISTS (SELECT 1 FROM main.feeds AS f WHERE f.id = fe.feed_id)) AS linked
 GROUP BY feed_id, day
 ORDER BY feed_id, day;

-- name: news_per_day_month
-- news_per_day's articles of one month's table on the card fetched since :since.
SELECT id, fetched_at, summary_id FROM card.news_{month} WHERE fetched_at >= :since;

-- name: news_by_id
SELECT id, url, title, published, feed_title, author, language, fetched_at, body
  FROM news_all WHERE id = :id;

-- name: news_by_url
-- (The newest of them is shown.)
SELECT id, url, title, published, feed_title, author, language, fetched_at, body
  FROM news_all
 WHERE summary_id IN (SELECT id FROM news_summary_all WHERE url = :url);

-- name: news_summary_of
SELECT summary_id FROM news_all WHERE id = :id;

-- name: news_carried_by
-- The feeds that carried an article (one story in several category feeds), its
-- revisions and its duplicates included.
SELECT f.id, f.url, coalesce(f.user_title, f.title) AS title
  FROM feeds AS f
 WHERE f.id IN (
        SELECT feed_id FROM feed_entries_all
         WHERE summary_id IN (
                SELECT s.id FROM news_summary_all AS s
                 WHERE s.id = :summary_id OR s.revision_of = :summary_id
                    OR s.duplicate_of = :news_id))
 ORDER BY f.id;

-- name: news_scan
-- Search, the articles not in the search index yet (the live database's, and a month's
-- newest) that match :query, decided by feedsync_matches (feedsync/search.py: the same
-- answer as the index's and PostgreSQL's).
SELECT id, url, title, published, feed_title, fetched_at, body
  FROM main.news
 WHERE feedsync_matches(:query, title || ' ' || body);

-- name: news_scan_month
SELECT id, url, title, published, feed_title, fetched_at, body
  FROM news_{month}
 WHERE id > :after
   AND id NOT IN (SELECT id FROM main.news)
   AND feedsync_matches(:query, title || ' ' || body);

-- name: news_scan_count
-- search_count: how many news_scan would give, at most :cap (the rows stay in SQLite).
SELECT count(*) AS n FROM (
    SELECT 1 FROM main.news WHERE feedsync_matches(:query, title || ' ' || body) LIMIT :cap
) AS found;

-- name: news_scan_month_count
SELECT count(*) AS n FROM (
    SELECT 1 FROM news_{month}
     WHERE id > :after
       AND id NOT IN (SELECT id FROM main.news)
       AND feedsync_matches(:query, title || ' ' || body)
     LIMIT :cap
) AS found;

-- name: news_hit_heads
-- Search, the articles the index found (:ids, a JSON array), without their texts: the
-- titles decide which texts are read (feedsync/storage/sqlite_reading.py). One statement
-- for them all, each id a seek in each file (a statement per article was half of a
-- search's time at 100,000 articles).
SELECT id, url, title, published, feed_title, fetched_at
  FROM news_all WHERE id IN (SELECT value FROM json_each(:ids));

-- name: news_hit_bodies
-- ... and the texts of those that are judged.
SELECT id, body FROM news_all WHERE id IN (SELECT value FROM json_each(:ids));

-- name: news_export_live
-- Every field, oldest first, streamed (the caller iterates the cursors): the live
-- database's articles, and each month's that the live database does not hold, merged.
SELECT id, url, title, published, feed_title, author, language, fetched_at, body
  FROM main.news
 WHERE coalesce(published, fetched_at) >= :since
 ORDER BY id;

-- name: news_export_month
SELECT id, url, title, published, feed_title, author, language, fetched_at, body
  FROM news_{month}
 WHERE coalesce(published, fetched_at) >= :since
   AND id NOT IN (SELECT id FROM main.news)
 ORDER BY id;

-- ---------------------------------------------------------------- entries without articles
-- (news --state, show, feeds): pending ('new'), failed and given up ('gone'). The queue
-- ('new', 'failed') is in the live database only; given-up rows may be on the card.

-- name: entries_in_state
-- Newest first; :feed_id NULL for every feed; :since on the entry's date, else when
-- first seen. Each side read through its index on (state, id).
SELECT id, url, title, summary, published, first_seen_at, state, attempts,
       next_attempt_at, last_error
  FROM (SELECT * FROM main.news_summary WHERE state = :state
        UNION ALL
        SELECT * FROM card.news_summary
         WHERE state = :state AND id NOT IN (SELECT id FROM main.news_summary)) AS s
 WHERE coalesce(s.published, s.first_seen_at) >= :since
   AND (:feed_id IS NULL
        OR s.id IN (SELECT summary_id FROM feed_entries_all WHERE feed_id = :feed_id))
 ORDER BY s.id DESC
 LIMIT :limit;

-- name: entries_count
-- How many entries_in_state would list without its :limit.
SELECT count(*) AS n
  FROM (SELECT * FROM main.news_summary WHERE state = :state
        UNION ALL
        SELECT * FROM card.news_summary
         WHERE state = :state AND id NOT IN (SELECT id FROM main.news_summary)) AS s
 WHERE coalesce(s.published, s.first_seen_at) >= :since
   AND (:feed_id IS NULL
        OR s.id IN (SELECT summary_id FROM feed_entries_all WHERE feed_id = :feed_id));

-- name: entries_by_url
-- show URL: the entries of a URL that have no article (one URL, several titles: all).
SELECT id, url, title, summary, published, first_seen_at, state, attempts,
       next_attempt_at, last_error
  FROM news_summary_all
 WHERE url = :url AND state IN ('new', 'failed', 'gone')
 ORDER BY id DESC;

-- name: entry_feeds
SELECT f.id, f.url, coalesce(f.user_title, f.title) AS title
  FROM feeds AS f
 WHERE f.id IN (SELECT feed_id FROM feed_entries_all WHERE summary_id = :id)
 ORDER BY f.id;

-- name: feed_articles
-- feedsync feeds: per feed, its entries waiting (new), failing, and of those first seen
-- since :week_ago, given up and extracted (revisions are never fetched: not counted).
-- The live database holds the queue and the last 8 days of entries with their links,
-- so on SQLite this reads it alone (news_summary and feed_entries unqualified are
-- main's); on PostgreSQL the tables themselves.
SELECT fe.feed_id,
       sum(CASE WHEN s.state = 'new' THEN 1 ELSE 0 END) AS pending,
       sum(CASE WHEN s.state = 'failed' THEN 1 ELSE 0 END) AS failing,
       sum(CASE WHEN s.state = 'gone' AND s.first_seen_at >= :week_ago THEN 1 ELSE 0 END)
           AS given_up_week,
       sum(CASE WHEN s.state = 'done' AND s.revision_of IS NULL
                 AND s.first_seen_at >= :week_ago THEN 1 ELSE 0 END) AS extracted_week
  FROM news_summary AS s JOIN feed_entries AS fe ON fe.summary_id = s.id
 WHERE s.state IN ('new', 'failed') OR s.first_seen_at >= :week_ago
 GROUP BY fe.feed_id;

-- name: feed_article_errors
-- ... and the reasons, newest first (the caller keeps each feed's first).
SELECT fe.feed_id, s.last_error
  FROM news_summary AS s JOIN feed_entries AS fe ON fe.summary_id = s.id
 WHERE s.last_error IS NOT NULL
   AND (s.state = 'failed' OR (s.state = 'gone' AND s.first_seen_at >= :week_ago))
 ORDER BY s.id DESC;
