"""Turn embedding rows: written under the thread's lease, and the turns still without one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from psycopg import Connection, Cursor
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from chalicelib.search.store_upkeep import note_moving_rows, rewrite_windows_from
from chalicelib.store.pool import autocommit_connection, pipelined_transaction
from chalicelib.store.recorded import send_settle_saved_only
from chalicelib.store.thread_leases import take_thread_lease
from chalicelib.store.turn_writes import NewTurn


@dataclass(frozen=True)
class TurnVector:
    turn: NewTurn
    ts: datetime
    text: str
    vector: np.ndarray | None
    error: str | None


def write_embeddings(pool: ConnectionPool, model: str, items: list[TurnVector]) -> set[str]:
    """Store vectors (or embed errors) of one thread's turns still live, under the lease;
    returns the msg_ids written. Turns at the end of the thread with no other copy's row are
    written in one transaction sent whole; the rest, if any, in a second, as `send_vectors`
    says. A live row
    another agent's copy wrote is shared, not replaced, unless it has no vector: then it
    moves, and the windows from where it stood on are rewritten too (`send_vectors`).
    """
    first = items[0].turn
    turns = [i.turn for i in items]
    with autocommit_connection(pool) as conn:
        params = _vector_params(model, items)
        written = vectors_under_lease(conn, first, lambda: _send_fresh(conn, params))
        others = [i for i in items if i.turn.msg_id not in written]
        if others:  # a copy's row, a turn before later rows, or one removed meanwhile
            written |= vectors_under_lease(conn, first, lambda: send_vectors(conn, model, others))
        if len(written) < len(items):  # a live row shared with another copy answers nothing
            rest = [t.msg_id for t in turns if t.msg_id not in written]
            written |= live_copies(conn, first, rest)
    return written


def vectors_under_lease(conn: Connection, turn: NewTurn, send: Callable[[], Cursor]) -> set[str]:
    """One transaction sent whole, under the thread's lease, committed asynchronously (vectors
    are derived data): `send`'s statements; the msg_ids its cursor answers."""
    with pipelined_transaction(conn):
        conn.execute("SET LOCAL synchronous_commit = off")
        take_thread_lease(conn, turn.org, turn.namespace, turn.thread_id)
        cur = send()
    return {r[0] for r in returned_rows(cur)}


