"""Transcript turns and thread rows: writes under the thread lease, and reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np
from psycopg import Connection, Cursor, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from chalicelib.search.store_upkeep import (
    note_moving_rows,
    rewrite_thread_windows,
    rewrite_windows_from,
)
from chalicelib.store.namespaces import conversation_logging_enabled
from chalicelib.store.pool import database_clock, lease_lock, read_connection, sent_whole
from chalicelib.store.recorded import send_settle_saved_only, settle_saved_only

TurnState = Literal["live", "saved_only", "tombstoned"]
# A saved-only copy the append did not adopt: the namespace does not record.
UNRECORDED = "unrecorded"
TURN_COLUMNS = (
    "msg_id, thread_id, role, content, reasoning, agent, user_id, run_id, metadata, tokens, ts"
)


def take_thread_lease(conn: Connection, org: str, namespace: str, thread_id: str) -> None:
    """Serialise writers of one thread until this transaction ends (appends, saves, deletes)."""
    conn.execute(lease_lock("%s", 0), (f"{org}\x1f{namespace}\x1f{thread_id}",))


def take_thread_leases(conn: Connection, org: str, threads: list[tuple[str, str]]) -> None:
    """The leases of several (namespace, thread_id), always in one order (no deadlock)."""
    for namespace, thread_id in sorted(set(threads)):
        take_thread_lease(conn, org, namespace, thread_id)


def existing_copies(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str, msg_ids: list[str]
) -> dict[str, TurnState]:
    """Which of this agent's copies of these turns exist already, and whether each is live
    (`saved_only`: live, there only because a user saved it), or deleted: a primary-key read."""
    return append_state(conn, org, namespace, thread_id, agent, msg_ids)[1]


_APPEND_STATE = (
    "SELECT msg_id, tombstoned_at IS NOT NULL, saved_only,"
    " coalesce((SELECT n.conversation_logging_enabled FROM loom.namespaces n"
    "  WHERE n.org = %(org)s AND n.namespace = %(ns)s), false)"
    " FROM loom.conversations WHERE org = %(org)s AND namespace = %(ns)s"
    " AND thread_id = %(thread)s AND agent = %(agent)s AND msg_id = ANY(%(ids)s)"
)
_APPEND_STATE_ONE = _APPEND_STATE.replace("= ANY(%(ids)s)", "= %(ids)s")


def append_state(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str, msg_ids: list[str]
) -> tuple[bool | None, dict[str, TurnState]]:
    """This agent's copies of these turns that exist already (`existing_copies`), and, when
    there are any, whether the namespace records (failing closed); None when there are none
    (their insert reads the switch): one statement of primary-key reads."""
    # One turn (an append) is read as a plain key: no array to bind and plan, as a duplicate
    # is answered here at primary-key speed.
    one = len(msg_ids) == 1
    rows = conn.execute(
        _APPEND_STATE_ONE if one else _APPEND_STATE,
        {
            "org": org,
            "ns": namespace,
            "thread": thread_id,
            "agent": agent,
            "ids": msg_ids[0] if one else msg_ids,
        },
    ).fetchall()
    states: dict[str, TurnState] = {
        msg_id: "tombstoned" if gone else "saved_only" if only else "live"
        for msg_id, gone, only, _ in rows
    }
    return (bool(rows[0][3]) if rows else None), states


def adopt_saved_turns(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str, msg_ids: list[str]
) -> bool:
    """Copies there only because a user saved them, which the client now logs: the
    transcript's turns, where the namespace records (an unsave then leaves them in place), and
    read by search and the windows around them from now on. False when it does not record:
    they stay the save's alone."""
    with conn.transaction():
        take_thread_lease(conn, org, namespace, thread_id)
        row = conn.execute(
            "WITH ns AS (SELECT 1 FROM loom.namespaces n WHERE n.org = %(org)s"
            "  AND n.namespace = %(ns)s AND n.conversation_logging_enabled),"
            " adopted AS (UPDATE loom.conversations c SET saved_only = false"
            "  WHERE c.org = %(org)s AND c.namespace = %(ns)s AND c.thread_id = %(thread)s"
            "  AND c.agent = %(agent)s AND c.msg_id = ANY(%(ids)s) AND c.saved_only"
            "  AND EXISTS (SELECT 1 FROM ns) RETURNING 1)"
            " SELECT EXISTS (SELECT 1 FROM ns), (SELECT count(*) FROM adopted)",
            {"org": org, "ns": namespace, "thread": thread_id, "agent": agent, "ids": msg_ids},
        ).fetchone()
        if row and row[1] and settle_saved_only(conn, org, namespace, thread_id, msg_ids):
            rewrite_thread_windows(conn, org, namespace, thread_id)
    return bool(row and row[0])


