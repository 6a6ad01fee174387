-- The ledger (PostgreSQL): policies, tiers, wallets, transactions, expiry lots and earn requests.
-- Token amounts are whole micro-tokens (1 token = 1,000,000) in 64-bit integers: exact, and
-- summed exactly by the database (the audit relies on it).

CREATE TABLE campaign_policies (
    campaign_id TEXT PRIMARY KEY REFERENCES campaigns (id),
    min_balance BIGINT NOT NULL DEFAULT 0,
    -- never | days:N | end-of-month | end-of-year
    expiry      TEXT NOT NULL DEFAULT 'never',
    updated_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE tiers (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organisations (id),
    campaign_id TEXT NOT NULL REFERENCES campaigns (id),
    name        TEXT NOT NULL,
    precedence  BIGINT NOT NULL,
    -- Lifetime earned micro-tokens from which a wallet holds this tier.
    threshold   BIGINT NOT NULL,
    benefits    JSONB NOT NULL,
    image_url   TEXT,
    created_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (campaign_id, name)
);

CREATE TABLE wallets (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organisations (id),
    campaign_id TEXT NOT NULL REFERENCES campaigns (id),
    owner_id    TEXT NOT NULL REFERENCES members (id),
    external_id TEXT,
    name        TEXT,
    currency    TEXT NOT NULL,
    balance     BIGINT NOT NULL DEFAULT 0,
    -- Lifetime EARN total: what tiers follow.
    earned      BIGINT NOT NULL DEFAULT 0,
    tier_id     TEXT REFERENCES tiers (id),
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX wallets_org_external_id ON wallets (org_id, external_id);
CREATE INDEX wallets_org_owner ON wallets (org_id, owner_id);
CREATE INDEX wallets_org_campaign ON wallets (org_id, campaign_id, id);

CREATE TABLE transactions (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    campaign_id   TEXT NOT NULL,
    wallet_id     TEXT NOT NULL REFERENCES wallets (id),
    -- EARN | BURN | EXPIRY
    kind          TEXT NOT NULL,
    amount        BIGINT NOT NULL CHECK (amount >= 0),
    -- The earn's id or the burn's externalId (unique per organisation and kind); NULL for EXPIRY.
    external_id   TEXT,
    -- EARN: the amount the rules were given, as exact decimal text.
    source_amount TEXT,
    currency      TEXT NOT NULL,
    description   TEXT,
    comment       TEXT,
    meta          JSONB,
    date          TIMESTAMPTZ NOT NULL,
    -- EARN: the compact rule trace and the rule-set version (NULL: the default rule set).
    trace         TEXT,
    rule_version  BIGINT,
    -- BURN: a hash of the request, to tell a replay from a conflicting reuse of externalId.
    fingerprint   TEXT,
    created_at    TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX transactions_org_kind_external_id ON transactions (org_id, kind, external_id);
CREATE INDEX transactions_wallet_date ON transactions (wallet_id, date);
CREATE INDEX transactions_org_campaign_date ON transactions (org_id, campaign_id, date);

-- Earned tokens not yet spent or expired. Burns consume the oldest first.
CREATE TABLE lots (
    id             TEXT PRIMARY KEY,
    wallet_id      TEXT NOT NULL REFERENCES wallets (id),
    transaction_id TEXT NOT NULL REFERENCES transactions (id),
    amount         BIGINT NOT NULL,
    remaining      BIGINT NOT NULL CHECK (remaining >= 0),
    earned_at      TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ
);
CREATE INDEX lots_wallet_open ON lots (wallet_id, earned_at, id) WHERE remaining > 0;
CREATE INDEX lots_expiring ON lots (expires_at) WHERE remaining > 0;

-- API earn submissions: stored durably at 202, then processed by workers.
CREATE TABLE earn_requests (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL,
    campaign_id    TEXT NOT NULL,
    earn_id        TEXT NOT NULL,
    wallet_id      TEXT NOT NULL,
    body           JSONB NOT NULL,
    -- accepted | processing | completed | rejected | duplicate
    status         TEXT NOT NULL,
    reason         TEXT,
    transaction_id TEXT,
    tokens         BIGINT,
    attempts       BIGINT NOT NULL DEFAULT 0,
    claimed_until  TIMESTAMPTZ,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX earn_requests_pending ON earn_requests (created_at) WHERE status IN ('accepted', 'processing');
