-- A transaction's idempotency key as 16 bytes (the SHA-256 of organisation, kind and external
-- id, cut short: see ledger::transactions::idem_key) instead of the three texts in the unique
-- index. SQLite has no SHA-256 in SQL: the migrator fills the keys of an existing ledger in
-- Rust after this migration (backend::migrations::fill_idem_keys); migration 14 indexes them.
ALTER TABLE transactions ADD COLUMN idem_key BLOB;
