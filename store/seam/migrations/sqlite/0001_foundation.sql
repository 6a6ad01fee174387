-- Organisations, campaigns, API keys and members. Timestamps are RFC 3339 UTC text; JSON is text.

CREATE TABLE organisations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE campaigns (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organisations (id),
    name       TEXT NOT NULL,
    currency   TEXT NOT NULL,
    logo       TEXT,
    favicon    TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX campaigns_org ON campaigns (org_id, id);

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organisations (id),
    campaign_id TEXT NOT NULL REFERENCES campaigns (id),
    api_key     TEXT NOT NULL UNIQUE,
    secret_hash BLOB NOT NULL,
    permissions TEXT NOT NULL,
    version     TEXT,
    read_only   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
CREATE INDEX api_keys_org ON api_keys (org_id, id);

-- A deleted member keeps its row (id, organisation, dates) so ledger records that point at it
-- stay valid; every personal field, identifiers included, is set to NULL. NULLs never collide in
-- the unique indexes, so a deleted member's identifiers are free for a new member.
CREATE TABLE members (
    id                        TEXT PRIMARY KEY,
    org_id                    TEXT NOT NULL REFERENCES organisations (id),
    first_name                TEXT,
    last_name                 TEXT,
    email                     TEXT,
    phone                     TEXT,
    status                    TEXT NOT NULL,
    idp                       TEXT,
    user_id                   TEXT,
    external_id               TEXT,
    meta                      TEXT,
    communication_preferences TEXT,
    created_at                TEXT NOT NULL,
    updated_at                TEXT NOT NULL,
    deleted_at                TEXT
);
CREATE UNIQUE INDEX members_org_external_id ON members (org_id, external_id);
CREATE UNIQUE INDEX members_org_idp_user_id ON members (org_id, idp, user_id);
CREATE INDEX members_org_live ON members (org_id, id) WHERE deleted_at IS NULL;
