-- Limits and budgets (a rule's `limits`, the programme's `budget`): what each counter has used,
-- per campaign, counter (`"{period} {scope} {rule}"`, see rules::limits), whose uses it counts
-- (a member's or wallet's id, a meta value, or '' for the campaign) and bucket (the first day of
-- its period, the day itself for a rolling period). Times and micro-tokens used; written in
-- the credit's transaction, given back by reversals.
CREATE TABLE limit_counters (
    campaign_id TEXT NOT NULL,
    counter     TEXT NOT NULL,
    scope       TEXT NOT NULL,
    bucket      TEXT NOT NULL,
    times       BIGINT NOT NULL,
    tokens      BIGINT NOT NULL,
    PRIMARY KEY (campaign_id, counter, scope, bucket)
) WITHOUT ROWID;

-- Each EARN's uses of the counters, so that its reversals give them back: `returned` the
-- micro-tokens given back so far, `times_returned` whether its one time was (when the earn
-- is reversed in full).
CREATE TABLE limit_uses (
    transaction_id TEXT NOT NULL REFERENCES transactions (id),
    campaign_id    TEXT NOT NULL,
    counter        TEXT NOT NULL,
    scope          TEXT NOT NULL,
    bucket         TEXT NOT NULL,
    tokens         BIGINT NOT NULL,
    returned       BIGINT NOT NULL DEFAULT 0,
    times_returned BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (transaction_id, counter, scope)
) WITHOUT ROWID;
