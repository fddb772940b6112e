"""The erasure_worker's attempts: a failed pass backs the job off and spends one attempt, a pass
out of time or one that committed a batch spends none, and a lost worker counts as a failure.

The worker is global over orgs: each test fails only its own org's batches and finishes its job
before it ends, so no other test meets it.
"""

from __future__ import annotations

import psycopg
import pytest

from chalicelib.workers import erasure as worker
from tests.integration.test_conversation_support import NS, Tenant

ANN = "u-ann"


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


def _deferred_job(t: Tenant, threads: int = 1, facts: int = 1) -> str:
    """ann's turns and facts, and a deferred erasure of ann (a job the worker runs)."""
    for i in range(threads):
        t.append(f"th-{i}", f"ann's harbour note {i}", user_id=ANN)
    for i in range(facts):
        t.ok("memory.set", agent="a1", user_id=ANN, key=f"k{i}", value=f"ann fact {i}")
    job = t.ok("erasure.request", kind="user", user_id=ANN, namespace=NS, defer=True)
    assert job["status"] == "pending"
    return job["job_id"]


def _job(pool, job_id: str) -> tuple:
    with pool.connection() as conn:
        return conn.execute(
            "SELECT status, attempts, last_error, lease_until > clock_timestamp()"
            " FROM loom.erasure_jobs WHERE job_id = %s",
            (job_id,),
        ).fetchone()


def _live_facts(pool, org: str) -> int:
    with pool.connection() as conn:
        return conn.execute(
            "SELECT count(*) FROM loom.memories WHERE org = %s AND user_id = %s"
            " AND retired_at IS NULL",
            (org, ANN),
        ).fetchone()[0]


def _backoff_over(pool, job_id: str) -> None:
    """Time passes: the job's backoff ends."""
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.erasure_jobs SET lease_until = clock_timestamp() - interval '1 second'"
            " WHERE job_id = %s",
            (job_id,),
        )


def _flaky(deps, org: str, fail: set[int]) -> list[int]:
    """The batches of `org`'s job past its conversation step (each erases from one table)
    numbered in `fail` (1-based) raise a deadlock; returns the list of batch numbers run."""
    calls: list[int] = []

    def batch(job):
        if job["org"] == org and job["step"] > 0:
            calls.append(len(calls) + 1)
            if calls[-1] in fail:
                raise psycopg.errors.DeadlockDetected("deadlock detected (a transient error)")

    deps.hooks.on("erasure.batch", batch)
    return calls


def test_a_transient_error_backs_off_and_spends_one_attempt_not_all_of_them(t, deps, pool, org):
    """GIVEN a deferred erasure whose first statement of the memories step hits a deadlock
    WHEN the worker runs a pass
    THEN it takes the job once, leaves it pending with one attempt spent, the error and a
    backoff, and the user's facts are still live; a pass before the backoff ends takes nothing,
    and the pass after it finishes the erasure.
    """
    job_id = _deferred_job(t)
    calls = _flaky(deps, org, fail={1})
    with pool.connection() as conn:  # the conversation step done: the next batch fails
        conn.execute("UPDATE loom.erasure_jobs SET step = 1 WHERE job_id = %s", (job_id,))

    worker.run_erasure_jobs(deps)
    assert calls == [1]  # taken once: not again in the same pass
    status, attempts, error, backing_off = _job(pool, job_id)
    assert (status, attempts, backing_off) == ("pending", 1, True)
    assert "deadlock" in error
    assert _live_facts(pool, org) == 1

    worker.run_erasure_jobs(deps)
    assert calls == [1]  # still backing off

    _backoff_over(pool, job_id)
    worker.run_erasure_jobs(deps)
    assert _job(pool, job_id)[:3] == ("done", 0, "")
    assert _live_facts(pool, org) == 0


def test_passes_out_of_time_spend_no_attempt_and_progress_clears_failures(
    t, deps, pool, org, clock
):
    """GIVEN an erasure that needs many passes (a batch of one row, two batches a pass)
    WHEN six passes run out of their time, then one pass fails after committing a batch, and
    one fails before committing any
    THEN none of the six spends an attempt, the pass that committed a batch spends none either,
    and only the last spends one: the job is pending, never failed, and then finishes.
    """
    job_id = _deferred_job(t, threads=3, facts=6)
    one_row = {"thread_batch": 1, "row_batch": 1}
    clock.step = worker.PASS_BUDGET_SECONDS / 4  # each reading a quarter on: two batches a pass
    for _ in range(6):
        worker.run_erasure_jobs(deps, **one_row)
        assert _job(pool, job_id)[1] == 0  # no attempt spent
        assert _job(pool, job_id)[0] == "pending"

    calls = _flaky(deps, org, fail={2})  # the second batch of the pass fails
    worker.run_erasure_jobs(deps, **one_row)
    assert calls == [1, 2]
    assert _job(pool, job_id)[:2] == ("pending", 0)

    _backoff_over(pool, job_id)
    calls = _flaky(deps, org, fail={1})  # the first batch of the pass fails
    worker.run_erasure_jobs(deps, **one_row)
    assert calls == [1]
    assert _job(pool, job_id)[:2] == ("pending", 1)

    clock.step = None  # the real clock: the pass has its whole budget
    _backoff_over(pool, job_id)
    worker.run_erasure_jobs(deps, **one_row)
    assert _job(pool, job_id)[:2] == ("done", 0)
    assert _live_facts(pool, org) == 0


def _lose_worker(pool, job_id: str, *, attempts: int) -> None:
    """The job is running, its lease run out (its worker killed), after `attempts` tries."""
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.erasure_jobs SET status = 'running', attempts = %s,"
            " lease_until = clock_timestamp() - interval '1 second' WHERE job_id = %s",
            (attempts, job_id),
        )


