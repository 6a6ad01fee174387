-- The batch a transaction came from, so that a file taken up again after a crash recognises
-- the rows its earlier attempt already credited.
ALTER TABLE transactions ADD COLUMN batch_id TEXT;
