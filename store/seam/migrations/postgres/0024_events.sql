-- Events out: what happened in a programme, recorded in the same transaction as the change it
-- describes (a transactional outbox), then numbered and fanned out to webhook endpoints.
CREATE TABLE events (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    -- NULL: an event of the organisation's (a member's, a batch file's without a campaign).
    campaign_id TEXT,
    type        TEXT NOT NULL,
    -- The id of the record the event is about (a transaction's, a member's...): what erasing a
    -- member finds its events by.
    subject_id  TEXT,
    occurred_at TIMESTAMPTZ NOT NULL,
    -- The record the event carries, as the store's JSON snapshot of it at the change; the API
    -- renders it in the shape of the version asked for.
    data        TEXT NOT NULL,
    -- The event's place in its organisation's feed, given once it has committed (by the one
    -- dispatcher at a time, in the order it sees them), so a reader paging by it never skips an
    -- event that committed late. NULL: not yet numbered.
    seq         BIGINT
);
CREATE INDEX events_unnumbered ON events (id) WHERE seq IS NULL;
CREATE UNIQUE INDEX events_feed ON events (org_id, seq);
CREATE INDEX events_type ON events (org_id, type, seq);
CREATE INDEX events_subject ON events (subject_id);

-- The dispatcher's place: the last number given. One row; whoever holds it numbers.
CREATE TABLE event_dispatch (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    last_seq BIGINT NOT NULL
);
INSERT INTO event_dispatch (id, last_seq) VALUES (1, 0);

CREATE TABLE webhook_endpoints (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL,
    -- NULL: the organisation's every campaign.
    campaign_id     TEXT,
    url             TEXT NOT NULL,
    description     TEXT,
    -- A JSON array of event types; empty: every type.
    event_types     JSONB NOT NULL,
    -- The API version whose shapes its deliveries carry.
    api_version     TEXT NOT NULL,
    -- The signing secret (whsec_...), encrypted with the service's data key.
    secret          BYTEA NOT NULL,
    -- During a rotation: the secret before, still signing until `previous_until`.
    previous_secret BYTEA,
    previous_until  TIMESTAMPTZ,
    -- enabled | disabled
    status          TEXT NOT NULL,
    disabled_reason TEXT,
    -- Since when every attempt has failed (NULL: the last one succeeded).
    failing_since   TIMESTAMPTZ,
    -- While it fails: its deliveries wait until then (the pause grows with the failing time).
    paused_until    TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX webhook_endpoints_org ON webhook_endpoints (org_id, created_at);

-- One event to one endpoint: pending until an attempt succeeds (delivered) or the retries run
-- out (failed). A worker claims a due delivery by moving `claimed_until` forward.
CREATE TABLE deliveries (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    endpoint_id   TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id      TEXT NOT NULL REFERENCES events (id),
    -- pending | delivered | failed
    status        TEXT NOT NULL,
    attempts      BIGINT NOT NULL DEFAULT 0,
    next_at       TIMESTAMPTZ NOT NULL,
    claimed_until TIMESTAMPTZ,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX deliveries_due ON deliveries (endpoint_id, next_at) WHERE status = 'pending';
CREATE INDEX deliveries_endpoint ON deliveries (endpoint_id, created_at);

-- Every attempt of a delivery, for the endpoint's log.
CREATE TABLE delivery_attempts (
    id           TEXT PRIMARY KEY,
    delivery_id  TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    endpoint_id  TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    attempted_at TIMESTAMPTZ NOT NULL,
    -- The receiver's HTTP status (NULL: no answer: refused, timed out, closed).
    status_code  BIGINT,
    latency_ms   BIGINT NOT NULL,
    succeeded    BOOLEAN NOT NULL,
    -- The first KiB of the answer's body, or what went wrong.
    response     TEXT
);
CREATE INDEX delivery_attempts_endpoint ON delivery_attempts (endpoint_id, attempted_at);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id);
