-- What an extraction read beside its turns, by request: its tags, observation date, earlier
-- turns, served keys, session values, instructions and a typed record's schema. `loom reextract`
-- replays a request with them. It holds a person's words, so erasure reaches it.
CREATE TABLE loom.memory_evidence_requests (
    org text NOT NULL,
    namespace text NOT NULL,
    user_id text NOT NULL,
    request_id text NOT NULL,
    context jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org, namespace, user_id, request_id)
);

-- A model answer that did not parse was still paid for: its drop row carries the tokens.
ALTER TABLE loom.memory_drops
    ADD COLUMN tokens_in integer NOT NULL DEFAULT 0,
    ADD COLUMN tokens_out integer NOT NULL DEFAULT 0;

-- Cached answers expire (LOOM_EXTRACTION_CACHE_TTL_DAYS); the pruning pass reads them by age.
CREATE INDEX extraction_cache_created_idx ON loom.extraction_cache (created_at);
