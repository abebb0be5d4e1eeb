-- Per-host politeness shared by every poller: the queries PostgreSQL writes differently
-- from sql/pace.sql. All in seconds since the epoch by the server's clock, so pollers on
-- machines whose clocks differ still agree.

-- name: host_pace_lock
-- The host's row, created when missing and locked (a no-op update) until the end of the
-- transaction: pollers asking for the same host take their turns one after the other,
-- so two never see the same slot free. Also the server's clock.
INSERT INTO host_pace (host) VALUES (:host)
ON CONFLICT (host) DO UPDATE SET next_start = host_pace.next_start
RETURNING next_start, extract(epoch FROM clock_timestamp())::double precision AS now;

-- name: host_pace_set
UPDATE host_pace SET next_start = :next_start WHERE host = :host;

-- name: host_slot_renew
UPDATE host_slots
   SET lease_until = extract(epoch FROM clock_timestamp())::double precision + :lease
 WHERE host = :host AND slot = :slot AND owner = :owner;

-- name: host_holds_renew
UPDATE host_slots
   SET lease_until = extract(epoch FROM clock_timestamp())::double precision + :lease
 WHERE owner = :owner AND slot = -1;

-- name: host_pace_push
INSERT INTO host_pace (host, next_start)
VALUES (:host, extract(epoch FROM clock_timestamp())::double precision + :ahead)
ON CONFLICT (host) DO UPDATE
   SET next_start = GREATEST(host_pace.next_start, excluded.next_start);

-- name: host_wanted
SELECT EXISTS (SELECT 1 FROM host_slots
                WHERE host = :host AND slot = -2
                  AND lease_until > extract(epoch FROM clock_timestamp())::double precision)
       AS wanted;