@dataclass(frozen=True)
class NewTurn:
    org: str
    namespace: str
    thread_id: str
    agent: str
    msg_id: str
    role: str
    content: str
    reasoning: str = ""
    user_id: str = "-"
    run_id: str = "-"
    metadata: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0


def _columns(turns: list[NewTurn], *names: str) -> list[list[Any]]:
    return [[getattr(t, n) for t in turns] for n in names]


def insert_turns(conn: Connection, turns: list[NewTurn]) -> dict[str, datetime] | None:
    """Insert one thread's turns in order, under its lease, if the namespace records: one
    transaction, sent whole in one round trip (`conn` from read_connection). Copies that exist
    already are skipped. Returns each inserted turn's ts; None when the namespace does not
    record (recording fails closed: a namespace with no row does not record).
    """
    first = turns[0]
    with sent_whole(conn):
        take_thread_lease(conn, first.org, first.namespace, first.thread_id)
        inserted = _insert_turns(conn, turns)
    rows = inserted.fetchall()
    if not rows and not conversation_logging_enabled(conn, first.org, first.namespace):
        return None
    return dict(rows)


def _insert_turns(conn: Connection, turns: list[NewTurn]) -> Cursor:
    first = turns[0]
    return conn.execute(
        "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role, content,"
        " reasoning, user_id, run_id, metadata, tokens, ts)"
        " SELECT %s, %s, %s, %s, t.msg_id, t.role, t.content, t.reasoning, t.user_id, t.run_id,"
        " t.metadata, t.tokens, clock_timestamp()"
        " FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],"
        " %s::jsonb[], %s::int[]) WITH ORDINALITY"
        " AS t(msg_id, role, content, reasoning, user_id, run_id, metadata, tokens, ord)"
        " WHERE EXISTS (SELECT 1 FROM loom.namespaces n WHERE n.org = %s AND n.namespace = %s"
        "   AND n.conversation_logging_enabled)"
        " ORDER BY t.ord"
        " ON CONFLICT DO NOTHING RETURNING msg_id, ts",
        (
            first.org,
            first.namespace,
            first.thread_id,
            first.agent,
            *_columns(turns, "msg_id", "role", "content", "reasoning", "user_id", "run_id"),
            [Jsonb(t.metadata) for t in turns],
            [t.tokens for t in turns],
            first.org,
            first.namespace,
        ),
    )


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
    with read_connection(pool) as conn:
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
    with sent_whole(conn):
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


# ---- thread rows ---------------------------------------------------------------------------


def upsert_thread(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    thread_id: str,
    agent: str,
    title: str,
    metadata: dict[str, Any],
    run_id: str,
    user_id: str,
) -> datetime:
    row = conn.execute(
        "INSERT INTO loom.conversation_threads"
        " (org, namespace, thread_id, agent, title, metadata, run_id, user_id)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        # Re-creating a live thread replaces its title, metadata and run; its owner (agent)
        # and user stay. A deleted thread, or a row the titler made, is created anew.
        " ON CONFLICT (org, namespace, thread_id) DO UPDATE SET"
        " agent = CASE WHEN conversation_threads.tombstoned_at IS NULL"
        "  AND conversation_threads.origin = 'create' THEN conversation_threads.agent"
        "  ELSE EXCLUDED.agent END,"
        " title = EXCLUDED.title, title_by_titler = false, metadata = EXCLUDED.metadata,"
        " run_id = EXCLUDED.run_id,"
        " user_id = CASE WHEN conversation_threads.tombstoned_at IS NULL"
        "  AND conversation_threads.origin = 'create' THEN conversation_threads.user_id"
        "  ELSE EXCLUDED.user_id END, updated_at = now(),"
        " tombstoned_at = NULL, origin = 'create', title_claimed_until = NULL,"
        " created_at = CASE WHEN conversation_threads.tombstoned_at IS NULL"
        "   THEN conversation_threads.created_at ELSE now() END"
        " RETURNING updated_at",
        (org, namespace, thread_id, agent, title, Jsonb(metadata), run_id, user_id),
    ).fetchone()
    assert row is not None
    return row[0]


