-- A tier keeps the id the client gave it in a catalogue document as its handle, so that
-- searches and later imports can name it by that id as well as by the service's own.
ALTER TABLE tiers ADD COLUMN handle TEXT;
CREATE UNIQUE INDEX tiers_campaign_handle ON tiers (campaign_id, handle);
