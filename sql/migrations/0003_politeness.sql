-- Version 3: polite fetching (feedsync/fetch.py, feedsync/decide.py).

-- A feed that moved: moved_from keeps the URL it was added under (the config file still
-- names it); a 301 is only followed for good once seen on two polls in a row
-- (redirect_to, redirect_seen), because captive portals answer 301 to everything.
ALTER TABLE feeds ADD COLUMN moved_from TEXT;
ALTER TABLE feeds ADD COLUMN redirect_to TEXT;
ALTER TABLE feeds ADD COLUMN redirect_seen INTEGER NOT NULL DEFAULT 0;
-- What the last successful poll had to say without failing: malformed XML, entries
-- skipped and why.
ALTER TABLE feeds ADD COLUMN last_warning TEXT;

CREATE INDEX feeds_moved_from ON feeds (moved_from) WHERE moved_from IS NOT NULL;

-- Hosts that asked us to wait (429, 503: Retry-After, or our own doubling backoff). Every
-- process reads it before asking the host anything, so the daemon and a one-shot run
-- both respect it.
CREATE TABLE hosts (
    host            TEXT PRIMARY KEY,
    not_before      TEXT NOT NULL,
    backoff_count   INTEGER NOT NULL DEFAULT 0,
    reason          TEXT
) WITHOUT ROWID;
