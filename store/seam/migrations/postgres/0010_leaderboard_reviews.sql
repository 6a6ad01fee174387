-- The leaderboard's snapshots and members' reviews (PostgreSQL).

-- When a wallet's lifetime earnings last grew: the leaderboard ranks a tie by who reached the
-- score first. Wallets credited before this column existed take their latest EARN's time.
ALTER TABLE wallets ADD COLUMN earned_at TIMESTAMPTZ;
UPDATE wallets SET earned_at = (SELECT MAX(t.created_at) FROM transactions t
    WHERE t.wallet_id = wallets.id AND t.kind = 'EARN' AND t.amount > 0)
WHERE earned > 0;

-- One row per campaign: the published snapshot (`generation`, 0 before the first), when it read
-- the ledger, and who builds the next one and when. A node claims a build by moving
-- `claimed_until` forward while the build is due and unclaimed, so several nodes sharing the
-- database build one snapshot per interval.
CREATE TABLE leaderboards (
    campaign_id   TEXT PRIMARY KEY REFERENCES campaigns (id),
    generation    BIGINT NOT NULL,
    built_at      TIMESTAMPTZ,
    entries       BIGINT NOT NULL,
    due_at        TIMESTAMPTZ NOT NULL,
    claimed_until TIMESTAMPTZ
);

-- A snapshot's ranking, and each member's place in it (two tables rather than an index on
-- `member_id`: each is written in its own key's order, so a build appends to both instead of
-- scattering a million index inserts). The published generation and the one before it are
-- kept (a reader that saw the previous generation a moment ago still finds it); older ones are
-- deleted by the next build. Names are not copied here: a page reads them from `members`, so a
-- rename or an erasure shows at once.
CREATE TABLE leaderboard_entries (
    campaign_id TEXT NOT NULL,
    generation  BIGINT NOT NULL,
    rank        BIGINT NOT NULL,
    member_id   TEXT NOT NULL,
    points      BIGINT NOT NULL,
    PRIMARY KEY (campaign_id, generation, rank)
);

CREATE TABLE leaderboard_members (
    campaign_id TEXT NOT NULL,
    generation  BIGINT NOT NULL,
    member_id   TEXT NOT NULL,
    rank        BIGINT NOT NULL,
    PRIMARY KEY (campaign_id, generation, member_id)
);

-- Members' reviews of a campaign's vouchers (a product or variant id of its catalogue, kept as
-- given, like order lines: a later import may remove it). `moderation`: `open` (shown unless
-- its profanity score or its reports pass the configured thresholds), `approved` (shown
-- whatever is reported later) or `removed` (gone from the API; kept, so the member cannot post
-- the same review again).
CREATE TABLE reviews (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL REFERENCES organisations (id),
    campaign_id     TEXT NOT NULL REFERENCES campaigns (id),
    member_id       TEXT NOT NULL REFERENCES members (id),
    voucher_id      TEXT NOT NULL,
    partner_id      TEXT NOT NULL,
    rating          BIGINT NOT NULL CHECK (rating BETWEEN 1 AND 5),
    review_text     TEXT NOT NULL,
    profanity_score DOUBLE PRECISION NOT NULL,
    moderation      TEXT NOT NULL,
    -- The latest of the distinct members who reported it, and how many they are.
    reported_by_id  TEXT REFERENCES members (id),
    reports         BIGINT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (campaign_id, member_id, voucher_id)
);
CREATE INDEX reviews_campaign_created ON reviews (campaign_id, created_at, id);
CREATE INDEX reviews_campaign_voucher ON reviews (campaign_id, voucher_id, created_at, id);
CREATE INDEX reviews_campaign_partner ON reviews (campaign_id, partner_id, created_at, id);
CREATE INDEX reviews_org_open ON reviews (org_id, created_at, id) WHERE moderation = 'open';

CREATE TABLE review_reports (
    review_id  TEXT NOT NULL REFERENCES reviews (id),
    member_id  TEXT NOT NULL REFERENCES members (id),
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (review_id, member_id)
);
