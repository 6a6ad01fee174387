-- SFTP users issued by operators, their public keys, and the batch files received.

CREATE TABLE sftp_users (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES organisations (id),
    username      TEXT NOT NULL UNIQUE,
    -- argon2id, PHC string format; NULL for a user who logs in with keys only.
    password_hash TEXT,
    disabled_at   TEXT,
    created_at    TEXT NOT NULL
);
CREATE INDEX sftp_users_org ON sftp_users (org_id, username);

-- A key logs in as one user only: its fingerprint is unique across all users.
CREATE TABLE sftp_keys (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES sftp_users (id) ON DELETE CASCADE,
    fingerprint TEXT NOT NULL UNIQUE,
    public_key  TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX sftp_keys_user ON sftp_keys (user_id);

CREATE TABLE batches (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES organisations (id),
    file_name     TEXT NOT NULL,
    size          INTEGER NOT NULL,
    sha256        TEXT NOT NULL,
    -- sftp | inbox (placed by other means, found by the watcher)
    source        TEXT NOT NULL,
    username      TEXT,
    -- received | processing | completed | failed | duplicate
    state         TEXT NOT NULL,
    duplicate_of  TEXT,
    rows_total    INTEGER,
    rows_loaded   INTEGER,
    rows_rejected INTEGER,
    summary       TEXT,
    error         TEXT,
    attempts      INTEGER NOT NULL DEFAULT 0,
    claimed_until TEXT,
    received_at   TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE INDEX batches_org ON batches (org_id, received_at);
-- One live batch per content in an organisation; a failed one frees its content for a retry.
CREATE UNIQUE INDEX batches_content ON batches (org_id, sha256)
    WHERE state IN ('received', 'processing', 'completed');
CREATE INDEX batches_waiting ON batches (received_at) WHERE state IN ('received', 'processing');
