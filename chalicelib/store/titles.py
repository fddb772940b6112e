"""The thread titler's reads and writes: candidates, claims, titles and refusal marks."""

from __future__ import annotations

from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row

# A thread needs a title when it has no live thread row with a title or a refusal mark.
_UNTITLED = (
    "(t.thread_id IS NULL OR (t.tombstoned_at IS NULL AND t.title = ''"
    " AND NOT t.metadata ? 'title_refused'"
    " AND (t.title_claimed_until IS NULL OR t.title_claimed_until < now())))"
)


def titler_candidates(
    conn: Connection, window_hours: int, min_turns: int, limit: int
) -> list[dict[str, Any]]:
    """Untitled threads of recording namespaces, active in the window, most recent first."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "WITH active AS ("
            "  SELECT DISTINCT c.org, c.namespace, c.thread_id FROM loom.conversations c"
            "  WHERE c.ts >= now() - make_interval(hours => %s) AND c.tombstoned_at IS NULL)"
            " SELECT a.org, a.namespace, a.thread_id, s.turns, s.last_ts, s.first_agent"
            " FROM active a"
            " JOIN loom.namespaces n ON n.org = a.org AND n.namespace = a.namespace"
            "  AND n.conversation_logging_enabled"
            " LEFT JOIN loom.conversation_threads t ON t.org = a.org"
            "  AND t.namespace = a.namespace AND t.thread_id = a.thread_id"
            " CROSS JOIN LATERAL (SELECT count(DISTINCT c.msg_id) AS turns,"
            "  max(c.ts) AS last_ts, (array_agg(c.agent ORDER BY c.ts))[1] AS first_agent"
            "  FROM loom.conversations c WHERE c.org = a.org AND c.namespace = a.namespace"
            "  AND c.thread_id = a.thread_id AND c.tombstoned_at IS NULL) s"
            " WHERE " + _UNTITLED + " AND s.turns >= %s"
            " ORDER BY s.last_ts DESC LIMIT %s",
            (window_hours, min_turns, limit),
        ).fetchall()


def claim_thread(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str, seconds: int
) -> bool:
    """Claim an untitled thread for one titler run; a concurrent run gets False."""
    row = conn.execute(
        "INSERT INTO loom.conversation_threads AS t (org, namespace, thread_id, agent, origin,"
        " title_claimed_until) VALUES (%s, %s, %s, %s, 'titler', now() + make_interval(secs => %s))"
        " ON CONFLICT (org, namespace, thread_id) DO UPDATE"
        " SET title_claimed_until = EXCLUDED.title_claimed_until"
        " WHERE " + _UNTITLED + " RETURNING 1",
        (org, namespace, thread_id, agent, seconds),
    ).fetchone()
    return row is not None


def first_turns(
    conn: Connection, org: str, namespace: str, thread_id: str, n: int
) -> list[dict[str, Any]]:
    """The thread's first `n` live user and assistant turns (each turn once)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT DISTINCT ON (ts, msg_id) role, content FROM loom.conversations"
            " WHERE org = %s AND namespace = %s AND thread_id = %s AND tombstoned_at IS NULL"
            " AND role IN ('user', 'assistant') ORDER BY ts, msg_id LIMIT %s",
            (org, namespace, thread_id, n),
        ).fetchall()


def finish_claim(
    conn: Connection,
    org: str,
    namespace: str,
    thread_id: str,
    *,
    title: str = "",
    refused: bool = False,
) -> None:
    """Write the title (or the refusal mark), or just release the claim."""
    conn.execute(
        "UPDATE loom.conversation_threads SET title = CASE WHEN %s <> '' THEN %s ELSE title END,"
        " metadata = CASE WHEN %s THEN metadata || '{\"title_refused\": true}' ELSE metadata END,"
        " title_claimed_until = NULL, updated_at = now()"
        " WHERE org = %s AND namespace = %s AND thread_id = %s",
        (title, title, refused, org, namespace, thread_id),
    )
