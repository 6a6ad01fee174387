-- Referrals (#63). A member's referral code (made on request, random, unique in the
-- organisation; `converted` counts the referees of its owner that converted, each conversion
-- taking the next number under the row's lock, so the count a referrer's tier reads is exact).
CREATE TABLE referral_codes (
    member_id  TEXT PRIMARY KEY REFERENCES members (id),
    org_id     TEXT NOT NULL REFERENCES organisations (id),
    code       TEXT NOT NULL,
    converted  BIGINT NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX referral_codes_org_code ON referral_codes (org_id, code);

-- A member (the referee) brought by another (the referrer) with its code: once per referee.
-- `pending` until the referee's first completed earn (or the activity its campaign's rules
-- name) converts it, in `campaign_id`.
CREATE TABLE referrals (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES organisations (id),
    referrer_id  TEXT NOT NULL REFERENCES members (id),
    referee_id   TEXT NOT NULL REFERENCES members (id),
    code         TEXT NOT NULL,
    status       TEXT NOT NULL,
    campaign_id  TEXT REFERENCES campaigns (id),
    converted_at TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX referrals_referee ON referrals (referee_id);
CREATE INDEX referrals_referrer ON referrals (referrer_id, created_at, id);
CREATE INDEX referrals_pending ON referrals (org_id, referee_id) WHERE status = 'pending';
