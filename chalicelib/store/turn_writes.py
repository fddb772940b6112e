"""Recording turns: which copies exist already, adopting saved copies, inserting turns."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from psycopg import Connection, Cursor
from psycopg.types.json import Jsonb

from chalicelib.search.store_upkeep import rewrite_thread_windows
from chalicelib.store.namespaces import conversation_logging_enabled
from chalicelib.store.pool import pipelined_transaction
from chalicelib.store.recorded import settle_saved_only
from chalicelib.store.thread_leases import take_thread_lease

TurnState = Literal["live", "saved_only", "tombstoned"]
# A saved-only copy the append did not adopt: the namespace does not record.
UNRECORDED = "unrecorded"


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
    transaction, sent whole in one round trip (`conn` from autocommit_connection). Copies that exist
    already are skipped. Returns each inserted turn's ts; None when the namespace does not
    record (recording fails closed: a namespace with no row does not record).
    """
    first = turns[0]
    with pipelined_transaction(conn):
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
        " FROM (SELECT DISTINCT ON (u.msg_id) * FROM unnest(%s::text[], %s::text[], %s::text[],"
        "  %s::text[], %s::text[], %s::text[], %s::jsonb[], %s::int[]) WITH ORDINALITY"
        "  AS u(msg_id, role, content, reasoning, user_id, run_id, metadata, tokens, ord)"
        "  ORDER BY u.msg_id, u.ord) t"
        " WHERE EXISTS (SELECT 1 FROM loom.namespaces n WHERE n.org = %s AND n.namespace = %s"
        "   AND n.conversation_logging_enabled)"
        # A copy any month holds is kept: the key is unique under the thread's lease, not by
        # the primary key (which holds ts, the partitions' key).
        " AND NOT EXISTS (SELECT 1 FROM loom.conversations c WHERE c.org = %s"
        "   AND c.namespace = %s AND c.thread_id = %s AND c.agent = %s AND c.msg_id = t.msg_id)"
        " ORDER BY t.ord"
        " RETURNING msg_id, ts",
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
            first.org,
            first.namespace,
            first.thread_id,
            first.agent,
        ),
    )
