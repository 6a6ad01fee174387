-- PostgreSQL drops the journal's foreign key to the wallets here (see its 0015). SQLite keeps
-- it: it costs an index probe a row, and dropping it would rebuild the journal.
SELECT 1;
