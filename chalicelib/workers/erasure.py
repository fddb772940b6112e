"""The erasure worker: runs the jobs erasure.request left for it (large subjects, or deferred),
a batch per transaction, the job's progress saved with the batch it counts.

A pass that fails backs the job off (1, 5, 15, then 60 minutes) and takes no job twice; only a
pass that committed no batch (or a worker lost with the job) counts a failed attempt, and a
batch that commits clears the count: an erasure ends failed only after MAX_ATTEMPTS failures
in a row, about an hour and a half of them, with no progress between."""

from __future__ import annotations

from typing import Any

from psycopg import Connection

from chalicelib.deps import Deps
from chalicelib.observability import logger
from chalicelib.store import erasure as store
from chalicelib.store import erasure_jobs, job_claims
from chalicelib.store.audit import write_audit
from chalicelib.store.pool import database_clock

LEASE_SECONDS = 300
PASS_BUDGET_SECONDS = 240.0  # under the function's 300 s timeout
THREAD_BATCH = 200
ROW_BATCH = 5000
MAX_ATTEMPTS = 5
BACKOFF_SECONDS = (60, 300, 900, 3600)  # after the 1st, 2nd, 3rd and later failures in a row


def subject_of(job: dict[str, Any]) -> store.Subject:
    namespaces = job["namespaces"]
    return store.Subject(
        org=job["org"],
        kind=job["kind"],
        user_id=job["user_id"],
        namespaces=tuple(namespaces) if namespaces is not None else None,
    )


def advance(
    conn: Connection, job: dict[str, Any], *, thread_batch: int | None, row_batch: int | None
) -> bool:
    """Run one batch of the job's current step (None: the whole step) and move it on;
    updates the job's step, cursor and counts in place. True once every step is done."""
    s, purge = subject_of(job), job["purge"]
    now = database_clock(conn)
    if job["step"] == 0:
        cursor = job["thread_cursor"]
        threads = store.next_threads(conn, s, tuple(cursor) if cursor else None, thread_batch)
        tomb: store.Counts = {}
        removed: store.Counts = {}
        if threads:
            tomb, removed = store.erase_threads(conn, s, threads, purge=purge, now=now)
            job["thread_cursor"] = list(threads[-1])
        _add(job["tombstoned"], tomb)
        _add(job["removed"], removed)
        if thread_batch is None or len(threads) < thread_batch:
            job["step"], job["thread_cursor"] = 1, None
    else:
        table = store.GENERIC[job["step"] - 1]
        action, n = store.erase_table(conn, table, s, purge=purge, now=now, limit=row_batch)
        _add(job[action], {table.name: n})
        if row_batch is None or n < row_batch:
            job["step"] += 1
    return bool(job["step"] > len(store.GENERIC))


def _add(into: dict[str, int], counts: store.Counts) -> None:
    for table, n in counts.items():
        into[table] = into.get(table, 0) + n


def finish(conn: Connection, job: dict[str, Any]) -> None:
    """Mark the job done and leave its hash-only audit row."""
    erasure_jobs.save_progress(conn, job, lease_seconds=LEASE_SECONDS, done=True)
    write_audit(
        conn,
        org=job["org"],
        namespace=",".join(job["namespaces"] or []),
        op="erasure.done",
        principal=job["requested_by"],
        body_sha256=job["subject_sha256"],
    )


def run_erasure_jobs(
    deps: Deps, *, thread_batch: int = THREAD_BATCH, row_batch: int = ROW_BATCH
) -> dict[str, int]:
    """One pass: take due jobs one at a time and run them batch by batch, within a budget."""
    started = deps.monotonic()
    jobs = batches = 0
    while deps.monotonic() - started < PASS_BUDGET_SECONDS:
        with deps.pool.connection() as conn:
            job = erasure_jobs.claim_due_job(conn, LEASE_SECONDS, MAX_ATTEMPTS)
        if job is None:
            break
        if job["status"] == "failed":  # its worker was lost once too often
            logger.error("erasure job failed", extra={"job_id": job["job_id"]})
            continue
        jobs += 1
        progressed = False
        try:
            done = False
            while not done and deps.monotonic() - started < PASS_BUDGET_SECONDS:
                with deps.pool.connection() as conn:
                    deps.hooks.at("erasure.batch", job=job)
                    done = advance(conn, job, thread_batch=thread_batch, row_batch=row_batch)
                    if done:
                        finish(conn, job)
                        deps.hooks.at("erasure.finished", job=job)
                    else:
                        erasure_jobs.save_progress(
                            conn, job, lease_seconds=LEASE_SECONDS, done=False
                        )
                batches += 1
                progressed = True
            if not done:  # out of budget: the next pass goes on at once
                with deps.pool.connection() as conn:
                    erasure_jobs.release_job(conn, job["job_id"], error="")
        except Exception as exc:
            logger.exception("erasure job failed", extra={"job_id": job["job_id"]})
            # A pass that committed a batch cleared the count and spends none: it made progress.
            failures = 1 if progressed else job["attempts"] + 1
            with deps.pool.connection() as conn:
                erasure_jobs.retry_job(
                    conn,
                    job["job_id"],
                    error=str(exc),
                    backoff_seconds=job_claims.backoff(BACKOFF_SECONDS, failures),
                    spend_attempt=not progressed,
                    max_attempts=MAX_ATTEMPTS,
                )
    return {"jobs": jobs, "batches": batches}
