-- Ledger exports (PostgreSQL): a day's transactions are those recorded that day (created_at), so a file
-- loaded today with earns dated last week still reaches the warehouse, in today's export.
-- Rows are recorded in time order, so this index grows at its end.
CREATE INDEX transactions_org_created ON transactions (org_id, created_at);

-- An organisation's daily export: at `at_minute` (minutes after midnight, UTC) the previous
-- day's transactions are written to its SFTP tree's exports/ folder. `next_day` is the first
-- day not yet exported (days missed while no node ran are caught up in turn). A node claims
-- a day by moving `claimed_until` forward while the day is due and unclaimed, so several nodes
-- sharing the database write each day's file once.
CREATE TABLE export_schedules (
    org_id        TEXT PRIMARY KEY REFERENCES organisations (id),
    at_minute     BIGINT NOT NULL CHECK (at_minute >= 0 AND at_minute < 1440),
    -- parquet | csv
    format        TEXT NOT NULL,
    next_day      DATE NOT NULL,
    claimed_until TIMESTAMPTZ,
    -- The last day written: its file name, rows and when.
    last_file     TEXT,
    last_rows     BIGINT,
    last_at       TIMESTAMPTZ,
    created_at    TIMESTAMPTZ NOT NULL
);