def update_thread(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    thread_id: str,
    title: str | None,
    metadata: dict[str, Any] | None,
    run_id: str | None,
) -> datetime | None:
    """Change what is given; None when the thread has no live thread row."""
    row = conn.execute(
        "UPDATE loom.conversation_threads SET"
        " title = coalesce(%s, title),"
        " title_by_titler = title_by_titler AND %s::text IS NULL,"
        " metadata = coalesce(%s, metadata),"
        " run_id = coalesce(%s, run_id),"
        " updated_at = clock_timestamp()"
        " WHERE org = %s AND namespace = %s AND thread_id = %s AND tombstoned_at IS NULL"
        " RETURNING updated_at",
        (
            title,
            title,
            None if metadata is None else Jsonb(metadata),
            run_id,
            org,
            namespace,
            thread_id,
        ),
    ).fetchone()
    return row[0] if row else None


def get_thread(conn: Connection, org: str, namespace: str, thread_id: str) -> dict[str, Any] | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT title, metadata, run_id, user_id, agent, created_at, updated_at, origin"
            " FROM loom.conversation_threads"
            " WHERE org = %s AND namespace = %s AND thread_id = %s AND tombstoned_at IS NULL",
            (org, namespace, thread_id),
        ).fetchone()


# ---- reading turns -------------------------------------------------------------------------


def _agent_clause(agent: str | None, *, in_run: bool = False, alias: str = "c") -> sql.Composable:
    """The recorded copies (no copy a save alone stored is a turn: recorded.py) of one agent,
    or (agent None) every agent's with a turn two agents logged once, of the rows named
    `alias`; `in_run`: among the copies in the run `%(run)s` only (the one another run holds
    is not this run's)."""
    if agent is not None:  # the agent may hold "%"
        return sql.SQL("{c}.agent = %(agent)s AND NOT {c}.saved_only").format(
            c=sql.Identifier(alias)
        )
    return sql.SQL(
        "NOT {c}.saved_only AND NOT EXISTS (SELECT 1 FROM loom.conversations o"
        " WHERE o.org = {c}.org AND o.namespace = {c}.namespace AND o.thread_id = {c}.thread_id"
        " AND o.msg_id = {c}.msg_id AND o.tombstoned_at IS NULL AND NOT o.saved_only"
        " AND (o.ts, o.agent) < ({c}.ts, {c}.agent){run})"
    ).format(c=sql.Identifier(alias), run=sql.SQL(" AND o.run_id = %(run)s" if in_run else ""))


def count_live_turns(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str | None
) -> int:
    query = sql.SQL(
        "SELECT count(*) FROM loom.conversations c WHERE c.org = %(org)s"
        " AND c.namespace = %(ns)s AND c.thread_id = %(thread)s AND c.tombstoned_at IS NULL"
        " AND {}"
    ).format(_agent_clause(agent))
    params = {"org": org, "ns": namespace, "thread": thread_id, "agent": agent}
    row = conn.execute(query, params).fetchone()
    return int(row[0]) if row else 0


