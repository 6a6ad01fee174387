-- (PostgreSQL) The audit trail: every change an operator makes (CLI as `local`, the admin API, the console),
-- written in the same transaction as the change, plus sign-ins and their failures. Append-only
-- and chained: each entry's `hash` covers its fields and the `prev_hash` of the one before, so
-- an edit, a removal or a reordering is found by `rewards audit-log verify`. `before` and
-- `after` are JSON text as hashed (secrets redacted before they are written).
CREATE TABLE audit_log (
    seq        BIGINT PRIMARY KEY,
    at         TIMESTAMPTZ NOT NULL,
    actor_kind TEXT NOT NULL,
    actor_id   TEXT,
    actor_name TEXT NOT NULL,
    operation  TEXT NOT NULL,
    org_id     TEXT,
    target     TEXT,
    before     TEXT,
    after      TEXT,
    address    TEXT,
    user_agent TEXT,
    request_id TEXT,
    outcome    TEXT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_org ON audit_log (org_id, seq);
CREATE INDEX audit_log_actor ON audit_log (actor_id, seq);

-- The chain's head, one row: the last entry's number and hash (a removed last entry is found
-- against it), and where the kept chain starts (entries older than the retention period are
-- removed by a recorded prune, which moves the start).
CREATE TABLE audit_head (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    seq        BIGINT NOT NULL,
    hash       TEXT NOT NULL,
    first_seq  BIGINT NOT NULL,
    first_prev TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash, first_seq, first_prev) VALUES (
    1, 0,
    '0000000000000000000000000000000000000000000000000000000000000000', 1,
    '0000000000000000000000000000000000000000000000000000000000000000'
);

-- Operators: the people who run the service and the programme. `role` is owner, admin,
-- org-admin, support or viewer; the last three act on the organisations in `operator_orgs`
-- only. Passwords are argon2id (PHC string); a new or reset password must be changed at the
-- next sign-in.
CREATE TABLE operators (
    id                   TEXT PRIMARY KEY,
    email                TEXT NOT NULL UNIQUE,
    role                 TEXT NOT NULL,
    password_hash        TEXT NOT NULL,
    must_change_password BOOLEAN NOT NULL,
    allowed_addresses    TEXT,
    -- TOTP: the secret sealed with the service's data key, set once enrolment begins; usable
    -- once confirmed; the last step whose code was taken (a code is taken once).
    totp_secret          BYTEA,
    totp_confirmed_at    TIMESTAMPTZ,
    totp_last_step       BIGINT,
    disabled_at          TIMESTAMPTZ,
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL
);

CREATE TABLE operator_orgs (
    operator_id TEXT NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    org_id      TEXT NOT NULL REFERENCES organisations (id),
    PRIMARY KEY (operator_id, org_id)
);

-- Operators' sessions: the token is given to the operator once and kept as its SHA-256 hash. A
-- session ends at `expires_at`, after a while unused (`last_seen_at`), or when revoked.
CREATE TABLE operator_sessions (
    id           TEXT PRIMARY KEY,
    token_hash   TEXT NOT NULL UNIQUE,
    operator_id  TEXT NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    created_at   TIMESTAMPTZ NOT NULL,
    last_seen_at TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    address      TEXT,
    user_agent   TEXT,
    revoked_at   TIMESTAMPTZ
);
CREATE INDEX operator_sessions_operator ON operator_sessions (operator_id, id);

-- Operators' automation tokens: for scripts, with a scope list and an expiry; shown once, kept
-- as their SHA-256 hash. Each action a token takes is recorded as its operator's.
CREATE TABLE operator_tokens (
    id           TEXT PRIMARY KEY,
    token_hash   TEXT NOT NULL UNIQUE,
    operator_id  TEXT NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ
);
CREATE INDEX operator_tokens_operator ON operator_tokens (operator_id, id);

-- Failed sign-ins per account (`account:<e-mail>`) and per source address (`address:<ip>`):
-- too many within a window lock the key until `locked_until`, on every node.
CREATE TABLE sign_in_failures (
    key          TEXT PRIMARY KEY,
    failures     BIGINT NOT NULL,
    window_start TIMESTAMPTZ NOT NULL,
    locked_until TIMESTAMPTZ
);

-- Recovery codes of operators' second factor, issued once TOTP is confirmed: kept as SHA-256
-- hashes, each usable once.
CREATE TABLE operator_recovery_codes (
    operator_id TEXT NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    code_hash   TEXT NOT NULL,
    used_at     TIMESTAMPTZ,
    PRIMARY KEY (operator_id, code_hash)
);

-- The service's settings operators change (`require_2fa`), by name.
CREATE TABLE service_settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Support finds a member by e-mail or by user id at any identity provider.
CREATE INDEX members_org_email ON members (org_id, lower(email)) WHERE deleted_at IS NULL;
CREATE INDEX members_org_user_id ON members (org_id, user_id) WHERE deleted_at IS NULL;
