-- A member's activities (#63): what a member did that rules with `on = "activity"` may award,
-- recorded over the API (`POST /v1/members/{id}/activities`), from a batch file's rows, or by
-- the platform itself (`member.signed_up`, `member.birthday`, `review.published`,
-- `order.first`), each in a campaign. `external_id` is unique in the organisation: a repeat
-- answers the first, and `fingerprint` tells a repeat from another activity under the same id;
-- `batch_id` names the file a row of which recorded it. `awarded_at` is set once the member's
-- wallet in the campaign was credited (NULL: the earn worker awards it), `awards` the JSON list
-- of what was.
CREATE TABLE activities (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organisations (id),
    campaign_id TEXT NOT NULL REFERENCES campaigns (id),
    member_id   TEXT NOT NULL REFERENCES members (id),
    external_id TEXT NOT NULL,
    type        TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    attributes  TEXT,
    fingerprint TEXT NOT NULL,
    source      TEXT NOT NULL,
    batch_id    TEXT,
    awards      TEXT,
    awarded_at  TEXT,
    created_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX activities_org_external_id ON activities (org_id, external_id);
CREATE INDEX activities_member ON activities (member_id, campaign_id, occurred_at, id);
CREATE INDEX activities_waiting ON activities (created_at, id) WHERE awarded_at IS NULL;

-- A member's birth date (YYYY-MM-DD, text on both backends so that its month and day read the
-- same): the day of its `member.birthday` activity, in the campaign's programme's time zone.
ALTER TABLE members ADD COLUMN birth_date TEXT;
CREATE INDEX members_birthday ON members (org_id, substr(birth_date, 6, 5))
    WHERE birth_date IS NOT NULL;

-- The last day (in its programme's time zone) each campaign's birthdays were looked for: one
-- node looks, once a day.
CREATE TABLE birthday_sweeps (
    campaign_id TEXT PRIMARY KEY REFERENCES campaigns (id),
    swept_on    TEXT NOT NULL
);
