-- Rule-set versions per campaign. The highest version is the active one; earlier versions stay
-- for the record and for rolling back (by setting an old file again as a new version).
CREATE TABLE rule_sets (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organisations (id),
    campaign_id TEXT NOT NULL REFERENCES campaigns (id),
    version     BIGINT NOT NULL,
    source      TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (campaign_id, version)
);