def test_a_job_whose_worker_keeps_being_lost_ends_failed(t, deps, pool, org):
    """GIVEN a running erasure whose lease ran out (its worker was killed), four times already
    WHEN the worker takes it once more
    THEN that counts the fifth failed attempt: the job ends failed, with the reason, and is not
    run; with fewer losses it is taken and finished.
    """
    job_id = _deferred_job(t)
    _lose_worker(pool, job_id, attempts=3)
    worker.run_erasure_jobs(deps)  # the 4th loss: taken and finished
    assert _job(pool, job_id)[:2] == ("done", 0)

    job_id = _deferred_job(t)
    _lose_worker(pool, job_id, attempts=4)
    assert worker.run_erasure_jobs(deps)["jobs"] == 0
    status, attempts, error, _ = _job(pool, job_id)
    assert (status, attempts) == ("failed", 5) and "lease ran out" in error


class ErasingLLM:
    """An extraction model that, while it answers, sees `erase` run (an erasure of the user
    finishing before the extraction writes anything), then answers one fact."""

    answers = True

    def __init__(self, erase, value: str) -> None:
        from chalicelib.providers.llm import LLMResult

        self.name = f"erasing-{id(self)}"
        self.erase, self.value, self.result = erase, value, LLMResult
        self.erased = False

    def complete(self, system, user, *, json_output=False, model=None):
        import json

        if not self.erased:
            self.erased = True
            self.erase()
        data = {"facts": [{"subject": "user", "attribute": "home city", "value": self.value,
                           "source_message_indices": [0]}], "forget": [], "digest": ""}  # fmt: skip
        return self.result(json.dumps(data), data, 10, 5, self.name)


def _extract_while_erasing(t, deps, erasure: dict, **extraction) -> None:
    """An extraction whose model call sees an erasure of ann (`erasure`: its scope) requested
    and done before it answers one fact; then the erasure worker's pass."""

    def erase():
        done = t.ok("erasure.request", kind="user", user_id=ANN, **erasure)
        assert done["status"] == "done", done

    deps._llm = ErasingLLM(erase, "The user lives in Lisbon.")
    t.ok("memory.set_from_messages", agent="a1",
         messages=[{"role": "user", "content": "I moved to Lisbon last month."}],
         **extraction)  # fmt: skip
    worker.run_erasure_jobs(deps)


@pytest.mark.parametrize("purge", [False, True])
def test_an_extraction_that_outlasts_an_erasure_of_its_user_is_erased_too(
    t, deps, pool, org, purge
):
    """GIVEN an extraction for ann whose model call outlasts an erasure of ann (requested and
    done while the model answered)
    WHEN the extraction writes ann's fact afterwards
    THEN the erasure runs again: after the worker's pass no live fact of ann's is left."""
    _extract_while_erasing(t, deps, {"namespace": NS, "purge": purge}, user_id=ANN)
    with pool.connection() as conn:
        live = conn.execute(
            "SELECT count(*) FROM loom.memories WHERE org = %s AND user_id = %s"
            " AND retired_at IS NULL AND kind = 'fact'",
            (org, ANN),
        ).fetchone()[0]
        jobs = conn.execute(
            "SELECT status FROM loom.erasure_jobs WHERE org = %s ORDER BY created_at", (org,)
        ).fetchall()
    assert live == 0
    assert [j[0] for j in jobs] == ["done", "done"]


def test_an_extraction_into_a_users_personal_collection_that_outlasts_her_erasure_goes_too(
    t, deps, pool, org
):
    """GIVEN an extraction written into ann's personal collection (@me:ann) with no user_id
    named, whose model call outlasts an erasure of ann
    WHEN the extraction writes its fact afterwards and the erasure worker runs
    THEN the erasure runs again and nothing of it is left: every row of her personal
    collection is hers, whatever user_id it was written with."""
    personal = f"@me:{ANN}"
    _extract_while_erasing(t, deps, {"namespace": None}, namespace=personal)
    with pool.connection() as conn:
        live = conn.execute(
            "SELECT count(*) FROM loom.memories WHERE org = %s AND namespace = %s"
            " AND retired_at IS NULL",
            (org, personal),
        ).fetchone()[0]
    assert live == 0


def test_an_open_erasure_asked_to_run_again_starts_over_when_it_ends(t, deps, pool, org):
    """GIVEN a deferred erasure of ann, asked to run again (a write for ann landed while it
    was open)
    WHEN the worker finishes it
    THEN it starts over instead of ending, and ends done after the second run: a fact of
    ann's written between the two runs is erased too."""
    job_id = _deferred_job(t)
    with pool.connection() as conn:
        from chalicelib.store import erasure_jobs
        from chalicelib.store.pool import database_clock

        since = database_clock(conn)
        assert erasure_jobs.erase_again(conn, org=org, namespace=NS, user_id=ANN, since=since)
    runs: list[str] = []

    def finished_then_write(job):
        runs.append(job["job_id"])
        if len(runs) == 1:  # the late write, between the two runs
            t.ok("memory.set", agent="a1", user_id=ANN, key="late", value="ann late fact")

    deps.hooks.on("erasure.finished", finished_then_write)
    worker.run_erasure_jobs(deps)
    with pool.connection() as conn:
        status = conn.execute(
            "SELECT status, rerun FROM loom.erasure_jobs WHERE job_id = %s", (job_id,)
        ).fetchone()
    assert runs == [job_id, job_id]
    assert tuple(status) == ("done", False)
    assert _live_facts(pool, org) == 0
