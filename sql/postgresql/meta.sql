-- (PostgreSQL; the meta queries of sql/snapshot.sql. There are no snapshots here: the
-- table holds the lineage and the daemons' heartbeats.)

-- name: meta_all
SELECT key, value FROM meta;

-- name: meta_set
INSERT INTO meta (key, value) VALUES (:key, :value)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
