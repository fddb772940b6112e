-- Tokens that end. An id to list and revoke a token by: the token is shown once, at mint, and
-- only its hash is kept, so an operator needs another handle on it. An optional expiry: a
-- token past it answers 401 as a revoked one does. Rows minted before get ids in turn and
-- never expire.
ALTER TABLE loom.tokens ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE loom.tokens ADD CONSTRAINT tokens_id_key UNIQUE (id);
ALTER TABLE loom.tokens ADD COLUMN expires_at timestamptz;
