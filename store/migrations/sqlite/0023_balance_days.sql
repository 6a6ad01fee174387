-- Balances in time: a wallet's balance at a past instant is the sum of its transactions recorded
-- (`created_at`) by then. `balance_days` keeps that sum per wallet and UTC day for days closed
-- long enough that nothing can be recorded in them any more (a transaction's `created_at` is
-- the moment it is written), filled when a wallet's balance in time is first asked for; the
-- latest row of a wallet marks how far its days are summed (an empty day's row holds 0). The
-- rest of the way, from the last summed day to the instant, is read through
-- `transactions_wallet_created`.
CREATE INDEX transactions_wallet_created ON transactions (wallet_id, created_at);

CREATE TABLE balance_days (
    wallet_id TEXT NOT NULL,
    -- The day's first instant (UTC).
    day       TEXT NOT NULL,
    -- Micro-tokens: what the day's transactions added to the balance (pending tokens included).
    net       INTEGER NOT NULL,
    PRIMARY KEY (wallet_id, day)
) WITHOUT ROWID;
