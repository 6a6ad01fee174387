-- No lot row for each earn: a wallet's EARNs are spent oldest first, so a position per wallet
-- says what is left (see store/src/ledger/fifo.rs), and only what breaks that order has a row
-- in lots_aside. An EARN keeps its own expiry time; the wallet the earliest expiry of what it
-- holds, which the expiry sweep looks for.
ALTER TABLE transactions ADD COLUMN expires_at TEXT;
ALTER TABLE wallets ADD COLUMN fifo_date TEXT;
ALTER TABLE wallets ADD COLUMN fifo_id TEXT;
ALTER TABLE wallets ADD COLUMN fifo_taken INTEGER NOT NULL DEFAULT 0;
ALTER TABLE wallets ADD COLUMN expires_next TEXT;

CREATE TABLE lots_aside (
    transaction_id TEXT PRIMARY KEY REFERENCES transactions (id),
    wallet_id      TEXT NOT NULL REFERENCES wallets (id),
    earned_at      TEXT NOT NULL,
    remaining      INTEGER NOT NULL CHECK (remaining >= 0),
    expires_at     TEXT
);
CREATE INDEX lots_aside_wallet ON lots_aside (wallet_id, earned_at, transaction_id);

-- The previous shape's lots become positions: a wallet's position is its oldest open lot, with
-- what was spent of it taken (FIFO burns and expiry leave the open lots as the newest earns).
-- An earn after that position whose lot does not hold its whole amount (spent or expired out of
-- turn, or credited without a lot) is set aside with what its lot holds. A wallet without an
-- open lot is positioned after its last earn, all taken.
UPDATE transactions SET expires_at = lots.expires_at FROM lots
WHERE lots.transaction_id = transactions.id AND lots.expires_at IS NOT NULL;
UPDATE wallets SET fifo_date = oldest.earned_at, fifo_id = oldest.transaction_id,
    fifo_taken = oldest.amount - oldest.remaining
FROM (SELECT wallet_id, earned_at, transaction_id, amount, remaining,
          ROW_NUMBER() OVER (PARTITION BY wallet_id ORDER BY earned_at, transaction_id) AS n
      FROM lots WHERE remaining > 0) AS oldest
WHERE oldest.wallet_id = wallets.id AND oldest.n = 1;
UPDATE wallets SET fifo_date = last.date, fifo_id = last.id, fifo_taken = last.amount
FROM (SELECT wallet_id, date, id, amount,
          ROW_NUMBER() OVER (PARTITION BY wallet_id ORDER BY date DESC, id DESC) AS n
      FROM transactions WHERE kind = 'EARN') AS last
WHERE last.wallet_id = wallets.id AND last.n = 1 AND wallets.fifo_id IS NULL;
INSERT INTO lots_aside (transaction_id, wallet_id, earned_at, remaining, expires_at)
SELECT t.id, t.wallet_id, t.date, COALESCE(l.remaining, 0), t.expires_at
FROM transactions t JOIN wallets w ON w.id = t.wallet_id
LEFT JOIN lots l ON l.transaction_id = t.id
WHERE t.kind = 'EARN' AND (t.date, t.id) > (w.fifo_date, w.fifo_id)
  AND COALESCE(l.remaining, 0) <> t.amount;
UPDATE wallets SET expires_next =
    (SELECT MIN(expires_at) FROM lots l WHERE l.wallet_id = wallets.id AND l.remaining > 0);
DROP TABLE lots;
-- Burns read a wallet's earns in (date, id) order from its position: with the id in the index,
-- earns of the same date (a file's rows dated by day) come in order without a sort of them all.
DROP INDEX transactions_wallet_date;
CREATE INDEX transactions_wallet_date ON transactions (wallet_id, date, id);
CREATE INDEX wallets_expires_next ON wallets (expires_next) WHERE expires_next IS NOT NULL;
