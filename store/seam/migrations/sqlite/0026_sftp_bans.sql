-- Addresses the SFTP server has banned after repeated failed logins: in the database, so that
-- every node honours a ban and an operator can list and lift them (`rewards sftp bans`,
-- `rewards sftp unban`).
CREATE TABLE sftp_bans (
    address      TEXT PRIMARY KEY,
    failures     INTEGER NOT NULL,
    banned_at    TEXT NOT NULL,
    banned_until TEXT NOT NULL
);
