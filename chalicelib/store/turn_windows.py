"""The windows of turns search indexes, rewritten where a thread changes.

A window (loom.turn_window) is a turn with its date, the two live embedding rows before it and
the one after it in its thread; a context vector is the turn read after the row before it.
Both are written with the row (its window with no turn after it yet). A change at one turn
alters the windows from the turn before it to the second one after it; the rewrite reads three
rows further back so every window it writes sees its full neighbourhood, and writes only the
windows that differ (on an append at the end of a thread: the previous turn's).
"""

from __future__ import annotations

from datetime import datetime

from psycopg import Connection

# Windows of live rows of one thread (all models), from a starting row on; `writable` is
# false for the leading rows read only as neighbours of the first window rewritten.
_THREAD = (
    "org = %(org)s AND namespace = %(ns)s AND thread_id = %(thread)s AND tombstoned_at IS NULL"
    " AND (%(model)s::text IS NULL OR model = %(model)s)"
)
_REWRITE = (
    # The row three before the change (none: the whole thread), as a bound the thread-order
    # index seeks to.
    "WITH start AS MATERIALIZED (SELECT coalesce(s.ts, '-infinity') AS ts,"
    "  coalesce(s.msg_id, '') AS msg_id, s.ts IS NOT NULL AS found"
    "  FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT ts, msg_id"
    "   FROM loom.conversation_embeddings WHERE " + _THREAD + ""
    "   AND %(ts)s::timestamptz IS NOT NULL"
    "   AND (ts, msg_id) < (%(ts)s::timestamptz, %(msg_id)s)"
    "   ORDER BY ts DESC, msg_id DESC OFFSET 2 LIMIT 1) s ON true),"
    " part AS (SELECT ctid AS rid, msg_id, model, ts, text FROM loom.conversation_embeddings"
    "  WHERE " + _THREAD + ""
    "  AND (ts, msg_id) >= ((SELECT ts FROM start), (SELECT msg_id FROM start))),"
    " w AS MATERIALIZED (SELECT rid, lag(msg_id) OVER t AS before_id,"
    "  loom.turn_window(ts, lag(text, 2) OVER t, lag(text, 1) OVER t, text, lead(text, 1) OVER t)"
    "   AS doc,"
    "  NOT (SELECT found FROM start) OR row_number() OVER t > 2 AS writable"
    "  FROM part WINDOW t AS (PARTITION BY model ORDER BY ts, msg_id))"
    " UPDATE loom.conversation_embeddings e SET window_tsv = w.doc,"
    " window_len = loom.tsv_tokens(w.doc),"
    # A context vector read after a turn that is no longer the one before falls back to the
    # turn's own vector: it never keeps the text of a turn that left the thread.
    " context_embedding = CASE WHEN e.context_of = w.before_id THEN e.context_embedding"
    "  ELSE e.embedding END,"
    " context_of = CASE WHEN e.context_of = w.before_id THEN e.context_of END"
    " FROM w WHERE w.writable AND e.ctid = w.rid AND (e.window_tsv IS DISTINCT FROM w.doc"
    "  OR e.context_of IS DISTINCT FROM w.before_id AND e.context_of IS NOT NULL)"
)


def rewrite_thread_windows(conn: Connection, org: str, namespace: str, thread_id: str) -> int:
    """Rewrite every live window of a thread (after turns left it); returns rows changed."""
    return _rewrite(conn, org, namespace, thread_id, None, None, "")


def rewrite_windows_from(
    conn: Connection,
    org: str,
    namespace: str,
    thread_id: str,
    model: str,
    ts: datetime,
    msg_id: str,
) -> int:
    """Rewrite the windows a row written at (ts, msg_id) touches, and all later ones."""
    return _rewrite(conn, org, namespace, thread_id, model, ts, msg_id)


def _rewrite(
    conn: Connection,
    org: str,
    namespace: str,
    thread_id: str,
    model: str | None,
    ts: datetime | None,
    msg_id: str,
) -> int:
    params = {
        "org": org,
        "ns": namespace,
        "thread": thread_id,
        "model": model,
        "ts": ts,
        "msg_id": msg_id,
    }
    return conn.execute(_REWRITE, params).rowcount
