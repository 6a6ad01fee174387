-- Holds: tokens reserved on a wallet (a checkout waiting for its payment) until they are
-- captured (spent by a BURN), voided or lapse at the hold's expiry. A hold takes its tokens
-- from the wallet's lots as a burn does (recorded in `spends` under the hold's id until it is
-- settled), so neither a spend nor the expiry sweep can take them meanwhile; the balance keeps
-- them until the capture, and `held` says how much of it is reserved: a wallet's lots hold its
-- balance less what is held, plus what it owes.
ALTER TABLE wallets ADD COLUMN held BIGINT NOT NULL DEFAULT 0;

CREATE TABLE holds (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL,
    campaign_id    TEXT NOT NULL,
    wallet_id      TEXT NOT NULL REFERENCES wallets (id),
    -- The client's id for the hold, unique in the organisation (as the 16-byte `idem_key`).
    external_id    TEXT NOT NULL,
    idem_key       BYTEA NOT NULL UNIQUE,
    fingerprint    TEXT NOT NULL,
    amount         BIGINT NOT NULL CHECK (amount > 0),
    currency       TEXT NOT NULL,
    description    TEXT,
    comment        TEXT,
    meta           JSONB,
    -- held | captured | voided | lapsed
    status         TEXT NOT NULL,
    -- When a hold still held lapses (NULL: only a capture or a void ends it).
    expires_at     TIMESTAMPTZ,
    -- captured: the tokens spent and the BURN that spent them.
    captured       BIGINT,
    transaction_id TEXT,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX holds_lapsing ON holds (expires_at) WHERE status = 'held' AND expires_at IS NOT NULL;
CREATE INDEX holds_wallet ON holds (wallet_id, created_at, id);

-- An order line that requires a booking is paid through a hold (captured when its booking is
-- confirmed, voided when it is cancelled or unsuccessful), not by the order's BURN.
ALTER TABLE order_lines ADD COLUMN hold_id TEXT;
