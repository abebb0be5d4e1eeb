-- Per-host politeness shared by every poller (as sql/pace.sql). All in seconds since the
-- epoch by the server's clock, so pollers on machines whose clocks differ still agree.

-- name: host_pace_lock
-- The host's row, created when missing and locked (a no-op update) until the end of the
-- transaction: pollers asking for the same host take their turns one after the other,
-- so two never see the same slot free. Also the server's clock.
INSERT INTO host_pace (host) VALUES (:host)
ON CONFLICT (host) DO UPDATE SET next_start = host_pace.next_start
RETURNING next_start, extract(epoch FROM clock_timestamp())::double precision AS now;

-- name: host_pace_set
UPDATE host_pace SET next_start = :next_start WHERE host = :host;

-- name: host_slots_taken
SELECT slot FROM host_slots WHERE host = :host AND lease_until > :now;

-- name: host_slot_take
INSERT INTO host_slots (host, slot, owner, lease_until)
VALUES (:host, :slot, :owner, :lease_until)
ON CONFLICT (host, slot) DO UPDATE
   SET owner = excluded.owner, lease_until = excluded.lease_until;

-- name: host_slot_release
DELETE FROM host_slots WHERE host = :host AND slot = :slot AND owner = :owner;

-- name: host_slots_release_owner
DELETE FROM host_slots WHERE owner = :owner;
