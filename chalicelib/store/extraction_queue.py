"""The deferred extraction queue: enqueue, claim with a lease, finish, and the status views."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from chalicelib.store.job_claims import CLAIM_SET, LOST_WORKER

# The reasons the model gateway holds a job for (providers.llm): each hold ends at not_before.
GATEWAY_REASONS = ("gateway_wait", "gateway_refused")
_GATEWAY = "('gateway_wait', 'gateway_refused')"
# A job whose gateway hold ended (q: the job's row; {now}: the time compared with).
_GATEWAY_HOLD_ENDED = (
    "q.status = 'held' AND q.held_reason IN " + _GATEWAY + " AND q.not_before <= {now}"
)
# Another job of the same enqueuer in the same namespace that the gateway still holds: while
# one is, the worker claims none of that enqueuer's requests there.
_ENQUEUER_HELD = (
    "EXISTS (SELECT 1 FROM loom.memory_extraction_queue h WHERE h.org = q.org"
    " AND h.namespace = q.namespace AND h.principal IS NOT DISTINCT FROM q.principal"
    " AND h.status = 'held' AND h.held_reason IN " + _GATEWAY + " AND h.not_before > {now}"
    " AND h.queue_id <> q.queue_id)"
)

_STATUS = "queue_id, status, attempts, sizes, last_error, held_reason, created_at, updated_at"


def enqueue(
    conn: Connection,
    *,
    queue_id: str,
    org: str,
    namespace: str,
    agent: str,
    user_id: str,
    principal: str | None,
    read_user_id: str | None,
    request: dict[str, Any],
    sizes: dict[str, int],
    token_agent: str | None = None,
) -> None:
    conn.execute(
        "INSERT INTO loom.memory_extraction_queue (queue_id, org, namespace, agent, user_id,"
        " principal, read_user_id, token_agent, request, sizes)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (queue_id, org, namespace, agent, user_id, principal, read_user_id, token_agent,
         Jsonb(request), Jsonb(sizes)),
    )  # fmt: skip


def claim(
    conn: Connection, queue_id: str, lease_seconds: float, max_attempts: int
) -> dict[str, Any] | None:
    """Take a due job (pending, or running with an expired lease) for one worker. Its
    `lease_until` is the claim's token: finish and retry_later act only while it holds. A
    running job whose lease expired lost its worker (killed, or out of time): taking it
    spends an attempt, and the one that uses up `max_attempts` ends it failed instead (the row
    comes back with that status). `claimed_at` is when the request left the table: database
    time. A job the gateway held is taken once its hold ended, and no job is taken while the
    gateway holds another of its enqueuer's in the namespace."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "UPDATE loom.memory_extraction_queue q SET" + CLAIM_SET + ", held_reason = ''"
            " WHERE queue_id = %(id)s AND ((status = 'pending' AND not_before <= clock_timestamp())"
            "  OR (status = 'running' AND lease_until < clock_timestamp())"
            "  OR (" + _GATEWAY_HOLD_ENDED.format(now="clock_timestamp()") + "))"
            " AND NOT " + _ENQUEUER_HELD.format(now="clock_timestamp()") + ""
            " RETURNING queue_id, org, namespace, agent, user_id, principal, read_user_id,"
            " token_agent, request, attempts, created_at, status, lease_until,"
            " clock_timestamp() AS claimed_at",
            {"max": max_attempts, "lease": lease_seconds, "lost": LOST_WORKER, "id": queue_id},
        ).fetchone()


def not_before(conn: Connection, queue_id: str) -> tuple[str, datetime] | None:
    row = conn.execute(
        "SELECT status, not_before FROM loom.memory_extraction_queue WHERE queue_id = %s",
        (queue_id,),
    ).fetchone()
    return (row[0], row[1]) if row else None


def finish(conn: Connection, queue_id: str, result: dict[str, Any], lease: datetime) -> bool:
    """Mark the job done, only while the claim `lease` still holds it (a worker that outlived
    its lease, whose job another took, changes nothing); True when it did."""
    row = conn.execute(
        "UPDATE loom.memory_extraction_queue SET status = 'done', result = %s, last_error = '',"
        " held_reason = '', lease_until = NULL, updated_at = now()"
        " WHERE queue_id = %s AND status = 'running' AND lease_until = %s RETURNING 1",
        (Jsonb(result), queue_id, lease),
    ).fetchone()
    return row is not None


