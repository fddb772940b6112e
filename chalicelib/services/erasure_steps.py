"""The steps of one erasure job, shared by erasure.request (a small subject, erased inline)
and the erasure worker (a batch per transaction): each step's batch moves the job on, and the
job's last step leaves its hash-only audit row."""

from __future__ import annotations

from typing import Any

from psycopg import Connection

from chalicelib.store import erasure as store
from chalicelib.store import erasure_jobs
from chalicelib.store.audit import write_audit
from chalicelib.store.pool import database_clock

LEASE_SECONDS = 300


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
        tombstoned: store.Counts = {}
        removed: store.Counts = {}
        if threads:
            tombstoned, removed = store.erase_threads(conn, s, threads, purge=purge, now=now)
            job["thread_cursor"] = list(threads[-1])
        _add(job["tombstoned"], tombstoned)
        _add(job["removed"], removed)
        if thread_batch is None or len(threads) < thread_batch:
            job["step"], job["thread_cursor"] = 1, None
    else:
        table = store.GENERIC[job["step"] - 1]
        done = store.erase_table(conn, table, s, purge=purge, now=now, limit=row_batch)
        for action, n in done.items():
            _add(job[action], {table.name: n})
        # A batch that filled any of its statements may have left rows of that kind.
        if row_batch is None or max(done.values()) < row_batch:
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
