"""The erasure worker: runs the jobs erasure.request left for it (large subjects, or deferred),
a batch per transaction, the job's progress saved with the batch it counts.

A pass that fails backs the job off (1, 5, 15, then 60 minutes) and takes no job twice; only a
pass that committed no batch (or a worker lost with the job) counts a failed attempt, and a
batch that commits clears the count: an erasure ends failed only after MAX_ATTEMPTS failures
in a row, about an hour and a half of them, with no progress between."""

from __future__ import annotations

from chalicelib.deps import Deps
from chalicelib.observability import logger
from chalicelib.services.erasure_steps import LEASE_SECONDS, advance, finish
from chalicelib.store import erasure_jobs, job_claims

PASS_BUDGET_SECONDS = 240.0  # under the function's 300 s timeout
THREAD_BATCH = 200
ROW_BATCH = 5000
MAX_ATTEMPTS = 5
BACKOFF_SECONDS = (60, 300, 900, 3600)  # after the 1st, 2nd, 3rd and later failures in a row


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
