"""The thread titler's reads and writes: candidates, claims, titles and refusal marks.

A claim's `title_claimed_until` is its token: the title is written only while the thread row
still holds that value (create, and an erasure that clears a title, reset it). A claim
released without a title (the thread waits, or the model failed) keeps the time it was tried
there, in the past: it is a candidate again, after the threads not tried since. An answer
discarded because the thread changed clears the claim: the thread is asked for again first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row

from chalicelib.store.thread_leases import take_thread_lease

# A thread needs a title when it has no live thread row with a title or a refusal mark.
# No thread row, a deleted one (its id in use again: made anew when claimed), or a live one
# with no title, not refused, not claimed.
_UNTITLED = (
    "(t.thread_id IS NULL OR t.tombstoned_at IS NOT NULL OR (t.title = ''"
    " AND NOT t.metadata ? 'title_refused'"
    " AND (t.title_claimed_until IS NULL OR t.title_claimed_until < now())))"
)


def titler_candidates(
    conn: Connection, window_hours: int, min_turns: int, limit: int
) -> list[dict[str, Any]]:
    """Untitled threads of recording namespaces, active in the window (by the turns they
    recorded: a copy a save alone stored is none). First those never tried, or with a user or
    assistant turn since they were last tried, most recently active first; then those tried
    and given nothing new to title from, tried longest ago first. So threads that keep waiting
    (or failing) go behind every other candidate, however busy with tool or system turns, and
    never hold every slot of a pass."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "WITH active AS ("
            "  SELECT DISTINCT c.org, c.namespace, c.thread_id FROM loom.conversations c"
            "  WHERE c.ts >= now() - make_interval(hours => %s) AND c.tombstoned_at IS NULL"
            "  AND NOT c.saved_only)"
            " SELECT a.org, a.namespace, a.thread_id, s.turns, s.last_ts, s.first_agent"
            " FROM active a"
            " JOIN loom.namespaces n ON n.org = a.org AND n.namespace = a.namespace"
            "  AND n.conversation_logging_enabled"
            " LEFT JOIN loom.conversation_threads t ON t.org = a.org"
            "  AND t.namespace = a.namespace AND t.thread_id = a.thread_id"
            " CROSS JOIN LATERAL (SELECT count(DISTINCT c.msg_id) AS turns,"
            "  max(c.ts) AS last_ts, (array_agg(c.agent ORDER BY c.ts))[1] AS first_agent,"
            "  max(c.ts) FILTER (WHERE c.role IN ('user', 'assistant')) AS last_said"
            "  FROM loom.conversations c WHERE c.org = a.org AND c.namespace = a.namespace"
            "  AND c.thread_id = a.thread_id AND c.tombstoned_at IS NULL AND NOT c.saved_only) s"
            " CROSS JOIN LATERAL (SELECT t.title_claimed_until IS NOT NULL"
            "  AND coalesce(s.last_said <= t.title_claimed_until, true) AS tried) w"
            " WHERE " + _UNTITLED + " AND s.turns >= %s"
            " ORDER BY w.tried, CASE WHEN w.tried THEN t.title_claimed_until END,"
            " s.last_ts DESC LIMIT %s",
            (window_hours, min_turns, limit),
        ).fetchall()


# A deleted thread row claimed again is made anew, as the titler makes one.
_ANEW_IF_DELETED = ", ".join(
    f"{column} = CASE WHEN t.tombstoned_at IS NULL THEN t.{column} ELSE {fresh} END"
    for column, fresh in (
        ("agent", "EXCLUDED.agent"),
        ("origin", "'titler'"),
        ("title", "''"),
        ("title_by_titler", "false"),
        ("metadata", "'{}'"),
        ("run_id", "'-'"),
        ("user_id", "'-'"),
        ("created_at", "now()"),
        ("updated_at", "now()"),
        ("tombstoned_at", "NULL"),
    )
)


