-- Pending points: an earn whose tokens vest later (its campaign's policy or a rule says so) is
-- recorded at once, but its tokens are in the wallet's `pending`, not its balance, until they
-- vest: its lot is set aside holding nothing (so nothing can spend or expire it), and the sweep
-- gives the tokens to the lot on `vests_at`. A reversal meanwhile takes them off `amount` (what
-- is still pending); the earn is `cancelled` when nothing is left. `counted`: the earn counted
-- toward lifetime earnings (and so tiers) when it was credited, as the policy said then;
-- otherwise it counts when it vests. A wallet's balance plus its pending equals the sum of its
-- transactions.
ALTER TABLE wallets ADD COLUMN pending BIGINT NOT NULL DEFAULT 0;

CREATE TABLE pending_earns (
    transaction_id TEXT PRIMARY KEY REFERENCES transactions (id),
    wallet_id      TEXT NOT NULL REFERENCES wallets (id),
    -- Micro-tokens still pending (what vested, once vested).
    amount         BIGINT NOT NULL CHECK (amount >= 0),
    vests_at       TIMESTAMPTZ NOT NULL,
    counted        BOOLEAN NOT NULL,
    -- pending | vested | cancelled
    status         TEXT NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    -- When it vested or was cancelled.
    settled_at     TIMESTAMPTZ
);
CREATE INDEX pending_earns_vesting ON pending_earns (vests_at) WHERE status = 'pending';
CREATE INDEX pending_earns_wallet ON pending_earns (wallet_id, created_at);

-- The campaign's pending policy: days after the earn's date its tokens vest (0: at once),
-- whether pending tokens count toward tiers, and whether expiry counts from the earn or the
-- vesting.
ALTER TABLE campaign_policies ADD COLUMN pending_days INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_policies ADD COLUMN pending_counts_tier BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE campaign_policies ADD COLUMN expiry_from TEXT NOT NULL DEFAULT 'earn';
