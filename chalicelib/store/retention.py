"""The transcript's time to live: turns older than it are removed from disk."""

from __future__ import annotations

from psycopg import Connection


def purge_expired_turns(conn: Connection, older_than_days: int, batch: int) -> int:
    """Remove (from disk) up to `batch` turns older than the TTL; embedding rows stay, but
    one whose saved turn went leaves its user's saved search (its owner could no longer list
    or withdraw it) unless another live copy is saved."""
    row = conn.execute(
        "WITH gone AS (DELETE FROM loom.conversations WHERE ctid = ANY(ARRAY("
        "  SELECT ctid FROM loom.conversations"
        "  WHERE ts < now() - make_interval(days => %s) LIMIT %s))"
        "  RETURNING org, namespace, thread_id, agent, msg_id, is_saved),"
        " unflagged AS (UPDATE loom.conversation_embeddings e"
        "  SET is_saved = false, saved_at = NULL FROM gone g"
        "  WHERE g.is_saved AND e.is_saved AND e.org = g.org AND e.namespace = g.namespace"
        "  AND e.thread_id = g.thread_id AND e.msg_id = g.msg_id"
        "  AND NOT EXISTS (SELECT 1 FROM loom.conversations c WHERE c.org = e.org"
        "   AND c.namespace = e.namespace AND c.thread_id = e.thread_id AND c.msg_id = e.msg_id"
        "   AND c.is_saved AND c.tombstoned_at IS NULL AND c.agent NOT IN (SELECT g2.agent"
        "    FROM gone g2 WHERE g2.org = c.org AND g2.namespace = c.namespace"
        "    AND g2.thread_id = c.thread_id AND g2.msg_id = c.msg_id))"
        "  RETURNING 1)"
        " SELECT count(*) FROM gone",
        (older_than_days, batch),
    ).fetchone()
    return int(row[0]) if row else 0
