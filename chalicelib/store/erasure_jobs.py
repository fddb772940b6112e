"""The rows that track an erasure too large for one request, and their leases."""

from __future__ import annotations

from typing import Any, Literal

from psycopg import Connection
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from chalicelib.store.erasure import Subject

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
            f" subject_sha256, status, requested_by, lease_until, attempts)"
            f" VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s,"
            f"  CASE WHEN %s = 'running' THEN now() + make_interval(secs => %s) END,"
            f"  CASE WHEN %s = 'running' THEN 1 ELSE 0 END)"
            f" ON CONFLICT (org, subject_sha256) WHERE status IN ('pending', 'running')"
            f" DO NOTHING RETURNING {_JOB}",
            (job_id, s.org, s.kind, s.user_id, list(s.namespaces) if s.namespaces else None,
             purge, subject_sha256, status, requested_by, status, lease_seconds, status),
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


def claim_due_job(conn: Connection, lease_seconds: int) -> dict[str, Any] | None:
    """Take the oldest pending job, or a running one whose lease ran out."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "UPDATE loom.erasure_jobs SET status = 'running', attempts = attempts + 1,"
            " lease_until = clock_timestamp() + make_interval(secs => %s), updated_at = now()"
            " WHERE job_id = (SELECT job_id FROM loom.erasure_jobs"
            "  WHERE status = 'pending' OR (status = 'running' AND lease_until < clock_timestamp())"
            "  ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)"
            f" RETURNING {_JOB}",
            (lease_seconds,),
        ).fetchone()


def save_progress(
    conn: Connection,
    job: dict[str, Any],
    *,
    lease_seconds: int,
    done: bool,
) -> None:
    """Store the job's step, cursor and counts (in the transaction of the batch they count)."""
    cursor = job["thread_cursor"]
    conn.execute(
        "UPDATE loom.erasure_jobs SET step = %s, thread_cursor = %s, tombstoned = %s,"
        " removed = %s, updated_at = now(), last_error = '',"
        " status = CASE WHEN %s THEN 'done' ELSE status END,"
        " finished_at = CASE WHEN %s THEN clock_timestamp() END,"
        " lease_until = CASE WHEN %s THEN NULL"
        "  ELSE clock_timestamp() + make_interval(secs => %s) END"
        " WHERE job_id = %s",
        (job["step"], list(cursor) if cursor else None, Jsonb(job["tombstoned"]),
         Jsonb(job["removed"]), done, done, done, lease_seconds, job["job_id"]),
    )  # fmt: skip


def release_job(conn: Connection, job_id: str, *, error: str, failed: bool) -> None:
    """Let another pass take the job up at once (or end it failed)."""
    conn.execute(
        "UPDATE loom.erasure_jobs SET lease_until = clock_timestamp(), last_error = %s,"
        " status = CASE WHEN %s THEN 'failed' ELSE status END, updated_at = now()"
        " WHERE job_id = %s AND status = 'running'",
        (error[:2000], failed, job_id),
    )
