-- A repeated API earn is told from another earn under its id by the first request with it.
CREATE INDEX earn_requests_earn_id ON earn_requests (org_id, earn_id);

-- Requests the ledger refused for the state of what they named (a burn or an order the balance
-- could not cover, an order out of stock, a correction beyond its original or a shortfall the
-- campaign refuses): under the request's key (`transactions.idem_key` for burns and
-- corrections, the reference for orders) the same request is refused again the same way, and
-- another request is `already_exists` naming the field that differs.
CREATE TABLE refusals (
    idem_key    BYTEA PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    code        TEXT NOT NULL,
    field       TEXT,
    message     TEXT NOT NULL,
    -- insufficient_balance: the micro-tokens that were available.
    available   BIGINT,
    created_at  TIMESTAMPTZ NOT NULL
);

-- The reversals of a wallet in date order, for the spend that pays what they are owed
-- (`burn::UNPAID`) without reading the rest of its history.
CREATE INDEX transactions_reversals ON transactions (wallet_id, date, id) WHERE kind = 'REVERSAL';
