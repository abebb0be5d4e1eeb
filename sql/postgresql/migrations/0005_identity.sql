-- Version 5: article identity beyond (url, title) (as sql/migrations/0005_identity.sql).

ALTER TABLE news_summary ADD COLUMN revision_of BIGINT
    REFERENCES news_summary (id) ON DELETE SET NULL;
ALTER TABLE news_summary ADD COLUMN duplicate_of BIGINT REFERENCES news (id) ON DELETE SET NULL;
ALTER TABLE news_summary ADD COLUMN link_reason TEXT;

CREATE INDEX news_summary_guid ON news_summary (guid) WHERE guid IS NOT NULL;
CREATE INDEX news_summary_revision_of ON news_summary (revision_of)
    WHERE revision_of IS NOT NULL;
CREATE INDEX news_summary_duplicate_of ON news_summary (duplicate_of)
    WHERE duplicate_of IS NOT NULL;

ALTER TABLE news ADD COLUMN canonical_url TEXT;
ALTER TABLE news ADD COLUMN fingerprint BIGINT;  -- a signed 64-bit simhash
CREATE INDEX news_canonical_url ON news (canonical_url) WHERE canonical_url IS NOT NULL;
CREATE INDEX news_fetched_at ON news (fetched_at);

ALTER TABLE feeds ADD COLUMN identity TEXT NOT NULL DEFAULT 'auto'
    CHECK (identity IN ('auto', 'url+title'));
