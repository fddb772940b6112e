-- Monthly partitions of loom.conversations, by the turn's time (UTC months), so the TTL drops
-- whole months and a warm tablespace takes old ones (docs/decisions/0031-transcript-partitions.md).
--
-- The rows stored before this migration are not copied: the table that holds them becomes the
-- partition of every moment up to the end of the current month (or of its latest turn's
-- month), and later months get a partition each. A key (org, namespace, thread, agent,
-- message) stays unique without ts in the primary key: every writer of a thread holds the
-- thread's lease, and inserts only a key no partition holds.

CREATE FUNCTION loom.month_start(moment timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT date_trunc('month', moment, 'UTC') $$;

ALTER TABLE loom.conversations RENAME TO conversations_before_partitions;
-- Its primary key gives way to the partitioned table's (the same columns and ts), built as it
-- is attached below.
ALTER TABLE loom.conversations_before_partitions DROP CONSTRAINT conversations_pkey;
ALTER INDEX loom.conversations_thread_ts_idx RENAME TO conversations_bp_thread_ts_idx;
ALTER INDEX loom.conversations_ns_ts_idx RENAME TO conversations_bp_ns_ts_idx;
ALTER INDEX loom.conversations_ts_idx RENAME TO conversations_bp_ts_idx;
ALTER INDEX loom.conversations_content_trgm_idx RENAME TO conversations_bp_content_trgm_idx;
ALTER INDEX loom.conversations_saved_idx RENAME TO conversations_bp_saved_idx;
ALTER INDEX loom.conversations_saved_tsv_idx RENAME TO conversations_bp_saved_tsv_idx;

CREATE TABLE loom.conversations (
    LIKE loom.conversations_before_partitions INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (org, namespace, thread_id, agent, msg_id, ts)
) PARTITION BY RANGE (ts);
CREATE INDEX conversations_thread_ts_idx
    ON loom.conversations (org, namespace, thread_id, ts, msg_id);
CREATE INDEX conversations_ns_ts_idx ON loom.conversations (org, namespace, ts DESC);
CREATE INDEX conversations_ts_idx ON loom.conversations (ts);
CREATE INDEX conversations_content_trgm_idx
    ON loom.conversations USING gin (content gin_trgm_ops) WITH (gin_pending_list_limit = 256);
CREATE INDEX conversations_saved_idx ON loom.conversations
    (org, namespace, user_id, (coalesce(saved_at, ts)) DESC, thread_id, msg_id)
    WHERE is_saved AND tombstoned_at IS NULL;
CREATE INDEX conversations_saved_tsv_idx ON loom.conversations USING gin (saved_tsv)
    WITH (gin_pending_list_limit = 256) WHERE is_saved AND tombstoned_at IS NULL;

-- The months after those the earlier table holds, `ahead` months past the current one; rows a
-- default partition caught for a month (no partition was made in time) move into it.
CREATE FUNCTION loom.ensure_conversation_partitions(ahead integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    made integer := 0;
    upper_bound timestamptz;
    month timestamptz;
    name text;
BEGIN
    SELECT max(loom.partition_upper(c.oid)) INTO upper_bound
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'loom.conversations'::regclass;
    month := coalesce(upper_bound, loom.month_start(now()));
    WHILE month <= loom.month_start(now()) + make_interval(months => ahead) LOOP
        name := 'conversations_' || to_char(month AT TIME ZONE 'UTC', 'YYYY_MM');
        EXECUTE format('CREATE TABLE loom.%I (LIKE loom.conversations INCLUDING DEFAULTS'
            ' INCLUDING CONSTRAINTS)', name);
        EXECUTE format('WITH moved AS (DELETE FROM loom.conversations_default'
            ' WHERE ts >= %L AND ts < %L RETURNING *) INSERT INTO loom.%I SELECT * FROM moved',
            month, month + interval '1 month', name);
        EXECUTE format('ALTER TABLE loom.conversations ATTACH PARTITION loom.%I'
            ' FOR VALUES FROM (%L) TO (%L)', name, month, month + interval '1 month');
        made := made + 1;
        month := month + interval '1 month';
    END LOOP;
    RETURN made;
END $$;

-- A partition's bounds: NULL for the default one's, and for MINVALUE.
CREATE FUNCTION loom.partition_upper(part oid) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz
    FROM pg_class c WHERE c.oid = part
$$;
CREATE FUNCTION loom.partition_lower(part oid) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1]::timestamptz
    FROM pg_class c WHERE c.oid = part
$$;

DO $$
DECLARE
    upper_bound timestamptz;
BEGIN
    SELECT greatest(loom.month_start(now()), loom.month_start(max(ts))) + interval '1 month'
    INTO upper_bound FROM loom.conversations_before_partitions;
    EXECUTE format('ALTER TABLE loom.conversations ATTACH PARTITION'
        ' loom.conversations_before_partitions FOR VALUES FROM (MINVALUE) TO (%L)', upper_bound);
END $$;
CREATE TABLE loom.conversations_default PARTITION OF loom.conversations DEFAULT;
SELECT loom.ensure_conversation_partitions(3);
