-- wallet.tier_changed, recorded by the database itself: every statement that moves a wallet's
-- tier (an earn, a vesting, a reversal, a transfer, a change to the campaign's tiers) records the
-- event in its own transaction, from the wallet's row before and after. Its data is the JSON of
-- the store's `EventData::TierChanged`; its id a random (version 4) UUID.
CREATE TRIGGER wallets_tier_changed AFTER UPDATE OF tier_id ON wallets
WHEN OLD.tier_id IS DISTINCT FROM NEW.tier_id
BEGIN
    INSERT INTO events (id, org_id, campaign_id, type, subject_id, occurred_at, data)
    VALUES (
        lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'
            || substr(lower(hex(randomblob(2))), 2) || '-'
            || substr('89ab', 1 + (abs(random()) % 4), 1)
            || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))),
        NEW.org_id, NEW.campaign_id, 'wallet.tier_changed', NEW.id, NEW.updated_at,
        json_object('record', 'tier_changed', 'value', json_object(
            'wallet_id', NEW.id,
            'member_id', NEW.owner_id,
            'from', json((SELECT json_object('id', id, 'name', name) FROM tiers WHERE id = OLD.tier_id)),
            'to', json((SELECT json_object('id', id, 'name', name) FROM tiers WHERE id = NEW.tier_id))
        ))
    );
END;

-- wallet.points_expiring: the daily notice of the tokens a wallet's lots hold that expire on a
-- day within the campaign's notice (`expiry_notice_days` ahead; 0: none). One notice per wallet
-- and day, whichever node sends it; the rows of days gone by are deleted by the next sweep.
ALTER TABLE campaign_policies ADD COLUMN expiry_notice_days INTEGER NOT NULL DEFAULT 30;
-- The UTC day the campaign's notices were last looked for (one look a day, by one node).
ALTER TABLE campaign_policies ADD COLUMN expiry_noticed_on TEXT;
CREATE TABLE expiry_notices (
    wallet_id  TEXT NOT NULL,
    expires_on TEXT NOT NULL,
    tokens     INTEGER NOT NULL,
    noticed_at TEXT NOT NULL,
    PRIMARY KEY (wallet_id, expires_on)
);
CREATE INDEX expiry_notices_day ON expiry_notices (expires_on);

-- The dispatcher numbers events by time, then id (the database's own have random ids).
DROP INDEX events_unnumbered;
CREATE INDEX events_unnumbered ON events (occurred_at, id) WHERE seq IS NULL;

-- Retention: events older than 30 days go, with their deliveries and attempts.
CREATE INDEX events_time ON events (occurred_at);
CREATE INDEX deliveries_event ON deliveries (event_id);
CREATE INDEX delivery_attempts_event ON delivery_attempts (event_id);
