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
-- The host's slots held by a live lease (a request in flight somewhere).
SELECT slot, lease_until FROM host_slots WHERE host = :host AND lease_until > :now;

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