def page_turns(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    thread_id: str,
    agent: str | None,
    limit: int,
    max_bytes: int,
    offset: int = 0,
    descending: bool = False,
    after: tuple[datetime, str] | None = None,
    run_id: str | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Live turns of a thread, by (ts, msg_id); `after` is a keyset cursor (ascending only).
    Of the next `limit`, those whose text (content, reasoning, metadata) fits in `max_bytes`,
    the first always; and how many of the `limit` there were. Sizes are read from the rows'
    headers (octet_length does not fetch a toasted value): only the turns kept are fetched."""
    conds = [
        sql.SQL("c.org = %(org)s AND c.namespace = %(ns)s AND c.thread_id = %(thread)s"),
        sql.SQL("c.tombstoned_at IS NULL"),
        _agent_clause(agent, in_run=run_id is not None),
    ]
    if run_id is not None:
        conds.append(sql.SQL("c.run_id = %(run)s"))
    if after is not None:
        conds.append(sql.SQL("(c.ts, c.msg_id) > (%(after_ts)s, %(after_id)s)"))
    query = sql.SQL(
        "WITH page AS ("
        " SELECT c.agent, c.msg_id, c.ts, octet_length(c.content) + octet_length(c.reasoning)"
        " + pg_column_size(c.metadata) AS bytes"
        " FROM loom.conversations c WHERE {where}"
        " ORDER BY c.ts {dir}, c.msg_id {dir} LIMIT %(limit)s OFFSET %(offset)s"
        "), placed AS ("
        " SELECT agent, msg_id, ts, count(*) OVER () AS held, sum(bytes) OVER"
        " (ORDER BY ts {dir}, msg_id {dir} ROWS UNBOUNDED PRECEDING) - bytes AS before"
        " FROM page"
        ")"
        " SELECT {cols}, p.held FROM placed p JOIN loom.conversations c"
        " ON c.org = %(org)s AND c.namespace = %(ns)s AND c.thread_id = %(thread)s"
        " AND c.agent = p.agent AND c.msg_id = p.msg_id"
        " WHERE p.before < %(max_bytes)s ORDER BY p.ts {dir}, p.msg_id {dir}"
    ).format(
        cols=sql.SQL(", ".join(f"c.{col.strip()}" for col in TURN_COLUMNS.split(","))),
        where=sql.SQL(" AND ").join(conds),
        dir=sql.SQL("DESC" if descending else "ASC"),
    )
    params = {
        "org": org,
        "ns": namespace,
        "thread": thread_id,
        "run": run_id,
        "agent": agent,
        "after_ts": after[0] if after else None,
        "after_id": after[1] if after else None,
        "limit": limit,
        "offset": offset,
        "max_bytes": max_bytes,
    }
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(query, params).fetchall()
    held = int(rows[0]["held"]) if rows else 0
    for row in rows:
        del row["held"]
    return rows, held


def recent_threads(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    agent: str | None,
    window_days: int,
    limit: int,
    offset: int,
) -> list[dict[str, Any]]:
    """Threads with a live recorded turn in the window, most recently active first."""
    agent_cond = sql.SQL("") if agent is None else sql.SQL("AND c.agent = %(agent)s")
    # Every agent's: the last turn is read from its first copy (a late copy of an earlier
    # turn is not the thread's last turn), as get and list read each turn once; the thread's
    # activity (last_ts, the order and the window) counts every write.
    first_copy = sql.SQL(" AND ") + _agent_clause(None, alias="l") if agent is None else sql.SQL("")
    query = sql.SQL(
        "WITH live AS ("
        "  SELECT c.org, c.namespace, c.thread_id, c.agent, c.content, c.ts, c.msg_id,"
        "  c.saved_only FROM loom.conversations c"
        "  WHERE c.org = %(org)s AND c.namespace = %(ns)s AND c.tombstoned_at IS NULL"
        "  AND NOT c.saved_only {agent}"
        "), active AS ("
        "  SELECT thread_id, count(DISTINCT msg_id) AS msg_count, max(ts) AS last_ts FROM live"
        "  GROUP BY thread_id"
        "  HAVING max(ts) >= now() - make_interval(days => %(days)s)"
        "  ORDER BY max(ts) DESC, thread_id LIMIT %(limit)s OFFSET %(offset)s"
        ")"
        " SELECT a.thread_id, a.msg_count, a.last_ts, coalesce(t.title, '') AS title,"
        "  last.agent, last.content AS last_content"
        " FROM active a"
        " LEFT JOIN loom.conversation_threads t ON t.org = %(org)s AND t.namespace = %(ns)s"
        "  AND t.thread_id = a.thread_id AND t.tombstoned_at IS NULL"
        " CROSS JOIN LATERAL (SELECT l.agent, l.content FROM live l"
        "  WHERE l.thread_id = a.thread_id{first_copy}"
        "  ORDER BY l.ts DESC, l.msg_id DESC LIMIT 1) last"
        " ORDER BY a.last_ts DESC, a.thread_id"
    ).format(agent=agent_cond, first_copy=first_copy)
    params = {
        "org": org,
        "ns": namespace,
        "agent": agent,
        "days": window_days,
        "limit": limit,
        "offset": offset,
    }
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()


# ---- deleting ------------------------------------------------------------------------------


def delete_thread(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str | None
) -> tuple[datetime, dict[str, int]]:
    """Tombstone a thread's turns (one agent's, or all), its thread row, and embeddings no
    live copy still holds; an embedding another agent's live copy holds passes to that copy."""
    take_thread_lease(conn, org, namespace, thread_id)
    now = database_clock(conn)
    scope = (org, namespace, thread_id)
    turns = conn.execute(
        "UPDATE loom.conversations SET tombstoned_at = %s WHERE org = %s AND namespace = %s"
        " AND thread_id = %s AND tombstoned_at IS NULL AND (%s::text IS NULL OR agent = %s)",
        (now, *scope, agent, agent),
    ).rowcount
    threads = conn.execute(
        "UPDATE loom.conversation_threads SET tombstoned_at = %s, updated_at = %s"
        " WHERE org = %s AND namespace = %s AND thread_id = %s AND tombstoned_at IS NULL",
        (now, now, *scope),
    ).rowcount
    embeddings = _settle_thread_embeddings(conn, now, scope)
    return now, {
        "loom.conversations": turns,
        "loom.conversation_threads": threads,
        "loom.conversation_embeddings": embeddings,
    }


