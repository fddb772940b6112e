"""The windows search indexes (a turn, its date, the two live rows before it) and context vectors,
rewritten from where a thread changes. Account: docs/decisions/0013-search-modes.md, Maintenance."""

from __future__ import annotations

from datetime import datetime

from psycopg import Connection

# Windows of live rows of one thread (all models), from a starting row on; `writable` is
# false for the leading rows read only as neighbours of the first window rewritten.
_THREAD = (
    "org = %(org)s AND namespace = %(ns)s AND thread_id = %(thread)s AND tombstoned_at IS NULL"
    " AND (%(model)s::text IS NULL OR model = %(model)s)"
)
MOVED_FROM = "loom.windows_moved_from"  # a transaction's setting: where a moved row stood
_REWRITE = (
    # The change: the row written, or where a row this transaction moved stood when earlier.
    "WITH change AS MATERIALIZED (SELECT CASE WHEN m.ts < %(ts)s::timestamptz THEN m.ts"
    "  ELSE %(ts)s::timestamptz END AS ts,"
    "  CASE WHEN m.ts < %(ts)s::timestamptz THEN '' ELSE %(msg_id)s END AS msg_id"
    "  FROM (SELECT nullif(current_setting('" + MOVED_FROM + "', true), '')::timestamptz"
    "   AS ts) m),"
    # The row three before the change (none: the whole thread), a bound the thread index seeks.
    " start AS MATERIALIZED (SELECT coalesce(s.ts, '-infinity') AS ts,"
    "  coalesce(s.msg_id, '') AS msg_id, s.ts IS NOT NULL AS found"
    "  FROM change c LEFT JOIN LATERAL (SELECT ts, msg_id"
    "   FROM loom.conversation_embeddings WHERE " + _THREAD + " AND NOT saved_only"
    "   AND c.ts IS NOT NULL AND (ts, msg_id) < (c.ts, c.msg_id)"
    "   ORDER BY ts DESC, msg_id DESC OFFSET 2 LIMIT 1) s ON true),"
    " part AS (SELECT ctid AS rid, msg_id, model, ts, text, saved_only"
    "  FROM loom.conversation_embeddings WHERE " + _THREAD + ""
    "  AND (ts, msg_id) >= ((SELECT ts FROM start), (SELECT msg_id FROM start))),"
    " w AS MATERIALIZED (SELECT rid, lag(msg_id) OVER t AS before_id,"
    "  loom.turn_window(ts, lag(text, 2) OVER t, lag(text, 1) OVER t, text, NULL) AS doc,"
    "  NOT (SELECT found FROM start) OR row_number() OVER t > 2 AS writable"
    "  FROM part WHERE NOT saved_only WINDOW t AS (PARTITION BY model ORDER BY ts, msg_id)"
    # A row the transcript never recorded: no window, no context read after another turn.
    "  UNION ALL SELECT rid, NULL, NULL, true FROM part WHERE saved_only)"
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


_NOTE_MOVING = (
    # The live rows of these msg_ids the writes will put at another time or give other text.
    "WITH moving AS MATERIALIZED (SELECT e.ts, e.msg_id, e.text IS DISTINCT FROM n.text"
    "  AS retexted FROM loom.conversation_embeddings e"
    "  JOIN unnest(%(ids)s::text[], %(ts)s::timestamptz[], %(texts)s::text[]) AS n(msg_id, ts,"
    "   text) ON e.msg_id = n.msg_id"
    "  WHERE e.org = %(org)s AND e.namespace = %(ns)s AND e.thread_id = %(thread)s"
    "  AND e.model = %(model)s AND e.tombstoned_at IS NULL"
    "  AND (NOT %(vectorless)s OR e.embedding IS NULL)"
    "  AND (e.ts, e.text) IS DISTINCT FROM (n.ts, n.text)),"
    # A context vector read after a row's text that changes falls back to its turn's own
    # vector (one read after a row that only moves is the rewrite's to judge).
    " reread AS (UPDATE loom.conversation_embeddings e SET context_embedding = e.embedding,"
    "  context_of = NULL WHERE (SELECT count(*) FROM moving WHERE retexted) > 0"
    "  AND e.org = %(org)s AND e.namespace = %(ns)s AND e.thread_id = %(thread)s"
    "  AND e.model = %(model)s AND e.context_of IN (SELECT msg_id FROM moving WHERE retexted)"
    "  AND e.tombstoned_at IS NULL)"
    " SELECT set_config('" + MOVED_FROM + "', coalesce((SELECT min(ts) FROM moving)::text, ''),"
    "  true)"
)


def note_moving_rows(
    conn: Connection,
    org: str,
    namespace: str,
    thread_id: str,
    model: str,
    writes: list[tuple[str, datetime, str]],
    *,
    vectorless_only: bool,
) -> None:
    """Before writes (msg_id, ts, text) over live rows (only vectorless ones if `vectorless_only`),
    note where the earliest moving or retexted one stood, so the window rewrite starts no later."""
    columns = {name: [w[i] for w in writes] for i, name in enumerate(("ids", "ts", "texts"))}
    scope = {"org": org, "ns": namespace, "thread": thread_id, "model": model}
    conn.execute(_NOTE_MOVING, {**scope, **columns, "vectorless": vectorless_only})


def rewrite_thread_windows(conn: Connection, org: str, namespace: str, thread_id: str) -> int:
    """Rewrite every live window of a thread (after turns left it); returns rows changed."""
    params = {"org": org, "ns": namespace, "thread": thread_id, "model": None, "ts": None}
    return conn.execute(_REWRITE, {**params, "msg_id": ""}).rowcount


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
    params = {"org": org, "ns": namespace, "thread": thread_id, "model": model, "ts": ts}
    changed = conn.execute(_REWRITE, {**params, "msg_id": msg_id}).rowcount
    conn.execute("SELECT set_config('" + MOVED_FROM + "', '', true)")  # the note was its alone
    return changed
