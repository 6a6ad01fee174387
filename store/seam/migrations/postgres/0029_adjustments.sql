-- Manual adjustments: tokens an operator credits (amount > 0) or debits (amount < 0) by hand,
-- with a reason code and a comment. Applied at once (its EARN or BURN in `transaction_id`,
-- under the key `adjustment:<id>`) or, above the owner's threshold, pending until a second
-- operator approves or rejects it. `requested_by` and `decided_by` are actor keys (an
-- operator's id, or `local:<os user>` for the command line); the names are as they were.
CREATE TABLE adjustments (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL,
    campaign_id    TEXT NOT NULL,
    wallet_id      TEXT NOT NULL REFERENCES wallets (id),
    amount         BIGINT NOT NULL,
    reason         TEXT NOT NULL,
    comment        TEXT NOT NULL,
    external_id    TEXT,
    fingerprint    TEXT NOT NULL,
    batch_id       TEXT,
    status         TEXT NOT NULL,
    requested_by   TEXT NOT NULL,
    requested_name TEXT NOT NULL,
    decided_by     TEXT,
    decided_name   TEXT,
    decided_at     TIMESTAMPTZ,
    note           TEXT,
    transaction_id TEXT,
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX adjustments_external ON adjustments (org_id, external_id)
    WHERE external_id IS NOT NULL;
CREATE INDEX adjustments_campaign ON adjustments (campaign_id, created_at, id);
CREATE INDEX adjustments_waiting ON adjustments (campaign_id, status, created_at, id);
