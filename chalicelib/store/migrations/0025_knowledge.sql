-- Knowledge: documents a namespace publishes for its agents, cut into chunks that are embedded
-- and indexed for BM25 (docs/decisions/0023-knowledge.md).
CREATE TABLE loom.knowledge_documents (
    org text NOT NULL,
    namespace text NOT NULL,
    uri text NOT NULL,
    title text NOT NULL DEFAULT '',
    text text NOT NULL,
    tags text[] NOT NULL DEFAULT '{}',
    author text NOT NULL DEFAULT '',
    version integer NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org, namespace, uri)
);
-- knowledge.list pages newest first; tags filter with @> (all of them).
CREATE INDEX knowledge_documents_recent_idx
    ON loom.knowledge_documents (org, namespace, updated_at DESC, uri);
CREATE INDEX knowledge_documents_tags_idx ON loom.knowledge_documents USING gin (tags);
-- The agent-tag rule reads a document's agent: tags alone.
CREATE INDEX knowledge_documents_author_idx ON loom.knowledge_documents (org, author);

-- A chunk that reads as high is kept as written (withheld): no vector (dim -1) and an empty
-- tsvector, so neither leg can find it.
CREATE TABLE loom.knowledge_chunks (
    org text NOT NULL,
    namespace text NOT NULL,
    uri text NOT NULL,
    ordinal integer NOT NULL,
    text text NOT NULL,
    withheld boolean NOT NULL DEFAULT false,
    search_tsv tsvector GENERATED ALWAYS AS (
        CASE WHEN withheld THEN ''::tsvector ELSE to_tsvector('english'::regconfig, text) END
    ) STORED,
    embed_model text,
    dim integer NOT NULL DEFAULT 0,
    embedding vector,
    PRIMARY KEY (org, namespace, uri, ordinal),
    FOREIGN KEY (org, namespace, uri) REFERENCES loom.knowledge_documents (org, namespace, uri)
        ON DELETE CASCADE
);
CREATE INDEX knowledge_chunks_vector_scope_idx
    ON loom.knowledge_chunks (org, namespace, embed_model, dim) WHERE NOT withheld;
CREATE INDEX knowledge_chunks_tsv_idx ON loom.knowledge_chunks USING gin (search_tsv)
    WHERE NOT withheld;
