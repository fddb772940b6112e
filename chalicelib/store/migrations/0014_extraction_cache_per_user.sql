-- The response cache holds what the model read in a person's words. It is kept per org,
-- namespace and user: erasure reaches a person's cached answers, and no hit tells one
-- namespace or user that another sent the same text. Earlier rows name no one, so they go
-- (a cache: the next call asks the model again).
DELETE FROM loom.extraction_cache;
ALTER TABLE loom.extraction_cache
    ADD COLUMN org text NOT NULL,
    ADD COLUMN namespace text NOT NULL,
    ADD COLUMN user_id text NOT NULL;
CREATE INDEX extraction_cache_subject_idx ON loom.extraction_cache (org, namespace, user_id);
