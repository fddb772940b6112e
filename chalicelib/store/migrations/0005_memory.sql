-- The memory plane: durable facts (and verbatim chunks and digests), their versions, the
-- evidence they were extracted from, operator policies, drops and the extraction cache.
CREATE TABLE loom.memories (
    org text NOT NULL,
    namespace text NOT NULL,
    user_id text NOT NULL DEFAULT '-',
    key text NOT NULL,
    kind text NOT NULL DEFAULT 'fact' CHECK (kind IN ('fact', 'record', 'chunk', 'digest')),
    value text NOT NULL,
    tags text[] NOT NULL DEFAULT '{}',
    version integer NOT NULL DEFAULT 1,
    pinned boolean NOT NULL DEFAULT false,
    locked boolean NOT NULL DEFAULT false,
    source text NOT NULL DEFAULT 'set',
    agent text NOT NULL DEFAULT '-',
    session_id text NOT NULL DEFAULT '-',
    content_hash text NOT NULL,
    valid_at timestamptz,
    observation_date date,
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', left(value, 100000))) STORED,
    embed_model text,
    dim integer NOT NULL DEFAULT 0,
    embedding vector,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    retired_at timestamptz,
    PRIMARY KEY (org, namespace, user_id, key)
);
CREATE INDEX memories_scope_idx ON loom.memories (org, namespace, user_id)
    WHERE retired_at IS NULL;
CREATE INDEX memories_hash_idx ON loom.memories (org, namespace, content_hash)
    WHERE retired_at IS NULL;
CREATE INDEX memories_tsv_idx ON loom.memories USING gin (search_tsv) WHERE retired_at IS NULL;

CREATE TABLE loom.memory_versions (
    org text NOT NULL,
    namespace text NOT NULL,
    user_id text NOT NULL,
    key text NOT NULL,
    version integer NOT NULL,
    value text NOT NULL,
    tags text[] NOT NULL DEFAULT '{}',
    verdict text NOT NULL,
    source text NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org, namespace, user_id, key, version)
);

CREATE TABLE loom.memory_blacklist (
    org text NOT NULL,
    namespace text NOT NULL DEFAULT '',
    pattern text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org, namespace, pattern)
);

-- The turns an extraction read: kept whether or not anything was extracted.
CREATE TABLE loom.memory_evidence (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org text NOT NULL,
    namespace text NOT NULL,
    user_id text NOT NULL DEFAULT '-',
    agent text NOT NULL DEFAULT '-',
    session_id text NOT NULL DEFAULT '-',
    request_id text NOT NULL,
    idx integer NOT NULL,
    role text NOT NULL,
    name text NOT NULL DEFAULT '',
    content text NOT NULL,
    ts timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memory_evidence_scope_idx ON loom.memory_evidence (org, namespace, ts DESC);
CREATE INDEX memory_evidence_trgm_idx ON loom.memory_evidence USING gin (content gin_trgm_ops);

CREATE TABLE loom.memory_evidence_links (
    org text NOT NULL,
    namespace text NOT NULL,
    user_id text NOT NULL,
    key text NOT NULL,
    version integer NOT NULL,
    evidence_id bigint NOT NULL REFERENCES loom.memory_evidence (id) ON DELETE CASCADE,
    span text NOT NULL DEFAULT '',
    PRIMARY KEY (org, namespace, user_id, key, version, evidence_id)
);

CREATE TABLE loom.extraction_policies (
    org text NOT NULL,
    namespace text NOT NULL DEFAULT '',  -- '' is the org's own policy
    policy text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org, namespace)
);

CREATE TABLE loom.memory_drops (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org text NOT NULL,
    namespace text NOT NULL,
    stage text NOT NULL,
    reason text NOT NULL,
    count integer NOT NULL DEFAULT 1,
    detail text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memory_drops_scope_idx ON loom.memory_drops (org, namespace, created_at DESC);

CREATE TABLE loom.extraction_cache (
    prompt_sha256 text PRIMARY KEY,
    response text NOT NULL,
    tokens_in integer NOT NULL DEFAULT 0,
    tokens_out integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);
