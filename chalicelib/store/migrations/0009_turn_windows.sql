-- The hybrid search of conversation.search ranks three legs: the turn's vector, a vector of
-- the turn in its context (the turn before it and the turn; `context_of` names that earlier
-- turn, and a row whose earlier turn changed falls back to its own vector), and a lexical
-- index: each turn search indexes (a live embedding row) is
-- also a BM25 document made of its date, the two turns before it and the turn after it in its
-- thread (among turns search indexes, so a turn that reads as high is never a neighbour), and
-- the turn itself. Kept on the embedding row, so it is written, passed on and tombstoned with
-- the row; the rows around a change are rewritten in the same transaction.
CREATE FUNCTION loom.turn_window(ts timestamptz, earlier2 text, earlier1 text, body text, later1 text)
RETURNS tsvector LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('english'::regconfig, concat_ws(' ',
        to_char(ts AT TIME ZONE 'UTC', 'FMDD FMMonth YYYY'), earlier2, earlier1, body, later1))
$$;

-- Tokens in a document (BM25's document length), not distinct lexemes.
CREATE FUNCTION loom.tsv_tokens(doc tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer FROM unnest(doc) u
$$;

ALTER TABLE loom.conversation_embeddings
    ADD COLUMN window_tsv tsvector,
    ADD COLUMN window_len integer NOT NULL DEFAULT 0,
    ADD COLUMN context_embedding vector,
    ADD COLUMN context_of text;

UPDATE loom.conversation_embeddings SET context_embedding = embedding
WHERE embedding IS NOT NULL AND tombstoned_at IS NULL;

WITH w AS (
    SELECT org, namespace, thread_id, msg_id, model,
        loom.turn_window(ts,
            lag(text, 2) OVER t, lag(text, 1) OVER t, text, lead(text, 1) OVER t) AS doc
    FROM loom.conversation_embeddings
    WHERE tombstoned_at IS NULL
    WINDOW t AS (PARTITION BY org, namespace, thread_id, model ORDER BY ts, msg_id)
)
UPDATE loom.conversation_embeddings e SET window_tsv = w.doc, window_len = loom.tsv_tokens(w.doc)
FROM w WHERE e.org = w.org AND e.namespace = w.namespace AND e.thread_id = w.thread_id
    AND e.msg_id = w.msg_id AND e.model = w.model;

-- A thread's live rows in order: the neighbours a window reads.
CREATE INDEX conversation_embeddings_thread_order_idx ON loom.conversation_embeddings
    (org, namespace, thread_id, model, ts, msg_id) WHERE tombstoned_at IS NULL;

CREATE INDEX conversation_embeddings_window_idx ON loom.conversation_embeddings
    USING gin (window_tsv) WHERE tombstoned_at IS NULL;
