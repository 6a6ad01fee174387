-- What each transaction that spends took from each earn's lot (a burn, an order paid with
-- points), so that a refund can give the tokens back to the lots they came from, with those
-- lots' expiry. No foreign keys: each row is written in the same database transaction as the
-- transaction it belongs to, and a key would cost an index probe a row.
CREATE TABLE spends (
    transaction_id TEXT NOT NULL,
    earn_id        TEXT NOT NULL,
    amount         BIGINT NOT NULL CHECK (amount > 0),
    PRIMARY KEY (transaction_id, earn_id)
);

-- A correction (a refund of a burn) names the transaction it corrects; the index finds the
-- corrections of one transaction, and holds only the rows that have one.
ALTER TABLE transactions ADD COLUMN corrects TEXT;
CREATE INDEX transactions_corrects ON transactions (corrects) WHERE corrects IS NOT NULL;
