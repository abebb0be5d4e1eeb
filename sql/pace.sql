-- Per-host politeness shared by every process on the database (feedsync/fetch.py HostGate,
-- storage host_turn / host_done). All in seconds since the epoch by the database's clock.
-- Each runs inside one BEGIN IMMEDIATE transaction, which already serializes the
-- processes: the lock query below only reads.

-- name: host_pace_lock
-- When the host's next request may start, and the database's clock (milliseconds).
SELECT coalesce((SELECT next_start FROM host_pace WHERE host = :host), 0) AS next_start,
       (julianday('now') - 2440587.5) * 86400.0 AS now;

-- name: host_pace_set
INSERT INTO host_pace (host, next_start) VALUES (:host, :next_start)
ON CONFLICT (host) DO UPDATE SET next_start = excluded.next_start;

-- name: host_slots_taken
-- The host's slots held by a live lease (a request in flight somewhere, or the host held
-- whole by one process: slot -1, feedsync/politeness/holds.py).
SELECT slot, lease_until, owner FROM host_slots WHERE host = :host AND lease_until > :now;

-- name: host_slot_take
INSERT INTO host_slots (host, slot, owner, lease_until)
VALUES (:host, :slot, :owner, :lease_until)
ON CONFLICT (host, slot) DO UPDATE
   SET owner = excluded.owner, lease_until = excluded.lease_until;

-- name: host_slot_renew
-- A request still running: its slot's lease runs on, from the database's clock now.
UPDATE host_slots SET lease_until = (julianday('now') - 2440587.5) * 86400.0 + :lease
 WHERE host = :host AND slot = :slot AND owner = :owner;

-- name: host_slot_release
DELETE FROM host_slots WHERE host = :host AND slot = :slot AND owner = :owner;

-- name: host_slots_release_owner
-- A process that stops gives back its requests in flight.
DELETE FROM host_slots WHERE owner = :owner;

-- name: host_holds_renew
-- The hosts a process holds whole (slot -1, feedsync/politeness/holds.py): their lease runs on.
UPDATE host_slots SET lease_until = (julianday('now') - 2440587.5) * 86400.0 + :lease
 WHERE owner = :owner AND slot = -1;

-- name: host_pace_push
-- A held host released: the next request anyone sends it starts no earlier than
-- :ahead seconds from now (its pace was kept in the holder's memory).
INSERT INTO host_pace (host, next_start)
VALUES (:host, (julianday('now') - 2440587.5) * 86400.0 + :ahead)
ON CONFLICT (host) DO UPDATE SET next_start = max(next_start, excluded.next_start);

-- name: host_wanted
-- Does a process refused a turn on this held host want it (slot -2, a live lease)?
SELECT EXISTS (SELECT 1 FROM host_slots
                WHERE host = :host AND slot = -2
                  AND lease_until > (julianday('now') - 2440587.5) * 86400.0) AS wanted;

-- name: host_wanted_clear
DELETE FROM host_slots WHERE host = :host AND slot = -2;
