"""The claim the two job tables share (loom.erasure_jobs, loom.memory_extraction_queue)."""

from __future__ import annotations

# The SET of a claim: the job runs under a lease of %(lease)s seconds. A running job taken
# again lost its worker (killed, or out of time): that spends an attempt, recorded as
# %(lost)s, and the one that uses up %(max)s attempts ends the job failed (no lease).
CLAIM_SET = (
    " status = CASE WHEN status = 'running' AND attempts + 1 >= %(max)s THEN 'failed'"
    "  ELSE 'running' END,"
    " lease_until = CASE WHEN status = 'running' AND attempts + 1 >= %(max)s THEN NULL"
    "  ELSE clock_timestamp() + make_interval(secs => %(lease)s) END,"
    " last_error = CASE WHEN status = 'running' THEN %(lost)s ELSE last_error END,"
    " attempts = attempts + CASE WHEN status = 'running' THEN 1 ELSE 0 END,"
    " updated_at = now()"
)
LOST_WORKER = "the worker stopped before it finished (its lease ran out)"


def backoff(steps: tuple[int, ...], failures: int) -> int:
    """The wait after `failures` failures in a row: each step in turn, then the last."""
    return steps[min(max(failures, 1), len(steps)) - 1]
