-- The conversation plane: thread rows, verbatim turns and their embeddings.
CREATE TABLE loom.conversation_threads (
    org text NOT NULL,
    namespace text NOT NULL,
    thread_id text NOT NULL,
    agent text NOT NULL,
    title text NOT NULL DEFAULT '',
    metadata jsonb NOT NULL DEFAULT '{}',
    run_id text NOT NULL DEFAULT '-',
    user_id text NOT NULL DEFAULT '-',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    tombstoned_at timestamptz,
    PRIMARY KEY (org, namespace, thread_id)
);

-- One row per (agent, msg_id) of a thread: two agents logging one turn hold two copies.
CREATE TABLE loom.conversations (
    org text NOT NULL,
    namespace text NOT NULL,
    thread_id text NOT NULL,
    agent text NOT NULL,
    msg_id text NOT NULL,
    role text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content text NOT NULL,
    reasoning text NOT NULL DEFAULT '',
    user_id text NOT NULL DEFAULT '-',
    run_id text NOT NULL DEFAULT '-',
    metadata jsonb NOT NULL DEFAULT '{}',
    tokens integer NOT NULL DEFAULT 0,
    ts timestamptz NOT NULL,
    is_saved boolean NOT NULL DEFAULT false,
    saved_at timestamptz,
    tombstoned_at timestamptz,
    PRIMARY KEY (org, namespace, thread_id, agent, msg_id)
);
CREATE INDEX conversations_thread_ts_idx
    ON loom.conversations (org, namespace, thread_id, ts, msg_id);
CREATE INDEX conversations_ns_ts_idx ON loom.conversations (org, namespace, ts DESC);
CREATE INDEX conversations_ts_idx ON loom.conversations (ts);
CREATE INDEX conversations_content_trgm_idx
    ON loom.conversations USING gin (content gin_trgm_ops);

-- One row per turn and model: the text the vector was built from (first 2,048 characters),
-- the vector or the error that kept it from being built, and the copy it answers for.
CREATE TABLE loom.conversation_embeddings (
    org text NOT NULL,
    namespace text NOT NULL,
    thread_id text NOT NULL,
    msg_id text NOT NULL,
    model text NOT NULL,
    agent text NOT NULL,
    role text NOT NULL,
    user_id text NOT NULL DEFAULT '-',
    run_id text NOT NULL DEFAULT '-',
    text text NOT NULL,
    dim integer NOT NULL DEFAULT 0,
    embedding vector,
    error text,
    ts timestamptz NOT NULL,
    is_saved boolean NOT NULL DEFAULT false,
    saved_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    tombstoned_at timestamptz,
    PRIMARY KEY (org, namespace, thread_id, msg_id, model)
);
CREATE INDEX conversation_embeddings_scope_idx
    ON loom.conversation_embeddings (org, namespace, model, dim)
    WHERE tombstoned_at IS NULL AND embedding IS NOT NULL;
CREATE INDEX conversation_embeddings_user_idx
    ON loom.conversation_embeddings (org, namespace, user_id)
    WHERE tombstoned_at IS NULL AND embedding IS NOT NULL;
