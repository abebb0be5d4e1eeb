-- Version 6: per-host politeness shared by every process on the database
-- (feedsync/fetch.py HostGate, storage host_turn / host_done).

-- When the next request to a host may start ([fetch] host_delay after the start reserved
-- last), in seconds since the epoch by the database's clock. A process reserves a start in
-- one short transaction and sleeps until it outside any transaction.
CREATE TABLE host_pace (
    host            TEXT PRIMARY KEY,
    next_start      REAL NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- The requests to a host in flight, across processes: at most [poll] per_host rows (slot
-- 0 .. per_host - 1) with a lease not yet over. A slot is taken before the request and
-- given back after its answer; a poller that died loses its slots when the lease ends
-- (the request timeout plus a margin, counted from the reserved start).
CREATE TABLE host_slots (
    host            TEXT NOT NULL,
    slot            INTEGER NOT NULL,
    owner           TEXT NOT NULL,
    lease_until     REAL NOT NULL,
    PRIMARY KEY (host, slot)
) WITHOUT ROWID;
CREATE INDEX host_slots_owner ON host_slots (owner);
