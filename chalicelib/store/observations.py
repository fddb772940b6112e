"""Tool observations of a session, and the sessions ready to distil."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row


def record(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    agent: str,
    user_id: str,
    session_id: str,
    tool: str,
    action: str,
    input_text: str,
    output_text: str,
    files: list[str],
    ts: datetime | None,
) -> tuple[int, datetime]:
    row = conn.execute(
        "INSERT INTO loom.observations (org, namespace, agent, user_id, session_id, tool, action,"
        " input, output, files, ts) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
        " coalesce(%s, now())) RETURNING id, ts",
        (org, namespace, agent, user_id, session_id, tool, action, input_text, output_text,
         files, ts),
    ).fetchone()  # fmt: skip
    assert row is not None
    return int(row[0]), row[1]


def crystallize(conn: Connection, org: str, namespace: str, session_id: str, user_id: str) -> int:
    """Mark one user's observations of a session ready; other users' rows are left alone."""
    return conn.execute(
        "UPDATE loom.observations SET crystallized_at = now() WHERE org = %s AND namespace = %s"
        " AND session_id = %s AND user_id = %s AND crystallized_at IS NULL",
        (org, namespace, session_id, user_id),
    ).rowcount


def _unclaimed(alias: str) -> str:
    return f"({alias}distill_claimed_until IS NULL OR {alias}distill_claimed_until < now())"


def claim_ready_sessions(
    conn: Connection, limit: int, seconds: int, skip_orgs: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """Crystallized, undistilled sessions, one per (org, namespace, session, user), the ones
    ready longest first, claimed for one worker run: each row returned carries the claim's
    token (`claim`, its rows' distill_claimed_until), and the run reads and finishes only the
    rows holding it. A row another run claimed, or one waiting after a failed distillation,
    is left alone (the claim is checked again on the row itself), and so is every session of
    the `skip_orgs` (their model calls are switched off)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "WITH ready AS (SELECT org, namespace, session_id, user_id"
            "  FROM loom.observations WHERE crystallized_at IS NOT NULL AND distilled_at IS NULL"
            "  AND " + _unclaimed("") + " AND NOT (org = ANY(%s))"
            "  GROUP BY org, namespace, session_id, user_id"
            "  ORDER BY min(crystallized_at) LIMIT %s)"
            " UPDATE loom.observations o SET distill_claimed_until = now()"
            "  + make_interval(secs => %s) FROM ready r WHERE o.org = r.org"
            "  AND o.namespace = r.namespace AND o.session_id = r.session_id"
            "  AND o.user_id = r.user_id AND o.distilled_at IS NULL AND " + _unclaimed("o.") + ""
            " RETURNING o.org, o.namespace, o.session_id, o.agent, o.user_id,"
            " o.distill_claimed_until AS claim",
            (list(skip_orgs), limit, seconds),
        ).fetchall()


def session_observations(
    conn: Connection, org: str, namespace: str, session_id: str, user_id: str, claim: datetime
) -> list[dict[str, Any]]:
    """One user's crystallized, undistilled observations of a session that this run's claim
    holds, oldest first."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT id, agent, user_id, tool, action, input, output, files, ts"
            " FROM loom.observations WHERE org = %s AND namespace = %s AND session_id = %s"
            " AND user_id = %s AND crystallized_at IS NOT NULL AND distilled_at IS NULL"
            " AND distill_claimed_until = %s ORDER BY ts, id",
            (org, namespace, session_id, user_id, claim),
        ).fetchall()


def finish_session(
    conn: Connection,
    org: str,
    namespace: str,
    session_id: str,
    user_id: str,
    distilled_ids: list[int],
    claim: datetime,
    retry_after_seconds: int = 0,
) -> None:
    """Release this run's claim on one user's session, marking distilled the observations it
    read (one crystallized while it ran waits for the next pass); after a failure, the rest
    of the claim wait `retry_after_seconds` while other sessions go first."""
    conn.execute(
        "UPDATE loom.observations SET distill_claimed_until = CASE WHEN %s > 0"
        "  THEN now() + make_interval(secs => %s) END,"
        " distilled_at = CASE WHEN id = ANY(%s) THEN now() ELSE distilled_at END"
        " WHERE org = %s AND namespace = %s AND session_id = %s AND user_id = %s"
        " AND crystallized_at IS NOT NULL AND distill_claimed_until = %s",
        (retry_after_seconds, retry_after_seconds, distilled_ids, org, namespace, session_id,
         user_id, claim),
    )  # fmt: skip
