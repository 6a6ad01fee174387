-- Limits and budgets (a rule's `limits`, the programme's `budget`): what each counter has used,
-- per campaign, counter (`"{period} {scope} {rule}"`, see rules::limits), whose uses it counts
-- (a member's or wallet's id, a meta value, or '' for the campaign) and bucket (the first day of
-- its period, the day itself for a rolling period). Times and micro-tokens used; written in
-- the credit's transaction, given back by reversals.
CREATE TABLE limit_counters (
    campaign_id TEXT NOT NULL,
    counter     TEXT NOT NULL,
    scope       TEXT NOT NULL,
    bucket      DATE NOT NULL,
    times       BIGINT NOT NULL,
    tokens      BIGINT NOT NULL,
    PRIMARY KEY (campaign_id, counter, scope, bucket)
);

-- Each EARN's uses of the counters, so that its reversals give them back: one row an earn
-- (a credit writes one, however many limits it used), `uses` a JSON array of its uses:
-- counter, scope, bucket, micro-tokens, micro-tokens given back, whether its time was.
CREATE TABLE limit_uses (
    transaction_id TEXT PRIMARY KEY REFERENCES transactions (id),
    campaign_id    TEXT NOT NULL,
    uses           TEXT NOT NULL
);