def retry_later(
    conn: Connection, queue_id: str, *, lease: datetime, delay_seconds: float, error: str,
    spend_attempt: bool, max_attempts: int,
) -> str | None:  # fmt: skip
    """Back to pending after `delay_seconds`, or failed once a spent attempt runs them out (one
    not spent never fails a job, even one retried past its attempts); the new status. Only
    while the claim `lease` still holds the job: None (nothing changed) when it does not."""
    row = conn.execute(
        "UPDATE loom.memory_extraction_queue SET"
        " attempts = attempts + %(spend)s::int,"
        " status = CASE WHEN %(spend)s::int = 1 AND attempts + 1 >= %(max)s THEN 'failed'"
        "  ELSE 'pending' END,"
        " not_before = clock_timestamp() + make_interval(secs => %(delay)s),"
        " last_error = %(error)s, lease_until = NULL, updated_at = now()"
        " WHERE queue_id = %(id)s AND status = 'running' AND lease_until = %(lease)s"
        " RETURNING status",
        {
            "spend": 1 if spend_attempt else 0,
            "max": max_attempts,
            "delay": delay_seconds,
            "error": error[:2000],
            "id": queue_id,
            "lease": lease,
        },
    ).fetchone()
    return row[0] if row else None


def take_back_lost(
    conn: Connection, lost_for_seconds: int, max_attempts: int, limit: int
) -> list[tuple[str, str]]:
    """Running jobs whose lease expired `lost_for_seconds` ago (their worker was lost and no
    delivery took them again: their message went to the dead-letter queue, or was lost) go
    back to pending at once, an attempt spent, or end failed when it was their last; returns
    their (queue_id, new status)."""
    rows = conn.execute(
        "UPDATE loom.memory_extraction_queue SET attempts = attempts + 1,"
        " status = CASE WHEN attempts + 1 >= %(max)s THEN 'failed' ELSE 'pending' END,"
        " not_before = clock_timestamp(), last_error = %(lost)s, lease_until = NULL,"
        " updated_at = now()"
        " WHERE queue_id IN (SELECT queue_id FROM loom.memory_extraction_queue"
        "  WHERE status = 'running'"
        "  AND lease_until < clock_timestamp() - make_interval(secs => %(secs)s)"
        "  ORDER BY lease_until LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
        " AND status = 'running' RETURNING queue_id, status",
        {"max": max_attempts, "lost": LOST_WORKER, "secs": lost_for_seconds, "limit": limit},
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def due_jobs(conn: Connection, limit: int) -> list[str]:
    """Pending jobs whose time has come, running ones whose lease expired and held ones whose
    gateway hold ended, oldest first; none of an enqueuer the gateway holds in the namespace
    (they would fill every batch and the worker would never reach the others' work)."""
    rows = conn.execute(
        "SELECT queue_id FROM loom.memory_extraction_queue q"
        " WHERE ((status = 'pending' AND not_before <= now())"
        "  OR (status = 'running' AND lease_until < now())"
        "  OR (" + _GATEWAY_HOLD_ENDED.format(now="now()") + "))"
        " AND NOT " + _ENQUEUER_HELD.format(now="now()") + ""
        " ORDER BY not_before LIMIT %s",
        (limit,),
    ).fetchall()
    return [r[0] for r in rows]


def expire_old(conn: Connection, older_than_days: int) -> list[tuple[str, str, str]]:
    """Fail jobs still waiting this long (a running one whose lease expired waits too: its
    worker was lost); returns their (queue_id, org, namespace)."""
    rows = conn.execute(
        "UPDATE loom.memory_extraction_queue SET status = 'failed',"
        " last_error = 'expired: still waiting a day before the queue TTL', lease_until = NULL,"
        " updated_at = now()"
        " WHERE (status IN ('pending', 'held') OR (status = 'running' AND lease_until < now()))"
        " AND created_at < now() - make_interval(days => %s)"
        " RETURNING queue_id, org, namespace",
        (older_than_days,),
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def drop_past_ttl(conn: Connection, days: int) -> int:
    """Remove the jobs queued more than `days` ago, whatever their status, with the request
    (its transcript) each holds: the queue's TTL. How many went."""
    return conn.execute(
        "DELETE FROM loom.memory_extraction_queue"
        " WHERE created_at < now() - make_interval(days => %s)",
        (days,),
    ).rowcount


def statuses(
    conn: Connection,
    *,
    org: str,
    namespace: str,
    queue_ids: list[str] | None,
    status: str | None,
    principal: str | None,
    only_principal: bool,
    user_id: str | None,
    limit: int,
) -> list[dict[str, Any]]:
    """Batches of a namespace, filtered by ids, status, the enqueuer and the user."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {_STATUS} FROM loom.memory_extraction_queue"
            " WHERE org = %(org)s AND namespace = %(ns)s"
            " AND (%(ids)s::text[] IS NULL OR queue_id = ANY(%(ids)s))"
            " AND (%(status)s::text IS NULL OR status = %(status)s)"
            " AND (NOT %(only)s OR principal IS NOT DISTINCT FROM %(principal)s)"
            " AND (%(user)s::text IS NULL OR user_id = %(user)s)"
            " ORDER BY created_at DESC LIMIT %(limit)s",
            {
                "org": org,
                "ns": namespace,
                "ids": queue_ids,
                "status": status,
                "only": only_principal,
                "principal": principal,
                "user": user_id,
                "limit": limit,
            },
        ).fetchall()


def request_retry(conn: Connection, queue_ids: list[str], expired_days: int) -> list[str]:
    """Failed batches back to pending (not those queued `expired_days` ago or more)."""
    rows = conn.execute(
        "UPDATE loom.memory_extraction_queue SET status = 'pending', not_before = now(),"
        " retry_requested_at = now(), updated_at = now()"
        " WHERE queue_id = ANY(%s) AND status = 'failed'"
        " AND created_at >= now() - make_interval(days => %s) RETURNING queue_id",
        (queue_ids, expired_days),
    ).fetchall()
    return [r[0] for r in rows]


def has_pending(conn: Connection, org: str, namespace: str, users: list[str] | None) -> bool:
    """Whether a deferred batch of the namespace for these users (None: any) has not run yet,
    whoever queued it: its facts are missing from what a read of theirs finds."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM loom.memory_extraction_queue WHERE org = %s"
        " AND namespace = %s AND (%s::text[] IS NULL OR user_id = ANY(%s::text[]))"
        " AND status IN ('pending', 'running', 'held'))",
        (org, namespace, users, users),
    ).fetchone()
    return bool(row and row[0])


def stranded(conn: Connection, older_than_seconds: int, limit: int) -> list[str]:
    """Pending jobs due for a while, and gateway holds ended a while ago: their message was
    lost (or never sent)."""
    rows = conn.execute(
        "SELECT queue_id FROM loom.memory_extraction_queue WHERE (status = 'pending'"
        "  OR (status = 'held' AND held_reason IN " + _GATEWAY + "))"
        " AND not_before < now() - make_interval(secs => %s) ORDER BY not_before LIMIT %s",
        (older_than_seconds, limit),
    ).fetchall()
    return [r[0] for r in rows]


def hold(
    conn: Connection,
    queue_id: str,
    *,
    lease: datetime,
    reason: str,
    seconds: float | None = None,
    error: str = "",
) -> bool:
    """A claimed job whose model call is held: held with the reason, no attempt spent; for
    `seconds` when the hold ends by time (the gateway's: not_before is when), else until it
    is released. Only while the claim `lease` still holds the job."""
    return bool(
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET status = 'held', held_reason = %(reason)s,"
            " not_before = CASE WHEN %(secs)s::float8 IS NULL THEN not_before"
            "  ELSE clock_timestamp() + make_interval(secs => %(secs)s::float8) END,"
            " last_error = CASE WHEN %(error)s = '' THEN last_error ELSE %(error)s END,"
            " lease_until = NULL, updated_at = now()"
            " WHERE queue_id = %(id)s AND status = 'running' AND lease_until = %(lease)s"
            " RETURNING 1",
            {"reason": reason, "secs": seconds, "error": error[:2000], "id": queue_id,
             "lease": lease},
        ).fetchone()
    )  # fmt: skip


