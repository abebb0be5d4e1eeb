-- Version 5: article identity beyond (url, title) (feedsync/identity.py).

-- A staged row that is another version of an earlier one (same GUID in the same feed, or
-- same URL with the title edited, or the URL an earlier page named as its canonical):
-- never fetched, linked to the first row of the story. A row whose page turned out to be
-- an article already in news (same canonical URL, or a near-identical text): linked to
-- that article. link_reason says why, for `feedsync show`.
ALTER TABLE news_summary ADD COLUMN revision_of INTEGER
    REFERENCES news_summary (id) ON DELETE SET NULL;
ALTER TABLE news_summary ADD COLUMN duplicate_of INTEGER REFERENCES news (id) ON DELETE SET NULL;
ALTER TABLE news_summary ADD COLUMN link_reason TEXT;

CREATE INDEX news_summary_guid ON news_summary (guid) WHERE guid IS NOT NULL;
CREATE INDEX news_summary_revision_of ON news_summary (revision_of)
    WHERE revision_of IS NOT NULL;
CREATE INDEX news_summary_duplicate_of ON news_summary (duplicate_of)
    WHERE duplicate_of IS NOT NULL;

-- The page's own canonical URL (<link rel=canonical>, og:url) and a 64-bit simhash of the
-- extracted text (NULL for texts too short to tell).
ALTER TABLE news ADD COLUMN canonical_url TEXT;
ALTER TABLE news ADD COLUMN fingerprint INTEGER;
CREATE INDEX news_canonical_url ON news (canonical_url) WHERE canonical_url IS NOT NULL;
CREATE INDEX news_fetched_at ON news (fetched_at);

-- 'url+title': this feed reuses GUIDs or URLs for different stories ("/live" pages): no
-- revision or duplicate heuristics for its entries.
ALTER TABLE feeds ADD COLUMN identity TEXT NOT NULL DEFAULT 'auto'
    CHECK (identity IN ('auto', 'url+title'));
