-- A transaction's idempotency key as 16 bytes (the SHA-256 of organisation, kind and external
-- id, cut short: see ledger::transactions::idem_key) instead of the three texts in the unique
-- index. Filled here for an existing ledger (SQLite's migrator does it in Rust); migration 14
-- indexes them.
ALTER TABLE transactions ADD COLUMN idem_key BYTEA;
UPDATE transactions
SET idem_key = substring(sha256(convert_to(org_id || ':' || kind || ':' || external_id, 'UTF8'))
    FROM 1 FOR 16)
WHERE external_id IS NOT NULL;
