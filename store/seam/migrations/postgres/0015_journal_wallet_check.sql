-- The journal's foreign key to the wallets goes: PostgreSQL checked it with a trigger for each
-- inserted row (a query and a key-share lock on the wallet each), 30% of a batch file's insert
-- into the journal. Wallets are never deleted, and every writer of the journal reads or
-- updates the row's wallet in the same transaction; `rewards audit` reports any journal row
-- whose wallet does not exist.
ALTER TABLE transactions DROP CONSTRAINT IF EXISTS transactions_wallet_id_fkey;