# Written from the turn's live row, so a save that flagged the row meanwhile flags its vector.
_INSERT_VECTOR = (
    "INSERT INTO loom.conversation_embeddings AS e (org, namespace, thread_id, msg_id, model,"
    " agent, role, user_id, run_id, text, dim, embedding, error, ts, is_saved, saved_at,"
    " saved_only, context_embedding, context_of, window_tsv, window_len)"
    " SELECT c.org, c.namespace, c.thread_id, c.msg_id, %(model)s, c.agent, c.role, c.user_id,"
    " c.run_id, %(text)s, %(dim)s, %(embedding)s, %(error)s, c.ts, c.is_saved, c.saved_at,"
    " c.saved_only,"
    # The context vector: the turn's own vector and the one before it, added and normalised
    # (no second model call); the turn's own when the row before has no vector of its size.
    " CASE WHEN b.before_vector IS NULL THEN %(embedding)s::vector"
    "  ELSE l2_normalize(%(embedding)s::vector + b.before_vector) END,"
    " CASE WHEN b.before_vector IS NOT NULL THEN b.before_id END,"
    " w.doc, loom.tsv_tokens(w.doc)"
    " FROM loom.conversations c"
    # The two live rows before it, latest first: the window as it stands (no turn after it
    # yet), written with the row.
    " CROSS JOIN LATERAL (SELECT array_agg(p.text ORDER BY p.ts DESC, p.msg_id DESC) AS texts,"
    "  (array_agg(p.msg_id ORDER BY p.ts DESC, p.msg_id DESC))[1] AS before_id,"
    "  (array_agg(CASE WHEN p.dim = %(dim)s AND %(embedding)s::vector IS NOT NULL"
    "   THEN p.embedding END ORDER BY p.ts DESC, p.msg_id DESC))[1] AS before_vector FROM"
    "   (SELECT text, ts, msg_id, dim, embedding FROM loom.conversation_embeddings"
    "    WHERE org = c.org AND namespace = c.namespace AND thread_id = c.thread_id"
    "    AND model = %(model)s AND tombstoned_at IS NULL AND NOT saved_only"
    "    AND (ts, msg_id) < (c.ts, c.msg_id) ORDER BY ts DESC, msg_id DESC LIMIT 2) p) b"
    " CROSS JOIN LATERAL (SELECT loom.turn_window(c.ts, b.texts[2], b.texts[1], %(text)s, NULL)"
    "  AS doc) w"
    " WHERE c.org = %(org)s AND c.namespace = %(ns)s"
    " AND c.thread_id = %(thread)s AND c.agent = %(agent)s AND c.msg_id = %(msg_id)s"
    # The ts it was written at: whichever index the planner picks finds the one row.
    " AND c.ts = %(ts)s AND c.tombstoned_at IS NULL"
    # A live row a saved copy flagged keeps that copy's owner and flag.
    " ON CONFLICT (org, namespace, thread_id, msg_id, model) DO UPDATE SET"
    " agent = CASE WHEN e.is_saved THEN e.agent ELSE EXCLUDED.agent END,"
    " role = CASE WHEN e.is_saved THEN e.role ELSE EXCLUDED.role END,"
    " user_id = CASE WHEN e.is_saved THEN e.user_id ELSE EXCLUDED.user_id END,"
    " run_id = CASE WHEN e.is_saved THEN e.run_id ELSE EXCLUDED.run_id END,"
    " text = EXCLUDED.text, dim = EXCLUDED.dim,"
    " embedding = EXCLUDED.embedding, error = EXCLUDED.error, ts = EXCLUDED.ts,"
    " context_embedding = EXCLUDED.context_embedding, context_of = EXCLUDED.context_of,"
    " window_tsv = EXCLUDED.window_tsv, window_len = EXCLUDED.window_len,"
    " is_saved = e.is_saved OR EXCLUDED.is_saved,"
    " saved_at = coalesce(e.saved_at, EXCLUDED.saved_at), saved_only = EXCLUDED.saved_only,"
    " tombstoned_at = NULL, created_at = now()"
    " WHERE e.tombstoned_at IS NOT NULL OR e.embedding IS NULL"
    " RETURNING e.msg_id"
)


# The common case, a turn at the end of its thread that no other copy has a row for: its row is
# all there is to write (its window reads only the rows before it), so no window is rewritten.
_INSERT_FRESH_VECTOR = (
    _INSERT_VECTOR[: _INSERT_VECTOR.index(" ON CONFLICT")]
    + " AND NOT EXISTS (SELECT 1 FROM loom.conversation_embeddings x"
    "  WHERE x.org = %(org)s AND x.namespace = %(ns)s AND x.thread_id = %(thread)s"
    "  AND x.msg_id = %(msg_id)s AND x.model = %(model)s)"
    " AND NOT EXISTS (SELECT 1 FROM loom.conversation_embeddings x"
    "  WHERE x.org = %(org)s AND x.namespace = %(ns)s AND x.thread_id = %(thread)s"
    "  AND x.model = %(model)s AND x.tombstoned_at IS NULL"
    "  AND (x.ts, x.msg_id) > (%(ts)s::timestamptz, %(msg_id)s))"
    " ON CONFLICT DO NOTHING RETURNING msg_id"
)


def _send_fresh(conn: Connection, params: list[dict[str, Any]]) -> Cursor:
    cur = conn.cursor()
    cur.executemany(_INSERT_FRESH_VECTOR, params, returning=True)
    return cur