def claimable_at(conn: Connection, queue_id: str) -> tuple[str, datetime | None] | None:
    """A job's status and when a claim can next take it: a pending one's time, or the end of
    a gateway hold on it or on another of its enqueuer's in the namespace; a held one's hold's
    end (None while a model-calls switch holds it: released when switched on)."""
    row = conn.execute(
        "SELECT q.status, CASE"
        "  WHEN q.status = 'held' AND q.held_reason NOT IN " + _GATEWAY + " THEN NULL"
        "  ELSE greatest(q.not_before, (SELECT max(h.not_before)"
        "   FROM loom.memory_extraction_queue h WHERE h.org = q.org"
        "   AND h.namespace = q.namespace AND h.principal IS NOT DISTINCT FROM q.principal"
        "   AND h.status = 'held' AND h.held_reason IN " + _GATEWAY + "))"
        " END FROM loom.memory_extraction_queue q WHERE q.queue_id = %s",
        (queue_id,),
    ).fetchone()
    return (row[0], row[1]) if row else None


def release_held(
    conn: Connection, reason: str, *, org: str | None, still_held: frozenset[str]
) -> list[str]:
    """Held jobs whose hold ended go back to pending, due now: the org's (or every org's but
    those `still_held`); their ids."""
    rows = conn.execute(
        "UPDATE loom.memory_extraction_queue SET status = 'pending', held_reason = '',"
        " not_before = now(), updated_at = now()"
        " WHERE status = 'held' AND held_reason = %s"
        " AND (%s::text IS NULL OR org = %s) AND NOT (org = ANY(%s))"
        " RETURNING queue_id",
        (reason, org, org, list(still_held)),
    ).fetchall()
    return [r[0] for r in rows]
