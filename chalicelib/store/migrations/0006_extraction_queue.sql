-- The deferred extraction queue: the source of truth; an SQS message only carries queue_id.
CREATE TABLE loom.memory_extraction_queue (
    queue_id text PRIMARY KEY,
    org text NOT NULL,
    namespace text NOT NULL,
    agent text NOT NULL DEFAULT '-',
    user_id text NOT NULL DEFAULT '-',
    principal text,              -- kind:subject of the enqueuer; NULL with auth off
    read_user_id text,           -- the enqueuer's pinned user, if any
    request jsonb NOT NULL,
    status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'held', 'done', 'failed')),
    attempts integer NOT NULL DEFAULT 0,
    sizes jsonb NOT NULL DEFAULT '{}',
    last_error text NOT NULL DEFAULT '',
    held_reason text NOT NULL DEFAULT '',
    not_before timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz,
    result jsonb,
    retry_requested_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memory_extraction_queue_due_idx ON loom.memory_extraction_queue (not_before)
    WHERE status IN ('pending', 'running');
CREATE INDEX memory_extraction_queue_scope_idx
    ON loom.memory_extraction_queue (org, namespace, principal, status);

-- Deferred replays reuse their evidence rows: one turn is stored once per request.
CREATE UNIQUE INDEX memory_evidence_request_idx
    ON loom.memory_evidence (org, namespace, request_id, idx);
