-- Balances in time: a wallet's balance at an instant is the sum of its transactions dated
-- (`date`) by then, less what was pending then. `balance_days` keeps that sum per wallet and
-- UTC day, filled the first time someone asks for the wallet's balance at a day beyond what is
-- summed; `wallets.summed_to` says how far: the rows of the days before its day hold, the
-- others are stale. Every write of a transaction dated before `summed_to` brings it back to
-- that date, in the wallet UPDATE that write makes anyway (under the wallet's lock), so no
-- write pays for an index of its own; NULL: nobody asked.
ALTER TABLE wallets ADD COLUMN summed_to TIMESTAMPTZ;

CREATE TABLE balance_days (
    wallet_id TEXT NOT NULL,
    -- The day's first instant (UTC).
    day       TIMESTAMPTZ NOT NULL,
    -- Micro-tokens: what the transactions dated that day added (pending tokens included).
    net       BIGINT NOT NULL,
    PRIMARY KEY (wallet_id, day)
);