def claim_thread(
    conn: Connection, org: str, namespace: str, thread_id: str, agent: str, seconds: int
) -> datetime | None:
    """Claim an untitled thread for one titler run: the claim's token (its
    `title_claimed_until`), or None when a concurrent run holds it or it needs no title."""
    row = conn.execute(
        "INSERT INTO loom.conversation_threads AS t (org, namespace, thread_id, agent, origin,"
        " title_claimed_until) VALUES (%s, %s, %s, %s, 'titler',"
        " clock_timestamp() + make_interval(secs => %s))"
        " ON CONFLICT (org, namespace, thread_id) DO UPDATE"
        " SET title_claimed_until = EXCLUDED.title_claimed_until, " + _ANEW_IF_DELETED + ""
        " WHERE " + _UNTITLED + " RETURNING title_claimed_until",
        (org, namespace, thread_id, agent, seconds),
    ).fetchone()
    return row[0] if row is not None else None


def first_turns(
    conn: Connection, org: str, namespace: str, thread_id: str, n: int
) -> list[dict[str, Any]]:
    """The thread's first `n` live user and assistant turns it recorded (each turn once), with
    the (agent, msg_id) of the copy read."""
    with conn.cursor(row_factory=dict_row) as cur:
        # One copy a msg_id (agents stamp their copies apart), turns in the order first logged.
        return cur.execute(
            "SELECT agent, msg_id, role, content FROM (SELECT DISTINCT ON (msg_id) agent, msg_id,"
            " role, content, ts FROM loom.conversations"
            " WHERE org = %s AND namespace = %s AND thread_id = %s AND tombstoned_at IS NULL"
            " AND NOT saved_only AND role IN ('user', 'assistant') ORDER BY msg_id, ts, agent) c"
            " ORDER BY ts, msg_id LIMIT %s",
            (org, namespace, thread_id, n),
        ).fetchall()


def finish_claim(
    conn: Connection,
    org: str,
    namespace: str,
    thread_id: str,
    *,
    claim: datetime,
    turns: list[tuple[str, str]],
    title: str = "",
    refused: bool = False,
) -> bool:
    """Write the title (or the refusal mark) read from `turns` ((agent, msg_id) copies), only
    while the claim is still ours, the thread row is live, untitled and unmarked, and every one
    of those copies is still live; else, or with neither, release the claim: marked with the
    time tried (the thread waits, or the model failed), or cleared (an answer discarded).
    Runs under the thread's lease, as erasure, deletes and appends do, so an erasure either
    sees the title written (and clears it) or has tombstoned the turns before the check. True
    when the title or mark was written."""
    take_thread_lease(conn, org, namespace, thread_id)
    written = False
    if title or refused:
        row = conn.execute(
            "UPDATE loom.conversation_threads t SET"
            " title = CASE WHEN %(title)s <> '' THEN %(title)s ELSE t.title END,"
            " title_by_titler = %(title)s <> '',"
            " metadata = CASE WHEN %(refused)s THEN t.metadata || '{\"title_refused\": true}'"
            "  ELSE t.metadata END,"
            " title_claimed_until = NULL, updated_at = now()"
            " WHERE t.org = %(org)s AND t.namespace = %(ns)s AND t.thread_id = %(thread)s"
            " AND t.title_claimed_until = %(claim)s AND t.tombstoned_at IS NULL"
            " AND t.title = '' AND NOT t.metadata ? 'title_refused'"
            " AND (SELECT count(*) FROM loom.conversations c WHERE c.org = t.org"
            "  AND c.namespace = t.namespace AND c.thread_id = t.thread_id"
            "  AND c.tombstoned_at IS NULL AND (c.agent, c.msg_id) IN"
            "  (SELECT * FROM unnest(%(agents)s::text[], %(msgs)s::text[]))) = %(n)s"
            " RETURNING 1",
            {
                "title": title,
                "refused": refused,
                "org": org,
                "ns": namespace,
                "thread": thread_id,
                "claim": claim,
                "agents": [a for a, _ in turns],
                "msgs": [m for _, m in turns],
                "n": len(set(turns)),
            },
        ).fetchone()
        written = row is not None
    if not written:  # a title discarded (the thread changed) is asked for again first
        conn.execute(
            "UPDATE loom.conversation_threads SET title_claimed_until ="
            " CASE WHEN %s THEN NULL ELSE clock_timestamp() END"
            " WHERE org = %s AND namespace = %s AND thread_id = %s AND title_claimed_until = %s",
            (bool(title or refused), org, namespace, thread_id, claim),
        )
    return written