# A compaction summary: a system turn under the id compaction gives it, whose metadata lists
# the turns it replaced. A client's metadata naming `compacted_from` makes no other turn one.
SUMMARY_ID_PREFIX = "summary-"


def summary_row(alias: str) -> str:
    """SQL true for a row of `alias` that is a compaction summary."""
    return (
        f"({alias}.role = 'system' AND starts_with({alias}.msg_id, '{SUMMARY_ID_PREFIX}')"
        f" AND jsonb_typeof({alias}.metadata -> 'compacted_from') = 'array')"
    )


# A live copy holds an embedding row when it is a turn search indexes (user, assistant, or a
# compaction summary) and its first 2,048 characters are the row's text. A row of exactly 240
# characters (an earlier build's cut, or a turn of that length) is held by a copy whose first
# 2,048 characters are those of the row's own agent's message (live or not); with no such
# message row left (the TTL removed it), by none. Another agent's copy holds it only with the
# whole text of the row's own agent's message, where that is still stored: the row was
# indexed once that text passed the guard, and a copy whose text goes on past the indexed
# part (with a secret, say) was never checked for it.
_ROW_AGENTS_COPY = (
    "SELECT 1 FROM loom.conversations o WHERE o.org = e.org AND o.namespace = e.namespace"
    " AND o.thread_id = e.thread_id AND o.msg_id = e.msg_id AND o.agent = e.agent"
)
HOLDS_EMBEDDING = (
    "h.org = e.org AND h.namespace = e.namespace AND h.thread_id = e.thread_id"
    " AND h.msg_id = e.msg_id AND h.tombstoned_at IS NULL"
    f" AND (h.role IN ('user', 'assistant') OR {summary_row('h')})"
    " AND CASE WHEN length(e.text) = 240 THEN EXISTS (SELECT 1 FROM loom.conversations o"
    "  WHERE o.org = e.org AND o.namespace = e.namespace AND o.thread_id = e.thread_id"
    "  AND o.msg_id = e.msg_id AND o.agent = e.agent"
    "  AND left(o.content, 2048) = left(h.content, 2048))"
    " ELSE left(h.content, 2048) = e.text END"
    # Another agent's copy holds it when its whole text is the row agent's (the text the guard
    # read before the row was written), or, that message gone (expired), is the indexed text
    # itself: text past it was never read, and may be a secret.
    " AND (h.agent = e.agent OR CASE WHEN EXISTS (" + _ROW_AGENTS_COPY + ")"
    "  THEN NOT EXISTS (" + _ROW_AGENTS_COPY + " AND o.content <> h.content)"
    "  ELSE h.content = e.text END)"
)


# An embedding row passed to the live copy that holds it (HOLDS_EMBEDDING) takes that copy's
# agent, role, user, run and saved state: a flag its old holder's user set must not surface
# under another user; a copy its own user saved is preferred.
PASSED_TO_HOLDER = (
    "(agent, role, user_id, run_id, is_saved, saved_at) ="
    " (SELECT h.agent, h.role, h.user_id, h.run_id, h.is_saved, h.saved_at"
    "  FROM loom.conversations h"
    "  WHERE " + HOLDS_EMBEDDING + " ORDER BY h.is_saved DESC, h.ts, h.agent LIMIT 1)"
)


