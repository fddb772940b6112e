-- A copy a save stored where the transcript did not hold the message (`saved_only`, 0018) is
-- no transcript turn: no transcript read serves it. Its embedding row carries the same mark
-- while no recorded copy of the turn is live, so search filters on it set-based, and the
-- windows and context vectors around it read past it.
ALTER TABLE loom.conversation_embeddings ADD COLUMN saved_only boolean NOT NULL DEFAULT false;

-- A saved-only copy an earlier build's unsave left in place (the namespace recorded then) was
-- answered as staying in the transcript (removed: false): it is kept as a recorded turn. Every
-- other mark stands as 0018 set it. A copy saved before 0018 where the namespace recorded then
-- reads as recorded: it is indistinguishable from one the client appended after saving.
UPDATE loom.conversations SET saved_only = false WHERE saved_only AND NOT is_saved;

UPDATE loom.conversation_embeddings e SET saved_only = true
WHERE e.tombstoned_at IS NULL
    AND EXISTS (SELECT 1 FROM loom.conversations c WHERE c.org = e.org
        AND c.namespace = e.namespace AND c.thread_id = e.thread_id AND c.msg_id = e.msg_id
        AND c.tombstoned_at IS NULL AND c.saved_only)
    AND NOT EXISTS (SELECT 1 FROM loom.conversations c WHERE c.org = e.org
        AND c.namespace = e.namespace AND c.thread_id = e.thread_id AND c.msg_id = e.msg_id
        AND c.tombstoned_at IS NULL AND NOT c.saved_only);

-- The threads holding such a row: windows read past it, it has none, and a context vector read
-- after it falls back to its turn's own vector (as turn_windows rewrites them).
WITH marked AS (
    SELECT DISTINCT org, namespace, thread_id FROM loom.conversation_embeddings
    WHERE saved_only AND tombstoned_at IS NULL
), w AS (
    SELECT e.ctid AS rid, lag(e.msg_id) OVER t AS before_id,
        loom.turn_window(e.ts,
            lag(e.text, 2) OVER t, lag(e.text, 1) OVER t, e.text, lead(e.text, 1) OVER t) AS doc
    FROM loom.conversation_embeddings e JOIN marked m USING (org, namespace, thread_id)
    WHERE e.tombstoned_at IS NULL AND NOT e.saved_only
    WINDOW t AS (PARTITION BY e.org, e.namespace, e.thread_id, e.model ORDER BY e.ts, e.msg_id)
    UNION ALL
    SELECT e.ctid, NULL, NULL FROM loom.conversation_embeddings e
    WHERE e.saved_only AND e.tombstoned_at IS NULL
)
UPDATE loom.conversation_embeddings e SET window_tsv = w.doc,
    window_len = loom.tsv_tokens(w.doc),
    context_embedding = CASE WHEN e.context_of = w.before_id THEN e.context_embedding
        ELSE e.embedding END,
    context_of = CASE WHEN e.context_of = w.before_id THEN e.context_of END
FROM w WHERE e.ctid = w.rid;