def insert_vectors(conn: Connection, model: str, items: list[TurnVector]) -> list[tuple[str]]:
    """One statement a turn, then the windows they touch (the caller holds the lease)."""
    return returned_rows(send_vectors(conn, model, items))


def _vector_params(model: str, items: list[TurnVector]) -> list[dict[str, Any]]:
    return [
        {
            "org": i.turn.org,
            "ns": i.turn.namespace,
            "thread": i.turn.thread_id,
            "agent": i.turn.agent,
            "model": model,
            "msg_id": i.turn.msg_id,
            "text": i.text,
            "dim": 0 if i.vector is None else len(i.vector),
            "embedding": i.vector,
            "error": i.error,
            "ts": i.ts,
        }
        for i in items
    ]


def send_vectors(conn: Connection, model: str, items: list[TurnVector]) -> Cursor:
    """Send one statement a turn (the vector binds as itself, not as text), then the rewrite of
    the windows they touch (from where a vectorless row they take over stood, when earlier:
    noted first, under the lease the caller holds); the cursor answers the msg_ids written
    (`returned_rows`)."""
    params = _vector_params(model, items)
    first = min(items, key=lambda i: (i.ts, i.turn.msg_id))
    scope = (first.turn.org, first.turn.namespace, first.turn.thread_id, model)
    writes = [(i.turn.msg_id, i.ts, i.text) for i in items]
    note_moving_rows(conn, *scope, writes, vectorless_only=True)
    cur = conn.cursor()
    cur.executemany(_INSERT_VECTOR, params, returning=True)
    # A row another agent's saved-only copy holds is a turn once a recorded copy stands beside
    # it: search reads it from here on, and the rewrite starts where it stands.
    ids = [i.turn.msg_id for i in items]
    send_settle_saved_only(conn, *scope[:3], model, ids)
    rewrite_windows_from(conn, *scope, first.ts, first.turn.msg_id)
    return cur


def returned_rows(cur: Cursor) -> list[tuple[str]]:
    """Every row an executemany(returning=True) answered."""
    rows: list[tuple[str]] = []
    while True:
        rows.extend(cur.fetchall())
        if not cur.nextset():
            return rows


def turns_without_vectors(
    conn: Connection,
    model: str,
    *,
    after: tuple[datetime, str],
    until: datetime,
    limit: int,
) -> list[dict[str, Any]]:
    """Live user and assistant turns recorded after `after` (ts, msg_id) and up to `until`
    with no embedding row for `model`, oldest first: an append whose vector write never ran,
    or a turn that reads as high (never embedded)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT c.org, c.namespace, c.thread_id, c.agent, c.msg_id, c.role, c.content, c.ts"
            " FROM loom.conversations c"
            " WHERE (c.ts, c.msg_id) > (%(after_ts)s, %(after_id)s) AND c.ts <= %(until)s"
            " AND c.tombstoned_at IS NULL AND c.role IN ('user', 'assistant')"
            " AND NOT c.saved_only"  # a save writes its own copy's row
            " AND NOT EXISTS (SELECT 1 FROM loom.conversation_embeddings e WHERE e.org = c.org"
            "  AND e.namespace = c.namespace AND e.thread_id = c.thread_id"
            "  AND e.msg_id = c.msg_id AND e.model = %(model)s)"
            " ORDER BY c.ts, c.msg_id LIMIT %(limit)s",
            {
                "after_ts": after[0],
                "after_id": after[1],
                "until": until,
                "model": model,
                "limit": limit,
            },
        ).fetchall()


def live_copies(conn: Connection, scope: NewTurn, msg_ids: list[str]) -> set[str]:
    """Which of this agent's copies are live."""
    rows = conn.execute(
        "SELECT msg_id FROM loom.conversations WHERE org = %s AND namespace = %s"
        " AND thread_id = %s AND agent = %s AND msg_id = ANY(%s) AND tombstoned_at IS NULL",
        (scope.org, scope.namespace, scope.thread_id, scope.agent, msg_ids),
    ).fetchall()
    return {r[0] for r in rows}