def _settle_thread_embeddings(
    conn: Connection, now: datetime, scope: tuple[str, str, str], msg_id: str | None = None
) -> int:
    """Pass rows whose own agent holds no live copy to another holder (with its agent, role,
    user, run and saved state), else tombstone them; a row flagged saved by a user whose saved
    copy is gone takes a holder's state too (the flag must not outlive the save). One turn's
    rows with `msg_id`, else the thread's.

    Returns the turns tombstoned (one per turn however many models hold it).
    """
    rows_of = "e.org = %s AND e.namespace = %s AND e.thread_id = %s AND e.tombstoned_at IS NULL"
    params: tuple[Any, ...] = scope
    if msg_id is not None:
        rows_of += " AND e.msg_id = %s"
        params = (*scope, msg_id)
    conn.execute(
        "UPDATE loom.conversation_embeddings e SET " + PASSED_TO_HOLDER + " WHERE " + rows_of + ""
        " AND (NOT EXISTS (SELECT 1 FROM loom.conversations h WHERE " + HOLDS_EMBEDDING + ""
        "   AND h.agent = e.agent)"
        "  OR e.is_saved AND NOT EXISTS (SELECT 1 FROM loom.conversations s WHERE s.org = e.org"
        "   AND s.namespace = e.namespace AND s.thread_id = e.thread_id AND s.msg_id = e.msg_id"
        "   AND s.is_saved AND s.user_id = e.user_id AND s.tombstoned_at IS NULL))"
        " AND EXISTS (SELECT 1 FROM loom.conversations h WHERE " + HOLDS_EMBEDDING + ")",
        params,
    )
    rows = conn.execute(
        "UPDATE loom.conversation_embeddings e SET tombstoned_at = %s WHERE " + rows_of + ""
        " AND NOT EXISTS (SELECT 1 FROM loom.conversations h WHERE " + HOLDS_EMBEDDING + ")"
        " RETURNING e.msg_id",
        (now, *params),
    ).fetchall()
    # A row now held by a copy a save alone stored (its recorded copies gone) leaves search.
    marked = settle_saved_only(conn, *scope, None if msg_id is None else [msg_id])
    if rows or marked:  # the windows of the turns around them no longer read their text
        rewrite_thread_windows(conn, *scope)
    return len({r[0] for r in rows})


def settle_turn_embedding(
    conn: Connection, org: str, namespace: str, thread_id: str, msg_id: str
) -> None:
    """Once a copy of a turn is gone: its embedding row passes to another live copy holding
    it, else is tombstoned (the caller holds the thread's lease)."""
    _settle_thread_embeddings(
        conn, database_clock(conn), (org, namespace, thread_id), msg_id=msg_id
    )


# ---- compaction ----------------------------------------------------------------------------


def live_thread_turns(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str | None
) -> list[dict[str, Any]]:
    """Every live turn the thread recorded (one agent's, or each turn once), oldest first: a
    copy a save alone stored is neither summarised nor counted among the recent turns."""
    query = sql.SQL(
        "SELECT c.agent, c.msg_id, c.role, c.content, c.metadata, c.is_saved, c.ts"
        " FROM loom.conversations c WHERE c.org = %(org)s AND c.namespace = %(ns)s"
        " AND c.thread_id = %(thread)s AND c.tombstoned_at IS NULL AND {}"
        " ORDER BY c.ts, c.msg_id"
    ).format(_agent_clause(agent))
    params = {"org": org, "ns": namespace, "thread": thread_id, "agent": agent}
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()


@dataclass(frozen=True)
class WindowState:
    """A compaction window as it stands under the thread's lease."""

    live: set[tuple[str, str]]  # the (agent, msg_id) turns still live
    saved: set[tuple[str, str]]  # of those, the ones saved (never summarised or retired)
    summarised: bool  # a live summary lists a turn of the window no longer live


