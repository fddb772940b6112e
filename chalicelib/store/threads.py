"""Thread rows (title, metadata, run) and the listing of recently active threads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import Connection, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from chalicelib.store.turn_pages import agent_clause


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
    first_copy = sql.SQL(" AND ") + agent_clause(None, alias="l") if agent is None else sql.SQL("")
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
