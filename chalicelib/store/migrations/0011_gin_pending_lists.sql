-- The GIN indexes search reads while turns keep arriving. A new row's entries wait in the
-- index's pending list until it is merged; every search scans that list whole, so at the
-- 4 MB default a busy namespace's BM25 search ran up to twice as slow between merges. At
-- 256 kB the list is merged every few hundred appends, each merge small.
ALTER INDEX loom.conversation_embeddings_window_idx SET (gin_pending_list_limit = 256);
ALTER INDEX loom.conversations_saved_tsv_idx SET (gin_pending_list_limit = 256);
ALTER INDEX loom.conversations_content_trgm_idx SET (gin_pending_list_limit = 256);