def window_state(
    conn: Connection, org: str, namespace: str, thread_id: str, keys: list[tuple[str, str]]
) -> WindowState:
    """Which of these (agent, msg_id) turns are still live and which are saved, read under the
    lease; when some are gone, whether a live summary (another compaction's) lists them."""
    rows = conn.execute(
        "SELECT c.agent, c.msg_id, c.is_saved FROM loom.conversations c"
        " JOIN unnest(%s::text[], %s::text[]) AS k(agent, msg_id)"
        " ON c.agent = k.agent AND c.msg_id = k.msg_id"
        " WHERE c.org = %s AND c.namespace = %s AND c.thread_id = %s AND c.tombstoned_at IS NULL",
        ([a for a, _ in keys], [m for _, m in keys], org, namespace, thread_id),
    ).fetchall()
    live = {(a, m) for a, m, _ in rows}
    saved = {(a, m) for a, m, is_saved in rows if is_saved}
    gone = sorted({m for a, m in keys if (a, m) not in live})
    summarised = False
    if gone:
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM loom.conversations c WHERE org = %s AND namespace = %s"
            f" AND thread_id = %s AND tombstoned_at IS NULL AND {summary_row('c')}"
            " AND c.metadata -> 'compacted_from' ?| %s::text[])",
            (org, namespace, thread_id, gone),
        ).fetchone()
        summarised = bool(row and row[0])
    return WindowState(live, saved, summarised)


def insert_summary(conn: Connection, turn: NewTurn, ts: datetime, retired_at: datetime) -> bool:
    """The compaction summary, placed at the first summarised turn's time; False when a row of
    its id exists tombstoned by anything but this compaction's retirement (`retired_at`: a
    failed run's summary of the same turns it replaces), which is never brought back."""
    row = conn.execute(
        "INSERT INTO loom.conversations AS c (org, namespace, thread_id, agent, msg_id, role,"
        " content, metadata, ts) VALUES (%s, %s, %s, %s, %s, 'system', %s, %s, %s)"
        " ON CONFLICT (org, namespace, thread_id, agent, msg_id) DO UPDATE SET"
        " content = EXCLUDED.content, metadata = EXCLUDED.metadata, ts = EXCLUDED.ts,"
        " tombstoned_at = NULL"
        " WHERE c.tombstoned_at IS NULL OR c.tombstoned_at = %s"
        " RETURNING c.msg_id",
        (
            turn.org,
            turn.namespace,
            turn.thread_id,
            turn.agent,
            turn.msg_id,
            turn.content,
            Jsonb(turn.metadata),
            ts,
            retired_at,
        ),
    ).fetchone()
    return row is not None


@dataclass(frozen=True)
class Retired:
    at: datetime  # the tombstone time stamped on them
    keys: set[tuple[str, str]]  # the (agent, msg_id) turns this call retired


def unsaved_copies(
    conn: Connection, org: str, namespace: str, thread_id: str, msg_ids: list[str]
) -> set[tuple[str, str]]:
    """Every agent's live, unsaved copy of these turns, as (agent, msg_id)."""
    rows = conn.execute(
        "SELECT agent, msg_id FROM loom.conversations WHERE org = %s AND namespace = %s"
        " AND thread_id = %s AND msg_id = ANY(%s) AND tombstoned_at IS NULL AND NOT is_saved",
        (org, namespace, thread_id, msg_ids),
    ).fetchall()
    return {(a, m) for a, m in rows}


def retire_turns(
    conn: Connection, org: str, namespace: str, thread_id: str, keys: list[tuple[str, str]]
) -> Retired:
    """Tombstone these (agent, msg_id) turns if still live and unsaved, then settle the
    thread's embeddings as a delete does; returns the turns retired (the caller holds the
    lease, and writes a summary only of turns it retired)."""
    now = database_clock(conn)
    retired = conn.execute(
        "UPDATE loom.conversations c SET tombstoned_at = %s"
        " FROM unnest(%s::text[], %s::text[]) AS k(agent, msg_id)"
        " WHERE c.org = %s AND c.namespace = %s AND c.thread_id = %s AND c.agent = k.agent"
        " AND c.msg_id = k.msg_id AND c.tombstoned_at IS NULL AND NOT c.is_saved"
        " RETURNING c.agent, c.msg_id",
        (now, [a for a, _ in keys], [m for _, m in keys], org, namespace, thread_id),
    ).fetchall()
    _settle_thread_embeddings(conn, now, (org, namespace, thread_id))
    return Retired(now, {(a, m) for a, m in retired})


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
