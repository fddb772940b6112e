-- Saved messages: a lexical index of each saved turn's whole text, and the titler's bookkeeping.
ALTER TABLE loom.conversations
    ADD COLUMN saved_tsv tsvector,
    ADD COLUMN saved_len integer;
CREATE INDEX conversations_saved_idx
    ON loom.conversations (org, namespace, user_id, (coalesce(saved_at, ts)) DESC, thread_id, msg_id)
    WHERE is_saved AND tombstoned_at IS NULL;
CREATE INDEX conversations_saved_tsv_idx
    ON loom.conversations USING gin (saved_tsv)
    WHERE is_saved AND tombstoned_at IS NULL;
CREATE INDEX conversation_embeddings_saved_idx
    ON loom.conversation_embeddings (org, namespace, user_id, model)
    WHERE is_saved AND tombstoned_at IS NULL AND embedding IS NOT NULL;

-- A thread row the titler wrote for a thread built by appends reads as "appends only".
ALTER TABLE loom.conversation_threads
    ADD COLUMN origin text NOT NULL DEFAULT 'create' CHECK (origin IN ('create', 'titler')),
    ADD COLUMN title_claimed_until timestamptz;
