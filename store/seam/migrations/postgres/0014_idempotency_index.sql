-- Idempotency by the 16-byte key (migration 13); the index of the three texts goes.
CREATE UNIQUE INDEX transactions_idem_key ON transactions (idem_key);
DROP INDEX transactions_org_kind_external_id;
