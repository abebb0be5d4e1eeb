-- Version 6: per-host politeness shared by every poller (as sql/migrations/0006_host_pace.sql).

-- When the next request to a host may start, in seconds since the epoch by the server's
-- clock (one clock for pollers on every machine).
CREATE TABLE host_pace (
    host            TEXT PRIMARY KEY,
    next_start      DOUBLE PRECISION NOT NULL DEFAULT 0
);

-- The requests to a host in flight across pollers: at most [poll] per_host live leases.
CREATE TABLE host_slots (
    host            TEXT NOT NULL,
    slot            INTEGER NOT NULL,
    owner           TEXT NOT NULL,
    lease_until     DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (host, slot)
);
CREATE INDEX host_slots_owner ON host_slots (owner);
