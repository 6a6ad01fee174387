-- Organisations, campaigns, API keys and members (PostgreSQL).

CREATE TABLE organisations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE campaigns (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organisations (id),
    name       TEXT NOT NULL,
    currency   TEXT NOT NULL,
    logo       TEXT,
    favicon    TEXT,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX campaigns_org ON campaigns (org_id, id);

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organisations (id),
    campaign_id TEXT NOT NULL REFERENCES campaigns (id),
    api_key     TEXT NOT NULL UNIQUE,
    secret_hash BYTEA NOT NULL,
    permissions JSONB NOT NULL,
    version     TEXT,
    read_only   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMPTZ NOT NULL,
    revoked_at  TIMESTAMPTZ
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
    meta                      JSONB,
    communication_preferences JSONB,
    created_at                TIMESTAMPTZ NOT NULL,
    updated_at                TIMESTAMPTZ NOT NULL,
    deleted_at                TIMESTAMPTZ
);
CREATE UNIQUE INDEX members_org_external_id ON members (org_id, external_id);
CREATE UNIQUE INDEX members_org_idp_user_id ON members (org_id, idp, user_id);
CREATE INDEX members_org_live ON members (org_id, id) WHERE deleted_at IS NULL;
