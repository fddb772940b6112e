-- Session briefs: the live brief per key, and every revision of it. Never embedded.
CREATE TABLE loom.session_briefs (
    org text NOT NULL,
    namespace text NOT NULL,
    brief_key text NOT NULL,
    revision integer NOT NULL,
    project text NOT NULL DEFAULT '',
    repo text NOT NULL DEFAULT '',
    branch text NOT NULL DEFAULT '',
    head_sha text NOT NULL DEFAULT '',
    agent text NOT NULL,
    sections jsonb NOT NULL,
    rendered text NOT NULL,
    author text NOT NULL,
    trigger text NOT NULL,
    actor text NOT NULL,
    source_sessions text[] NOT NULL DEFAULT '{}',
    events_total bigint NOT NULL DEFAULT 0,
    source_chars bigint NOT NULL DEFAULT 0,
    last_session_id text NOT NULL DEFAULT '',
    last_event_cursor text NOT NULL DEFAULT '',
    client_summary text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz,
    PRIMARY KEY (org, namespace, brief_key)
);
CREATE INDEX session_briefs_recent_idx ON loom.session_briefs (org, namespace, updated_at DESC);
CREATE INDEX session_briefs_sessions_idx ON loom.session_briefs USING gin (source_sessions);

CREATE TABLE loom.session_brief_revisions (
    org text NOT NULL,
    namespace text NOT NULL,
    brief_key text NOT NULL,
    revision integer NOT NULL,
    sections jsonb NOT NULL,
    rendered text NOT NULL,
    author text NOT NULL,
    trigger text NOT NULL,
    actor text NOT NULL,
    head_sha text NOT NULL DEFAULT '',
    session_id text NOT NULL DEFAULT '',
    event_cursor text NOT NULL DEFAULT '',
    events integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org, namespace, brief_key, revision)
);
