-- Version 2: the meta table (sql/migrations/0002_snapshot_meta.sql on SQLite).
--
-- On SQLite it carries the snapshot bookkeeping, with triggers counting every change.
-- A PostgreSQL database has no snapshots (pg_dump, base backups and replication are the
-- server's business), so only the table and the lineage are here: no content_version
-- triggers, which would make one meta row a point every writer waits on. The daemons'
-- heartbeats live in it (daemon_* keys), as on SQLite.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

INSERT INTO meta (key, value) VALUES ('lineage', md5(random()::text || clock_timestamp()::text));
