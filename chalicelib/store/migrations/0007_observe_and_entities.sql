-- The observe plane (episodic tool observations) and entities on memory rows.
CREATE TABLE loom.observations (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org text NOT NULL,
    namespace text NOT NULL,
    agent text NOT NULL DEFAULT '-',
    user_id text NOT NULL DEFAULT '-',
    session_id text NOT NULL,
    tool text NOT NULL DEFAULT '',
    action text NOT NULL,
    input text NOT NULL DEFAULT '',
    output text NOT NULL DEFAULT '',
    files text[] NOT NULL DEFAULT '{}',
    ts timestamptz NOT NULL DEFAULT now(),
    crystallized_at timestamptz,
    distilled_at timestamptz,
    distill_claimed_until timestamptz
);
CREATE INDEX observations_session_idx ON loom.observations (org, namespace, session_id, ts);
CREATE INDEX observations_ready_idx ON loom.observations (crystallized_at)
    WHERE crystallized_at IS NOT NULL AND distilled_at IS NULL;

ALTER TABLE loom.memories ADD COLUMN entities text[];
CREATE INDEX memories_no_entities_idx ON loom.memories (updated_at) WHERE entities IS NULL;
CREATE INDEX memories_no_vector_idx ON loom.memories (updated_at)
    WHERE dim = 0 AND retired_at IS NULL;
