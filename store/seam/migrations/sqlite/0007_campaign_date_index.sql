-- Campaign listings by date need only (campaign_id, date): a campaign belongs to one
-- organisation, so the organisation's id in front only lengthened every key (batch loads spent
-- their time comparing it).
DROP INDEX transactions_org_campaign_date;
CREATE INDEX transactions_campaign_date ON transactions (campaign_id, date);
