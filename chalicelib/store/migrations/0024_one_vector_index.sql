-- A turn's context vector is now derived from its own vector and the one before it, and
-- hybrid's vector leg reads the index over turns alone, with both similarities of each row it
-- finds. The blend indexes (one per dimension) are no longer read: every vector written paid
-- for them.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT indexname FROM pg_indexes
        WHERE schemaname = 'loom' AND indexname LIKE 'conversation\_blend\_hnsw\_%'
    LOOP
        EXECUTE format('DROP INDEX loom.%I', r.indexname);
    END LOOP;
END $$;
