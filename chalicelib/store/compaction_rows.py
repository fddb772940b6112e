"""Compaction's rows: what marks a summary, the turns it reads, their state, the summary."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import Connection, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from chalicelib.store.turn_pages import agent_clause
from chalicelib.store.turn_writes import NewTurn

# A compaction summary: a system turn under the id compaction gives it, whose metadata lists
# the turns it replaced. A client's metadata naming `compacted_from` makes no other turn one.
SUMMARY_ID_PREFIX = "summary-"


def summary_row(alias: str) -> str:
    """SQL true for a row of `alias` that is a compaction summary."""
    return (
        f"({alias}.role = 'system' AND starts_with({alias}.msg_id, '{SUMMARY_ID_PREFIX}')"
        f" AND jsonb_typeof({alias}.metadata -> 'compacted_from') = 'array')"
    )


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
    ).format(agent_clause(agent))
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
    # Under the thread's lease: the row of its id is revised, or written when there is none.
    row = conn.execute(
        "WITH key AS (SELECT 1 FROM loom.conversations c WHERE c.org = %(org)s"
        "  AND c.namespace = %(ns)s AND c.thread_id = %(thread)s AND c.agent = %(agent)s"
        "  AND c.msg_id = %(msg)s),"
        " revised AS (UPDATE loom.conversations c SET content = %(content)s,"
        "  metadata = %(meta)s, ts = %(ts)s, tombstoned_at = NULL WHERE c.org = %(org)s"
        "  AND c.namespace = %(ns)s AND c.thread_id = %(thread)s AND c.agent = %(agent)s"
        "  AND c.msg_id = %(msg)s AND (c.tombstoned_at IS NULL OR c.tombstoned_at = %(retired)s)"
        "  RETURNING c.msg_id),"
        " written AS (INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id,"
        "  role, content, metadata, ts) SELECT %(org)s, %(ns)s, %(thread)s, %(agent)s, %(msg)s,"
        "  'system', %(content)s, %(meta)s, %(ts)s WHERE NOT EXISTS (SELECT 1 FROM key)"
        "  RETURNING msg_id)"
        " SELECT msg_id FROM revised UNION ALL SELECT msg_id FROM written",
        {
            "org": turn.org,
            "ns": turn.namespace,
            "thread": turn.thread_id,
            "agent": turn.agent,
            "msg": turn.msg_id,
            "content": turn.content,
            "meta": Jsonb(turn.metadata),
            "ts": ts,
            "retired": retired_at,
        },
    ).fetchone()
    return row is not None


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
