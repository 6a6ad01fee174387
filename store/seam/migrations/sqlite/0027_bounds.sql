-- How far back a campaign lets an earn be dated (NULL: back to 1970; see `DateWindow`).
ALTER TABLE campaign_policies ADD COLUMN earn_max_age_days INTEGER;

-- Day sums an earlier defect summed wrong: for a transaction dated before 1677-09-22 or from
-- 2262-04-11 on (outside the range of chrono's day truncation), or a sum cut at an instant that
-- is not a day's first, a wallet's days were cut at the untruncated instant. Those wallets'
-- days are dropped and summed again when next asked about (`balance_at`). Found through the
-- (wallet_id, date) index, two seeks per summed wallet.
UPDATE wallets SET summed_to = NULL
WHERE summed_to IS NOT NULL AND (
    summed_to < '1677-09-22' OR summed_to >= '2262-04-11'
    OR substr(summed_to, 12, 8) <> '00:00:00'
    OR EXISTS (SELECT 1 FROM transactions t WHERE t.wallet_id = wallets.id AND t.date < '1677-09-22')
    OR EXISTS (SELECT 1 FROM transactions t WHERE t.wallet_id = wallets.id AND t.date >= '2262-04-11')
);
DELETE FROM balance_days WHERE NOT EXISTS (
    SELECT 1 FROM wallets w WHERE w.id = balance_days.wallet_id AND w.summed_to IS NOT NULL
);

-- Deliveries asked for by hand (redeliveries and tests), which an organisation may make at
-- most `MANUAL_PER_HOUR` of in an hour: counted through this index.
ALTER TABLE deliveries ADD COLUMN manual BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX deliveries_manual ON deliveries (org_id, created_at) WHERE manual;

-- The dispatcher fans a run of numbered events out a few endpoints a transaction (see
-- `Dispatch`): events up to `fanned_seq` have all their deliveries; those after it up to
-- `fanning_to` have theirs for the endpoints up to `fanned_endpoint` (by id). Every event
-- numbered before this migration was fanned out when numbered.
ALTER TABLE event_dispatch ADD COLUMN fanned_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE event_dispatch ADD COLUMN fanning_to INTEGER NOT NULL DEFAULT 0;
ALTER TABLE event_dispatch ADD COLUMN fanned_endpoint TEXT;
UPDATE event_dispatch SET fanned_seq = last_seq, fanning_to = last_seq;
CREATE INDEX events_seq ON events (seq) WHERE seq IS NOT NULL;

-- Until when a round of the endpoint's deliveries is in flight (claimed, not yet recorded):
-- such an endpoint is its sender's, not due for another (see `endpoints_due`).
ALTER TABLE webhook_endpoints ADD COLUMN sending_until TEXT;
