-- Addresses the SFTP server has banned after repeated failed logins: in the database, so that
-- every node honours a ban and an operator can list and lift them (`rewards sftp bans`,
-- `rewards sftp unban`) (PostgreSQL).
CREATE TABLE sftp_bans (
    address      TEXT PRIMARY KEY,
    failures     BIGINT NOT NULL,
    banned_at    TIMESTAMPTZ NOT NULL,
    banned_until TIMESTAMPTZ NOT NULL
);
