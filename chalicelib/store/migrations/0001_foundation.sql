-- Foundation: namespaces, hashed tokens, live settings and the audit trail.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE loom.namespaces (
    org text NOT NULL,
    namespace text NOT NULL,
    conversation_logging_enabled boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org, namespace)
);

CREATE TABLE loom.tokens (
    token_hash text PRIMARY KEY,
    org text NOT NULL,
    role text NOT NULL CHECK (role IN ('viewer', 'writer', 'admin', 'org_admin')),
    namespace text,
    read_scope text NOT NULL DEFAULT 'namespace'
        CHECK (read_scope IN ('namespace', 'own_user', 'own_session')),
    read_user_id text,
    subject text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX tokens_org_idx ON loom.tokens (org);

CREATE TABLE loom.settings (
    name text PRIMARY KEY,
    value text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE loom.audit_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ts timestamptz NOT NULL DEFAULT now(),
    org text NOT NULL,
    namespace text NOT NULL DEFAULT '',
    op text NOT NULL,
    principal text NOT NULL,
    body_sha256 text NOT NULL
);
CREATE INDEX audit_log_org_ts_idx ON loom.audit_log (org, ts DESC);
