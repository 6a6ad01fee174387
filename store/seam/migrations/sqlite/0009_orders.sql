-- Orders: members' redemptions of catalogue rewards, their lines, one redemption
-- code per unit (encrypted), and the bookings of lines that need one. Amounts are whole
-- micro-tokens. Lines keep what was ordered as it was (the product summary, the price), so
-- they name products and variants by id without a foreign key: a later import may remove them.

CREATE TABLE orders (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES organisations (id),
    campaign_id    TEXT NOT NULL REFERENCES campaigns (id),
    -- The client's reference (or one made up): a repeat of the request returns this order.
    reference      TEXT NOT NULL,
    owner_id       TEXT NOT NULL REFERENCES members (id),
    total          INTEGER NOT NULL,
    meta           TEXT,
    -- Paid with points: the wallet and its BURN transaction.
    wallet_id      TEXT REFERENCES wallets (id),
    transaction_id TEXT REFERENCES transactions (id),
    -- Made by `POST /v1/orders/random`.
    random         BOOLEAN NOT NULL,
    -- A digest of the request, to tell its repeat from another request with the same reference.
    fingerprint    TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    UNIQUE (campaign_id, reference)
);
CREATE INDEX orders_campaign_created ON orders (campaign_id, created_at, id);
CREATE INDEX orders_owner_created ON orders (owner_id, created_at, id);

CREATE TABLE order_lines (
    id               TEXT PRIMARY KEY,
    order_id         TEXT NOT NULL REFERENCES orders (id),
    org_id           TEXT NOT NULL,
    campaign_id      TEXT NOT NULL,
    position         INTEGER NOT NULL,
    product_id       TEXT NOT NULL,
    variant_id       TEXT NOT NULL,
    reference        TEXT,
    quantity         INTEGER NOT NULL,
    -- The price of one unit when ordered, and cost x quantity.
    cost             INTEGER NOT NULL,
    total            INTEGER NOT NULL,
    requires_booking BOOLEAN NOT NULL,
    -- JSON object: the product summary as it was when ordered.
    product          TEXT NOT NULL,
    meta             TEXT
);
CREATE INDEX order_lines_order ON order_lines (order_id, position);

CREATE TABLE redemption_codes (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organisations (id),
    line_id     TEXT NOT NULL REFERENCES order_lines (id),
    position    INTEGER NOT NULL,
    -- AES-256-GCM: the nonce, the ciphertext and its tag (see `orders::codes`).
    sealed      BLOB NOT NULL,
    -- HMAC-SHA-256 of the organisation and the code: how a redeem finds it.
    lookup      BLOB NOT NULL,
    -- The last 4 characters, for the masked form.
    tail        TEXT NOT NULL,
    redeemed_at TEXT,
    -- The API key that redeemed it.
    redeemed_by TEXT,
    UNIQUE (org_id, lookup)
);
CREATE INDEX redemption_codes_line ON redemption_codes (line_id, position);

CREATE TABLE bookings (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES organisations (id),
    campaign_id    TEXT NOT NULL REFERENCES campaigns (id),
    order_id       TEXT NOT NULL REFERENCES orders (id),
    line_id        TEXT NOT NULL REFERENCES order_lines (id),
    owner_id       TEXT NOT NULL REFERENCES members (id),
    -- REQUESTED | PENDING | CONFIRMED | UNSUCCESSFUL | CANCELLED
    status         TEXT NOT NULL,
    first_name     TEXT NOT NULL,
    last_name      TEXT NOT NULL,
    email          TEXT,
    phone          TEXT,
    branch_id      TEXT,
    date           TEXT NOT NULL,
    pax            INTEGER NOT NULL,
    notes          TEXT,
    meta           TEXT,
    date_requested TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);
-- A line has at most one booking that is still going ahead.
CREATE UNIQUE INDEX bookings_line_active ON bookings (line_id)
    WHERE status IN ('REQUESTED', 'PENDING', 'CONFIRMED');
CREATE INDEX bookings_campaign_requested ON bookings (campaign_id, date_requested, id);
CREATE INDEX bookings_owner ON bookings (owner_id);

-- How many times an order sold a variant out: with `catalogue_versions`, what tells each node
-- its search index is stale. Kept apart from `catalogue_versions`, which an import locks first:
-- an order locks variants first, and the two orders of locking must not meet on one row.
CREATE TABLE catalogue_sellouts (
    campaign_id TEXT PRIMARY KEY REFERENCES campaigns (id),
    sellouts    INTEGER NOT NULL
);
