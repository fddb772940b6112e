"""The rows that track an erasure too large for one request, and their leases.

`status` pending: no worker holds the job; `lease_until`, when set, is the time before which
no worker takes it (a failed pass backs off). running: a worker holds it until `lease_until`;
a running job whose lease ran out lost its worker (a killed pass). `attempts` counts failures
since the last batch that committed: a failed pass, or a worker lost; not the passes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from psycopg import Connection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from chalicelib.names import ME
from chalicelib.store.erasure import Subject
from chalicelib.store.job_claims import CLAIM_SET, LOST_WORKER

_JOB = (
    "job_id, org, kind, user_id, namespaces, purge, subject_sha256, status, step, thread_cursor,"
    " tombstoned, removed, requested_by, attempts, last_error, created_at, updated_at, finished_at"
)


def open_job(
    conn: Connection,
    *,
    job_id: str,
    s: Subject,
    purge: bool,
    subject_sha256: str,
    requested_by: str,
    status: Literal["pending", "running"],
    lease_seconds: int,
) -> tuple[dict[str, Any], bool]:
    """A new job for the subject, or the one still open for it; (job, created)."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            f"INSERT INTO loom.erasure_jobs (job_id, org, kind, user_id, namespaces, purge,"
            f" subject_sha256, status, requested_by, lease_until)"
            f" VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s,"
            f"  CASE WHEN %s = 'running' THEN now() + make_interval(secs => %s) END)"
            f" ON CONFLICT (org, subject_sha256) WHERE status IN ('pending', 'running')"
            f" DO NOTHING RETURNING {_JOB}",
            (job_id, s.org, s.kind, s.user_id, list(s.namespaces) if s.namespaces else None,
             purge, subject_sha256, status, requested_by, status, lease_seconds),
        ).fetchone()  # fmt: skip
        if row is not None:
            return row, True
        existing = cur.execute(
            f"SELECT {_JOB} FROM loom.erasure_jobs WHERE org = %s AND subject_sha256 = %s"
            " AND status IN ('pending', 'running')",
            (s.org, subject_sha256),
        ).fetchone()
    if existing is None:  # it finished between the two statements: ask again
        return open_job(
            conn,
            job_id=job_id,
            s=s,
            purge=purge,
            subject_sha256=subject_sha256,
            requested_by=requested_by,
            status=status,
            lease_seconds=lease_seconds,
        )
    return existing, False


def get_job(
    conn: Connection, org: str, job_id: str, *, namespace: str | None = None
) -> dict[str, Any] | None:
    """The org's job; with `namespace`, only a job whose subject is that one namespace (the
    only subject a token bound to it can name)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {_JOB} FROM loom.erasure_jobs WHERE org = %s AND job_id = %s"
            " AND (%s::text IS NULL OR namespaces = ARRAY[%s::text])",
            (org, job_id, namespace, namespace),
        ).fetchone()


def claim_due_job(conn: Connection, lease_seconds: int, max_attempts: int) -> dict[str, Any] | None:
    """Take the oldest pending job whose backoff is over, or a running one whose lease ran out.
    Taking the latter counts a failed attempt (its worker was lost): the one that uses up
    `max_attempts` ends the job failed, and the row comes back with that status."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "UPDATE loom.erasure_jobs SET" + CLAIM_SET + ""
            " WHERE job_id = (SELECT job_id FROM loom.erasure_jobs"
            "  WHERE (status = 'pending' AND coalesce(lease_until <= clock_timestamp(), true))"
            "   OR (status = 'running' AND lease_until < clock_timestamp())"
            "  ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)"
            f" RETURNING {_JOB}",
            {"max": max_attempts, "lease": lease_seconds, "lost": LOST_WORKER},
        ).fetchone()


