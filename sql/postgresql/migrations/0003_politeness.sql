-- Version 3: polite fetching (as sql/migrations/0003_politeness.sql).

ALTER TABLE feeds ADD COLUMN moved_from TEXT;
ALTER TABLE feeds ADD COLUMN redirect_to TEXT;
ALTER TABLE feeds ADD COLUMN redirect_seen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE feeds ADD COLUMN last_warning TEXT;

CREATE INDEX feeds_moved_from ON feeds (moved_from) WHERE moved_from IS NOT NULL;

-- Hosts that asked us to wait (429, 503: Retry-After, or our own doubling backoff). Every
-- poller, on any machine, reads it before asking the host anything.
CREATE TABLE hosts (
    host            TEXT PRIMARY KEY,
    not_before      TEXT NOT NULL,
    backoff_count   INTEGER NOT NULL DEFAULT 0,
    reason          TEXT
);
