-- The reward catalogue of each campaign (PostgreSQL), as its last import left it. Ids are the
-- client's own, unique within the campaign. Prices are whole micro-tokens, like the ledger's
-- amounts. Rows keep the document's order (`position`) so that an export gives the file back.

CREATE TABLE categories (
    campaign_id TEXT NOT NULL REFERENCES campaigns (id),
    id          TEXT NOT NULL,
    name        TEXT NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (campaign_id, id)
);

CREATE TABLE tags (
    campaign_id TEXT NOT NULL REFERENCES campaigns (id),
    id          TEXT NOT NULL,
    name        TEXT NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (campaign_id, id)
);

CREATE TABLE products (
    campaign_id       TEXT NOT NULL REFERENCES campaigns (id),
    id                TEXT NOT NULL,
    name              TEXT NOT NULL,
    short_description TEXT,
    description       TEXT,
    book_in_advance   BOOLEAN NOT NULL,
    category_id       TEXT,
    primary_image     TEXT,
    -- JSON array of image addresses.
    secondary_images  JSONB NOT NULL,
    website           TEXT,
    -- JSON object of booleans `mon`..`sun`.
    weekdays          JSONB NOT NULL,
    -- How likely a random order picks it, relative to the others.
    weight            DOUBLE PRECISION NOT NULL,
    -- The imported embedding: little-endian f32s. NULL: the service computes one from the text.
    embedding         BYTEA,
    position          INTEGER NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (campaign_id, id),
    FOREIGN KEY (campaign_id, category_id) REFERENCES categories (campaign_id, id)
);

CREATE TABLE product_tags (
    campaign_id TEXT NOT NULL,
    product_id  TEXT NOT NULL,
    tag_id      TEXT NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (campaign_id, product_id, tag_id),
    FOREIGN KEY (campaign_id, product_id) REFERENCES products (campaign_id, id) ON DELETE CASCADE,
    FOREIGN KEY (campaign_id, tag_id) REFERENCES tags (campaign_id, id)
);

CREATE TABLE branches (
    campaign_id     TEXT NOT NULL,
    product_id      TEXT NOT NULL,
    id              TEXT NOT NULL,
    name            TEXT NOT NULL,
    -- JSON object: the address lines, `latitude` and `longitude`.
    address         JSONB,
    -- JSON object: `contactName`, `email`, `phoneNumber`.
    contact_details JSONB,
    position        INTEGER NOT NULL,
    PRIMARY KEY (campaign_id, product_id, id),
    FOREIGN KEY (campaign_id, product_id) REFERENCES products (campaign_id, id) ON DELETE CASCADE
);

CREATE TABLE variants (
    campaign_id          TEXT NOT NULL,
    id                   TEXT NOT NULL,
    product_id           TEXT NOT NULL,
    name                 TEXT NOT NULL,
    category             TEXT,
    description          TEXT,
    offer_details        TEXT,
    terms_and_conditions TEXT,
    price                BIGINT NOT NULL,
    tier_id              TEXT REFERENCES tiers (id),
    available            BOOLEAN NOT NULL,
    -- Units left; NULL when not limited.
    stock                BIGINT,
    position             INTEGER NOT NULL,
    PRIMARY KEY (campaign_id, id),
    FOREIGN KEY (campaign_id, product_id) REFERENCES products (campaign_id, id) ON DELETE CASCADE
);
CREATE INDEX variants_product ON variants (campaign_id, product_id);

-- Bumped by every import: each node's search index follows it (see `catalogue::index`).
CREATE TABLE catalogue_versions (
    campaign_id TEXT PRIMARY KEY REFERENCES campaigns (id),
    version     BIGINT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