def save_progress(
    conn: Connection,
    job: dict[str, Any],
    *,
    lease_seconds: int,
    done: bool,
) -> None:
    """Store the job's step, cursor and counts (in the transaction of the batch they count);
    a batch that commits clears the failures counted before it."""
    cursor = job["thread_cursor"]
    conn.execute(
        "UPDATE loom.erasure_jobs SET"
        # A job asked to run again (erase_again) starts over instead of ending.
        " step = CASE WHEN %(done)s AND rerun THEN 0 ELSE %(step)s::int END,"
        " thread_cursor = CASE WHEN %(done)s AND rerun THEN NULL ELSE %(cursor)s::text[] END,"
        " tombstoned = %(tombstoned)s, removed = %(removed)s, updated_at = now(),"
        " last_error = '', attempts = 0,"
        " status = CASE WHEN %(done)s AND rerun THEN 'pending' WHEN %(done)s THEN 'done'"
        "  ELSE status END,"
        " finished_at = CASE WHEN %(done)s AND NOT rerun THEN clock_timestamp() END,"
        " rerun = rerun AND NOT %(done)s,"
        " lease_until = CASE WHEN %(done)s THEN NULL"
        "  ELSE clock_timestamp() + make_interval(secs => %(lease)s) END"
        " WHERE job_id = %(id)s",
        {"done": done, "step": job["step"], "cursor": list(cursor) if cursor else None,
         "tombstoned": Jsonb(job["tombstoned"]), "removed": Jsonb(job["removed"]),
         "lease": lease_seconds, "id": job["job_id"]},
    )  # fmt: skip


# The erasures whose subject holds a user's rows in a namespace: the user's (any row of their
# personal collection is theirs, whatever user_id it was written with), or the namespace's.
_COVERS = (
    "org = %(org)s AND (kind = 'user' AND (user_id = %(user)s OR %(ns)s = %(me)s || ':' || user_id)"
    " AND (namespaces IS NULL OR %(ns)s = ANY(namespaces))"
    " OR kind = 'namespace_list' AND %(ns)s = ANY(namespaces))"
)


def erase_again(
    conn: Connection, *, org: str, namespace: str, user_id: str, since: datetime
) -> int:
    """After a write for (namespace, user) that began at `since` (database time): every
    erasure of them that may have run meanwhile runs again, so the late write is erased too.
    An open one starts over when it ends; one finished since `since` comes back as a new job
    (or marks the subject's open job). Returns the jobs asked."""
    params = {"org": org, "ns": namespace, "user": user_id, "since": since, "me": ME}
    asked = conn.execute(
        "UPDATE loom.erasure_jobs SET rerun = true, updated_at = now()"
        " WHERE status IN ('pending', 'running') AND " + _COVERS,
        params,
    ).rowcount
    asked += conn.execute(
        "INSERT INTO loom.erasure_jobs (job_id, org, kind, user_id, namespaces, purge,"
        " subject_sha256, status, requested_by)"
        " SELECT 'er_' || replace(gen_random_uuid()::text, '-', ''), org, kind, user_id,"
        "  namespaces, purge, subject_sha256, 'pending', requested_by"
        " FROM (SELECT DISTINCT ON (subject_sha256) * FROM loom.erasure_jobs"
        "  WHERE status = 'done' AND finished_at >= %(since)s AND " + _COVERS + ""
        "  ORDER BY subject_sha256, finished_at DESC) d"
        " ON CONFLICT (org, subject_sha256) WHERE status IN ('pending', 'running')"
        " DO UPDATE SET rerun = true",
        params,
    ).rowcount
    return asked


def release_job(conn: Connection, job_id: str, *, error: str) -> None:
    """Let another pass take the job up at once, no attempt spent (a pass out of its time, or
    an inline erasure that failed)."""
    conn.execute(
        "UPDATE loom.erasure_jobs SET lease_until = NULL, last_error = %s, status = 'pending',"
        " updated_at = now() WHERE job_id = %s AND status = 'running'",
        (error[:2000], job_id),
    )


def retry_job(
    conn: Connection,
    job_id: str,
    *,
    error: str,
    backoff_seconds: float,
    spend_attempt: bool,
    max_attempts: int,
) -> str | None:
    """A pass failed: no worker takes the job for `backoff_seconds`; with `spend_attempt`
    (the pass committed no batch) it counts a failed attempt, and the one that uses up
    `max_attempts` ends the job failed. The new status (None: the job was not running)."""
    row = conn.execute(
        "UPDATE loom.erasure_jobs SET last_error = %(error)s, updated_at = now(),"
        " attempts = attempts + %(spend)s::int,"
        " status = CASE WHEN %(spend)s::int = 1 AND attempts + 1 >= %(max)s THEN 'failed'"
        "  ELSE 'pending' END,"
        " lease_until = CASE WHEN %(spend)s::int = 1 AND attempts + 1 >= %(max)s THEN NULL"
        "  ELSE clock_timestamp() + make_interval(secs => %(backoff)s) END"
        " WHERE job_id = %(id)s AND status = 'running' RETURNING status",
        {
            "error": error[:2000],
            "spend": 1 if spend_attempt else 0,
            "max": max_attempts,
            "backoff": backoff_seconds,
            "id": job_id,
        },
    ).fetchone()
    return row[0] if row else None
