-- Hybrid search reads one vector leg instead of two: an HNSW index over the blend of each
-- turn's vector and its context vector (their sum, whose cosine ranks both at once), the leg
-- returning both similarities. The index over context vectors alone is no longer read.
-- Indexes are per dimension (created as a model's first vectors arrive); each dimension that
-- has one over turns alone gets its blend index here.
DO $$
DECLARE
    r record;
    dim integer;
BEGIN
    FOR r IN SELECT indexname FROM pg_indexes
        WHERE schemaname = 'loom' AND indexname ~ '^conversation_embeddings_hnsw_[0-9]+$'
    LOOP
        dim := substring(r.indexname FROM '[0-9]+$')::integer;
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS %I ON loom.conversation_embeddings'
            ' USING hnsw (((embedding + context_embedding)::vector(%s)) vector_cosine_ops)'
            ' WHERE dim = %s AND tombstoned_at IS NULL AND embedding IS NOT NULL'
            ' AND context_embedding IS NOT NULL',
            'conversation_blend_hnsw_' || dim, dim, dim);
    END LOOP;
    -- Dropped last: the builds above let reads go on, the drop holds the table only to commit.
    FOR r IN SELECT indexname FROM pg_indexes
        WHERE schemaname = 'loom' AND indexname LIKE 'conversation\_context\_hnsw\_%'
    LOOP
        EXECUTE format('DROP INDEX loom.%I', r.indexname);
    END LOOP;
END $$;
