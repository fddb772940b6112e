"""Deferred extraction under faults: a model failing 5% of calls transiently and a consumer
killed in one batch in ten, against the fault-free run of the same jobs."""

from __future__ import annotations

import random
import time

from bench.harness import BenchDb, Figure, say
from chalicelib.auth import local_caller
from chalicelib.providers.llm import LLMResult, LLMUnavailableError
from chalicelib.providers.queue import FakeQueue
from chalicelib.registry import call
from chalicelib.store import extraction_queue as queue_store
from tests.queue_worker import OneFactLLM

SIZES = {"quick": 200, "full": 1000}
BATCH = 10
LEASE = 0.5
DEADLINE_S = 600.0  # a fault-free drain that takes longer counts what is left as stuck


class FlakyLLM(OneFactLLM):
    """Fails a share of calls as an unreachable provider would."""

    def __init__(self, share: float, seed: int):
        super().__init__(0.0)
        self.share = share
        self.rng = random.Random(seed)

    def complete(self, system: str, user: str, **kw: object) -> LLMResult:
        if self.rng.random() < self.share:
            raise LLMUnavailableError("provider timed out")
        return super().complete(system, user)


def _run(
    db: BenchDb, org: str, n: int, faults: bool, deadline_s: float
) -> tuple[float, dict[str, int], int]:
    """Queue n jobs and drain them (the consumer killed holding a batch now and then, with
    faults) until every job has ended or `deadline_s` has passed: jobs/s, their statuses and
    how many facts were written twice."""
    from chalicelib.workers.extraction_queue import process_job

    llm = FlakyLLM(0.05 if faults else 0.0, seed=3)
    deps = db.deps_for(
        None,
        extraction_queue_lease_seconds=LEASE,
        extraction_queue_delay_scale=0.01,
        memory_chunks_max_per_call=0,
    )
    deps._llm, deps._queue = llm, FakeQueue()
    caller = local_caller(org)
    ids = []
    for i in range(n):
        body = {
            "namespace": "deferred",
            "agent": "bench",
            "messages": [{"role": "user", "content": f"w{i} is what I keep thinking about"}],
            "defer": True,
        }
        ids.append(call("memory.set_from_messages", body, caller, deps).body["queue_id"])
    say(f"deferred ({'faults' if faults else 'fault-free'}): draining {n} jobs ...")
    rng = random.Random(5)
    kills = 0
    started = time.perf_counter()
    while True:
        with deps.pool.connection() as conn:
            due = queue_store.due_jobs(conn, BATCH)
            open_jobs = conn.execute(
                "SELECT count(*) FROM loom.memory_extraction_queue WHERE org = %s"
                " AND status NOT IN ('done', 'failed')",
                (org,),
            ).fetchone()[0]
        if not open_jobs:
            break
        if time.perf_counter() - started > deadline_s:  # what has not ended by now is stuck
            say(f"  {open_jobs} jobs still open after {deadline_s:.0f} s: counted as not ended")
            break
        if not due:
            time.sleep(0.01)
            continue
        if faults and rng.random() < 0.1:  # the consumer dies holding this batch
            with deps.pool.connection() as conn:
                for queue_id in due:
                    queue_store.claim(
                        conn, queue_id, LEASE, deps.live().extraction_queue_max_attempts
                    )
            kills += 1
            continue
        for queue_id in due:
            process_job(deps, queue_id)
    seconds = time.perf_counter() - started
    with deps.pool.connection() as conn:
        statuses = dict(
            conn.execute(
                "SELECT status, count(*) FROM loom.memory_extraction_queue WHERE org = %s"
                " GROUP BY 1",
                (org,),
            ).fetchall()
        )
        twice = conn.execute(
            "SELECT count(*) FROM (SELECT key FROM loom.memory_versions WHERE org = %s"
            " GROUP BY key HAVING count(*) > 1) k",
            (org,),
        ).fetchone()[0]
    say(f"  {statuses}, {kills} kills, {twice} facts written twice, {seconds:.1f} s")
    return n / seconds, statuses, twice


def run(db: BenchDb, quick: bool) -> list[Figure]:
    n = SIZES["quick" if quick else "full"]
    clean, _, _ = _run(db, "bench-deferred-clean", n, faults=False, deadline_s=DEADLINE_S)
    # Faults may slow the drain several times over, not without end.
    deadline = max(60.0, 10 * n / clean)
    faulty, statuses, twice = _run(db, "bench-deferred-faults", n, faults=True, deadline_s=deadline)
    ended = sum(v for k, v in statuses.items() if k in ("done", "failed"))
    return [
        Figure(
            f"deferred jobs/s under faults @{n:,}",
            faulty,
            "/s",
            "fault-free jobs/s",
            clean,
            ">= 0.8x",
        ),
        Figure("deferred jobs ended done or failed", ended, "", "jobs", n, ">= 1x"),
        Figure("facts written twice", twice, "", "(none allowed)", 1.0, "<= 0x"),
    ]
