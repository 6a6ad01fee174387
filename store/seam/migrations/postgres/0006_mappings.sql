-- An organisation's batch-file mappings: how its files' columns become earns. `pattern` is a
-- file-name glob (`*` for every file); the document is the validated mapping as JSON.
CREATE TABLE mappings (
    org_id TEXT NOT NULL REFERENCES organisations (id),
    pattern TEXT NOT NULL,
    document JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, pattern)
);
