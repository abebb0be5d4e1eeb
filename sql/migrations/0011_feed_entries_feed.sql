-- Version 11: a feed's links found by the feed. Since version 7 feed_entries is keyed
-- (summary_id, feed_id), so that a save appends a new entry's links at the end of the
-- card's table; nothing found a feed's own links but reading them all. feedsync serve
-- pages a feed's articles (sql_reading.news_window): walking the newest articles and
-- keeping the feed's costs the articles newer than the page's last one, which for a
-- quiet feed (nothing for months) or a small one is most of the card (0.4 s at 100,000
-- articles on a PC, bench scenario 11). With this index a feed's page reads the feed's
-- own links. Its cost on the card: a save appends each feed's new links at that feed's
-- end of the index, one page per feed with new entries (bench/analysis.md, scenario 11).
CREATE INDEX feed_entries_feed ON feed_entries (feed_id, summary_id);
