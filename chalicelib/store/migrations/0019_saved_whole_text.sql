-- A saved message's BM25 index reads its whole text. A tsvector holds at most 1 MB, which a
-- text of many distinct words can pass: such a text is indexed as far as its first 500,000
-- characters, as every saved message was before.
CREATE OR REPLACE FUNCTION loom.saved_tsvector(body text) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN to_tsvector('simple', body);
EXCEPTION WHEN program_limit_exceeded THEN
    RETURN to_tsvector('simple', left(body, 500000));
END
$$;
