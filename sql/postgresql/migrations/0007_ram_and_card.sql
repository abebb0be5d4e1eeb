-- Version 7 (as sql/migrations/0007_ram_and_card.sql): on SQLite the live database in RAM
-- and the complete one on the card. PostgreSQL has no RAM disk and no card: its tables,
-- columns and indexes do not change. The version moves so that "schema version 7" means
-- the same tables and columns on both engines (feedsync migrate relies on it).
SELECT 1;
