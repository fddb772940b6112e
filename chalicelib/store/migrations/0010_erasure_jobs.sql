-- Erasure: one row per erasure.request (its subject, progress and counts), and the user a
-- drop's detail came from, so a user erasure reaches loom.memory_drops.
CREATE TABLE loom.erasure_jobs (
    job_id text PRIMARY KEY,
    org text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('user', 'namespace_list')),
    user_id text,            -- kind user: the person erased
    namespaces text[],       -- NULL: every namespace of the org (kind user only)
    purge boolean NOT NULL DEFAULT false,
    subject_sha256 text NOT NULL,
    status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'done', 'failed')),
    step integer NOT NULL DEFAULT 0,    -- the step in progress (0: the conversation plane)
    thread_cursor text[],              -- the last (namespace, thread_id) of step 0 done
    tombstoned jsonb NOT NULL DEFAULT '{}',
    removed jsonb NOT NULL DEFAULT '{}',
    requested_by text NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    last_error text NOT NULL DEFAULT '',
    lease_until timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
-- One open job per subject: a repeated request while it runs answers that job.
CREATE UNIQUE INDEX erasure_jobs_open_idx ON loom.erasure_jobs (org, subject_sha256)
    WHERE status IN ('pending', 'running');
CREATE INDEX erasure_jobs_due_idx ON loom.erasure_jobs (created_at)
    WHERE status IN ('pending', 'running');

ALTER TABLE loom.memory_drops ADD COLUMN user_id text NOT NULL DEFAULT '-';
