-- MCP sessions: who the client is, and its implicit run (closed after an idle spell).
CREATE TABLE loom.mcp_sessions (
    session_id text PRIMARY KEY,
    org text NOT NULL,
    principal text,
    client_name text NOT NULL DEFAULT '',
    namespace text NOT NULL DEFAULT '',
    agent text NOT NULL DEFAULT '-',
    run_id text NOT NULL,
    run_started_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now()
);
