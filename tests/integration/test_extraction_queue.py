"""Deferred extraction: answers at once, replays through the inline handler, survives
duplicate delivery and a killed worker, retries with backoff, and reports its batches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import deque
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from chalicelib.auth import local_caller, mint_token
from chalicelib.deps import Deps
from chalicelib.providers.llm import LLMUnavailableError, ScriptedLLM
from chalicelib.providers.queue import FakeQueue, SqsQueue
from chalicelib.registry import call
from chalicelib.workers.erasure import run_erasure_jobs
from chalicelib.workers.extraction_queue import (
    drain_due,
    expire_stale_jobs,
    process_job,
    resend_stranded,
)
from tests.conftest import Api, live_setting
from tests.integration.legacy_tokens import legacy_token
from tests.queue_worker import OneFactLLM

ROOT = Path(__file__).parents[2]
BODY = {"namespace": "q", "agent": "bot", "user_id": "u1"}


def _fact(word: str) -> str:
    return json.dumps(
        {"facts": [{"subject": "user", "attribute": f"topic {word}",
                    "value": f"The user talked about {word}.", "source_message_indices": [0]}]}
    )  # fmt: skip


@pytest.fixture
def queue(deps):
    deps._queue = FakeQueue()
    return deps._queue


def _defer(api_or_caller, deps, word: str, **extra):
    body = {**BODY, "messages": [{"role": "user", "content": f"{word} is on my mind"}], **extra}
    return call("memory.set_from_messages", {**body, "defer": True}, api_or_caller, deps).body


def _rows(pool, sql, *args):
    with pool.connection() as conn:
        return conn.execute(sql, args).fetchall()


def _status(pool, queue_id):
    return _rows(
        pool,
        "SELECT status, attempts FROM loom.memory_extraction_queue WHERE queue_id = %s",
        queue_id,
    )[0]


def test_defer_answers_at_once_and_sends_only_after_commit(deps, org, queue, pool):
    """GIVEN defer=true WHEN the request is posted THEN it answers deferred with a queue_id and
    nothing written, the job row is committed, and one message carries the queue_id."""
    out = _defer(local_caller(org), deps, "sailing")
    assert out["deferred"] and out["written"] == [] and out["deferred_by"] == "request"
    assert queue.sent == [(out["queue_id"], 0)]
    assert _status(pool, out["queue_id"]) == ("pending", 0)
    assert _rows(pool, "SELECT count(*) FROM loom.memories WHERE org = %s", org) == [(0,)]


class UnreachableQueue(FakeQueue):
    def send(self, queue_id: str, delay_seconds: int = 0) -> None:
        raise ConnectionError("the queue service is unreachable")


def test_a_message_that_cannot_be_sent_still_answers_deferred_and_is_sent_later(deps, org, pool):
    """GIVEN a queue whose sends fail (the service unreachable)
    WHEN a deferred request is posted
    THEN it answers deferred (never 500: the job is committed, and a client retrying an error
    would queue it twice) with one pending job; once the queue answers again, the resend pass
    sends the job that waited past five minutes."""
    deps._queue = UnreachableQueue()
    out = _defer(local_caller(org), deps, "sailing")
    assert out["deferred"] and out["queue_id"]
    assert _status(pool, out["queue_id"]) == ("pending", 0)
    jobs = "SELECT count(*) FROM loom.memory_extraction_queue WHERE org = %s"
    assert _rows(pool, jobs, org) == [(1,)]

    deps._queue = FakeQueue()
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET not_before = now() - interval '6 minutes'"
            " WHERE queue_id = %s",
            (out["queue_id"],),
        )
    resend_stranded(deps)
    assert (out["queue_id"], 0) in deps._queue.sent


def test_a_deferred_request_is_dated_when_it_was_made_not_when_it_runs(
    deps, org, queue, pool, clock
):
    """GIVEN a request deferred on 1 March with no observation_date, and a turn without a
    timestamp
    WHEN the worker runs it on 3 March
    THEN the prompt's observation date, the fact's and the turn's evidence time are 1 March,
    and the source is still request_time.
    """
    clock.now = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
    queued = _defer(local_caller(org), deps, "Lisbon")
    clock.now = datetime(2024, 3, 3, 12, 0, tzinfo=UTC)
    deps._llm = llm = ScriptedLLM(replies=deque([_fact("lisbon")]))

    assert process_job(deps, queued["queue_id"]) == "done"

    assert "Observation date: 2024-03-01" in llm.prompts[0][1]
    (fact_date,) = _rows(
        pool, "SELECT observation_date FROM loom.memories WHERE org = %s AND kind = 'fact'", org
    )
    assert str(fact_date[0]) == "2024-03-01"
    (said,) = _rows(pool, "SELECT ts FROM loom.memory_evidence WHERE org = %s", org)
    assert said[0] == datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


def test_allowlisted_agents_defer_but_explicit_false_and_typed_records_do_not(
    deps, org, queue, pool
):
    with live_setting(pool, extraction_defer_agents='["bot"]'):
        caller = local_caller(org)
        msg = {**BODY, "messages": [{"role": "user", "content": "hello"}]}
        first = call("memory.set_from_messages", msg, caller, deps).body
        assert first["deferred_by"] == "allowlist"
        assert not call("memory.set_from_messages", {**msg, "defer": False}, caller, deps).body[
            "deferred"
        ]
        schema = {"type": "object", "properties": {"a": {"type": "string"}}}
        typed = {**msg, "record_schema": schema, "memory_key": "rec/a"}
        assert not call("memory.set_from_messages", typed, caller, deps).body["deferred"]


def test_every_message_delivered_twice_writes_each_fact_once(deps, org, queue, pool, client):
    """GIVEN five deferred jobs WHEN SQS delivers every message twice (own message ids)
    THEN every job is done, each fact has exactly one version, and no record failed."""
    caller = local_caller(org)
    words = ("alpha", "bravo", "charlie", "delta", "echo")
    ids = [_defer(caller, deps, w)["queue_id"] for w in words]
    deps._llm = OneFactLLM(0)
    bodies = [json.dumps({"queue_id": q}) for q in ids for _ in range(2)]
    event = client.events.generate_sqs_event(message_bodies=bodies, queue_name="loom-extraction")
    for i, record in enumerate(event["Records"]):
        record["messageId"] = f"m-{i}"
    assert client.lambda_.invoke("extraction_queue", event).payload == {"batchItemFailures": []}
    assert {_status(pool, q)[0] for q in ids} == {"done"}
    versions = _rows(
        pool,
        "SELECT key, count(*) FROM loom.memory_versions WHERE org = %s AND key LIKE 'user/%%'"
        " GROUP BY key",
        org,
    )
    assert len(versions) == 5 and all(n == 1 for _, n in versions)


def test_one_bad_record_fails_alone_in_its_batch(deps, org, queue, pool, client):
    caller = local_caller(org)
    good = _defer(caller, deps, "kayak")["queue_id"]
    deps._llm = OneFactLLM(0)
    bodies = [json.dumps({"queue_id": good}), "not json"]
    event = client.events.generate_sqs_event(message_bodies=bodies, queue_name="loom-extraction")
    event["Records"][0]["messageId"], event["Records"][1]["messageId"] = "ok-1", "bad-1"
    payload = client.lambda_.invoke("extraction_queue", event).payload
    assert payload == {"batchItemFailures": [{"itemIdentifier": "bad-1"}]}
    assert _status(pool, good)[0] == "done"


def test_a_worker_killed_mid_batch_loses_nothing_and_writes_nothing_twice(
    deps, org, queue, pool, database_url
):
    """GIVEN six deferred jobs and a worker process whose model takes 0.4 s a call
    WHEN it is killed with SIGKILL while it holds a job and another worker takes over after
    the 1 s lease THEN every job ends done and every fact has exactly one version."""
    caller = local_caller(org)
    words = ["north", "south", "east", "west", "up", "down"]
    ids = [_defer(caller, deps, w)["queue_id"] for w in words]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.queue_worker", database_url, "0.4"], cwd=ROOT, env=env
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            done = sum(_status(pool, q)[0] == "done" for q in ids)
            running = sum(_status(pool, q)[0] == "running" for q in ids)
            if done >= 1 and running >= 1:
                break
            time.sleep(0.05)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert any(_status(pool, q)[0] != "done" for q in ids), "the worker finished before the kill"
    time.sleep(1.2)  # the killed worker's lease expires
    deps._llm = OneFactLLM(0)
    # The queue is the whole database's: other tests' jobs may be due ahead of these.
    for _ in range(60):
        drain_due(deps)
        if {_status(pool, q)[0] for q in ids} == {"done"}:
            break
    assert {_status(pool, q)[0] for q in ids} == {"done"}
    versions = _rows(
        pool,
        "SELECT key, count(*) FROM loom.memory_versions WHERE org = %s GROUP BY key",
        org,
    )
    facts = [(k, n) for k, n in versions if k.startswith("user/")]
    assert len(facts) == 6 and all(n == 1 for _, n in facts)
    evidence = _rows(
        pool,
        "SELECT request_id, count(*) FROM loom.memory_evidence WHERE org = %s GROUP BY 1",
        org,
    )
    assert sorted(r for r, _ in evidence) == sorted(ids) and all(n == 1 for _, n in evidence)


def test_failures_back_off_and_end_failed_after_max_attempts(deps, org, queue, pool):
    caller = local_caller(org)
    qid = _defer(caller, deps, "storm")["queue_id"]
    deps._llm = ScriptedLLM(replies=deque(["not json"] * 10))
    assert process_job(deps, qid) == "retry"
    assert _status(pool, qid) == ("pending", 1)
    assert queue.sent[-1] == (qid, 15)  # 15 s after the first failed attempt
    assert process_job(deps, qid) == "early"  # not due yet: sent again for later
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET attempts = 7, not_before = now()"
            " WHERE queue_id = %s",
            (qid,),
        )
    assert process_job(deps, qid) == "failed"
    status, attempts = _status(pool, qid)
    assert (status, attempts) == ("failed", 8)
    error = _rows(
        pool, "SELECT last_error FROM loom.memory_extraction_queue WHERE queue_id = %s", qid
    )
    assert "extraction call failed" in error[0][0]


def test_failed_attempts_wait_15_s_then_1_5_and_30_minutes(deps, org, queue, pool):
    """GIVEN a deferred job whose every replay fails
    WHEN it fails its first, second, third, fourth and fifth attempts
    THEN it is sent again 15 s, 1 min, 5 min, 30 min and 30 min later."""
    qid = _defer(local_caller(org), deps, "drizzle")["queue_id"]
    deps._llm = ScriptedLLM(replies=deque(["not json"] * 20))
    delays = []
    for _ in range(5):
        with pool.connection() as conn:
            conn.execute(
                "UPDATE loom.memory_extraction_queue SET not_before = now() WHERE queue_id = %s",
                (qid,),
            )
        assert process_job(deps, qid) == "retry"
        delays.append(queue.sent[-1][1])
    assert delays == [15, 60, 300, 1800, 1800]


def test_a_star_in_the_defer_list_defers_every_service_account(api, deps, org, queue, pool):
    """GIVEN LOOM_EXTRACTION_DEFER_AGENTS holding "*"
    WHEN agents of any name send a transcript with a token (a service account), and the local
    user sends one
    THEN each token's request is deferred by the allowlist; the local user's is extracted
    inline."""
    with live_setting(pool, extraction_defer_agents='["*"]'):
        said = [{"role": "user", "content": "hi"}]
        for agent in ("bot", "another-agent"):
            token = Api(api.client, mint_token(deps, org=org, role="writer", subject=agent))
            out = token.ok("memory.set_from_messages", **{**BODY, "agent": agent}, messages=said)
            assert (out["deferred"], out["deferred_by"]) == (True, "allowlist"), agent
        deps._llm = ScriptedLLM(replies=deque([_fact("local")]))
        body = {**BODY, "messages": said}
        assert (
            call("memory.set_from_messages", body, local_caller(org), deps).body["deferred"]
            is False
        )


def test_an_unreachable_provider_spends_no_attempt(deps, org, queue, pool):
    qid = _defer(local_caller(org), deps, "fog")["queue_id"]
    deps._llm = ScriptedLLM(replies=deque([LLMUnavailableError("connection refused")]))
    assert process_job(deps, qid) == "retry"
    assert _status(pool, qid) == ("pending", 0)


def test_an_unreachable_provider_never_fails_a_job_retried_past_its_attempts(
    deps, org, queue, pool
):
    """GIVEN a job that failed after its 8 attempts and was accepted for one more (status
    pending again, attempts still 8)
    WHEN its replay finds the provider unreachable
    THEN it waits (pending, 8 attempts): an attempt not spent never fails a job."""
    qid = _defer(local_caller(org), deps, "mist")["queue_id"]
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET attempts = 8, status = 'pending',"
            " not_before = now() WHERE queue_id = %s",
            (qid,),
        )
    deps._llm = ScriptedLLM(replies=deque([LLMUnavailableError("connection refused")]))
    assert process_job(deps, qid) == "retry"
    assert _status(pool, qid) == ("pending", 8)


def test_status_ops_answer_only_the_callers_own_batches(api, deps, org, queue):
    mine = Api(api.client, mint_token(deps, org=org, role="writer", subject="agent-a"))
    theirs = Api(api.client, mint_token(deps, org=org, role="writer", subject="agent-b"))
    msg = [{"role": "user", "content": "hi"}]
    qa = mine.ok("memory.set_from_messages", messages=msg, defer=True, **BODY)["queue_id"]
    qb = theirs.ok("memory.set_from_messages", messages=msg, defer=True, **BODY)["queue_id"]
    out = mine.ok("memory.extraction_status_mine", namespace="q", agent="bot", queue_ids=[qa, qb])
    assert [b["queue_id"] for b in out["batches"]] == [qa] and out["unknown"] == [qb]
    assert out["batches"][0]["sizes"] == {"messages": 1, "chars": 2}
    status, _ = mine.post("memory.extraction_status_mine", namespace="q", agent="bot",
                          queue_ids=[f"x{i}" for i in range(21)])  # fmt: skip
    assert status == 422
    every = mine.ok("memory.extraction_status", namespace="q", agent="bot")["batches"]
    assert {b["queue_id"] for b in every} == {qa, qb}
    assert mine.ok("memory.search", query="hi", **BODY)["pending_extraction"] is True


def test_pending_extraction_covers_the_users_a_search_reads_whoever_queued(api, deps, org, queue):
    """GIVEN a batch for u1 deferred by a hook's token
    WHEN a namespace-wide viewer, a token pinned to u1 and one pinned to u2 search
    THEN the first two are told extraction is pending (the batch's facts are missing from
    what they read), the third not (u1's rows are not in its reads)."""
    hook = Api(api.client, mint_token(deps, org=org, role="writer", subject="hook"))
    msg = [{"role": "user", "content": "hi"}]
    hook.ok("memory.set_from_messages", messages=msg, defer=True, **BODY)

    def pending(**token: str) -> bool:
        reader = Api(api.client, mint_token(deps, org=org, role="viewer", **token))
        body = {k: v for k, v in BODY.items() if k != "user_id" or not token}
        return reader.ok("memory.search", query="hi", **body)["pending_extraction"]

    assert pending() is True
    assert pending(read_scope="own_user", read_user_id="u1") is True
    assert pending(read_scope="own_user", read_user_id="u2") is False


def test_retry_mine_requeues_failed_batches_and_leaves_others(api, deps, org, queue, pool):
    agent = Api(api.client, mint_token(deps, org=org, role="writer", subject="agent-r"))
    msg = [{"role": "user", "content": "hi"}]
    failed, waiting, old = (
        agent.ok("memory.set_from_messages", messages=msg, defer=True, **BODY)["queue_id"]
        for _ in range(3)
    )
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET status = 'failed' WHERE queue_id = ANY(%s)",
            ([failed, old],),
        )
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET created_at = now() - interval '29 days'"
            " WHERE queue_id = %s",
            (old,),
        )
    out = agent.ok("memory.extraction_retry_mine", namespace="q", agent="bot",
                   queue_ids=[failed, waiting, old, "nope"])  # fmt: skip
    assert out["requeued"] == [failed] and out["expired"] == [old]
    assert out["left_alone"] == [waiting] and out["unknown"] == ["nope"]
    assert _status(pool, failed)[0] == "pending"


def _due_now(pool, queue_id):
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET not_before = now() WHERE queue_id = %s",
            (queue_id,),
        )


def test_a_batch_retried_by_retry_mine_gets_exactly_one_more_attempt(api, deps, org, queue, pool):
    """GIVEN an agent's deferred batch that failed its every attempt (two, under
    LOOM_EXTRACTION_QUEUE_MAX_ATTEMPTS=2) against a model that never answers JSON
    WHEN the agent retries it with memory.extraction_retry_mine, and the worker then runs
    again and again
    THEN the retry is accepted (pending, its attempts unchanged), the worker replays it once
    (one more model call, a third attempt spent) and it ends failed again; later passes leave
    it alone: no further model call.
    """
    agent = Api(api.client, mint_token(deps, org=org, role="writer", subject="agent-hail"))
    said = [{"role": "user", "content": "hail is on my mind"}]
    qid = agent.ok("memory.set_from_messages", messages=said, defer=True, **BODY)["queue_id"]
    deps._llm = llm = ScriptedLLM(replies=deque(["not json"] * 50), name=f"hail-{org}")

    def calls() -> int:
        return sum("hail is on my mind" in user for _, user in llm.prompts)

    with live_setting(pool, extraction_queue_max_attempts="2"):
        assert process_job(deps, qid) == "retry"
        _due_now(pool, qid)
        assert process_job(deps, qid) == "failed"
        assert (_status(pool, qid), calls()) == (("failed", 2), 2)

        out = agent.ok("memory.extraction_retry_mine", namespace="q", agent="bot", queue_ids=[qid])
        assert out["requeued"] == [qid]
        assert _status(pool, qid) == ("pending", 2)

        drain_due(deps)
        assert (_status(pool, qid), calls()) == (("failed", 3), 3)
        for _ in range(2):
            drain_due(deps)
            _due_now(pool, qid)  # even made due again, a failed batch is not claimed
            assert process_job(deps, qid) == "skipped"
        assert (_status(pool, qid), calls()) == (("failed", 3), 3)


@pytest.mark.parametrize("lost", [False, True])
def test_a_request_waiting_29_days_is_dropped_with_a_record(deps, org, queue, pool, lost):
    """A job still waiting after 29 days, or (lost) taken by a worker lost since, ends failed
    with an `expired` drop."""
    qid = _defer(local_caller(org), deps, "tide")["queue_id"]
    if lost:
        _expire_lease(pool, qid, status="running")
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET created_at = now() - interval '29 days'"
            " WHERE queue_id = %s",
            (qid,),
        )
    assert expire_stale_jobs(deps) >= 1
    assert _status(pool, qid)[0] == "failed"
    drops = _rows(pool, "SELECT reason FROM loom.memory_drops WHERE org = %s", org)
    assert ("expired",) in drops


def test_a_job_past_the_30_day_ttl_is_removed_with_its_transcript(deps, org, queue, pool):
    """GIVEN jobs done, failed and pending, each queued 31 days ago, and one queued today
    WHEN the expiry pass runs
    THEN the three old rows are gone (the TTL removes the transcript each request holds) and
    today's job is untouched."""
    caller = local_caller(org)
    old = [_defer(caller, deps, w)["queue_id"] for w in ("alpha", "bravo", "charlie")]
    fresh = _defer(caller, deps, "delta")["queue_id"]
    with pool.connection() as conn:
        for qid, status in zip(old, ("done", "failed", "pending"), strict=True):
            conn.execute(
                "UPDATE loom.memory_extraction_queue SET status = %s,"
                " created_at = now() - interval '31 days' WHERE queue_id = %s",
                (status, qid),
            )
    expire_stale_jobs(deps)
    left = _rows(pool, "SELECT queue_id FROM loom.memory_extraction_queue WHERE org = %s", org)
    assert left == [(fresh,)]
    assert _status(pool, fresh) == ("pending", 0)


def test_an_erasure_between_the_claim_and_the_replay_runs_again(deps, org, queue, pool):
    """GIVEN a deferred job for user u1, claimed by a worker, and an erasure of u1 that runs
    and finishes once the claim has taken the request, before the replay starts writing (here:
    while the replay reads the extraction policy)
    WHEN the replay writes u1's fact and the erasure worker then runs
    THEN the erasure runs again and u1 holds no live memory and no evidence: nothing it erased
    comes back."""
    qid = _defer(local_caller(org), deps, "lisbon")["queue_id"]
    erased: list[dict] = []

    def erase_first(o, n):
        if not erased:
            body = {"namespace": "q", "kind": "user", "user_id": "u1"}
            erased.append(call("erasure.request", body, local_caller(org), deps).body)
        return deps.extraction_policy(o, n)

    replay = Deps(
        deps.settings,
        pool=pool,
        embedder=deps.embedder,
        llm=OneFactLLM(0),
        queue=queue,
        policy_lookup=erase_first,
    )
    process_job(replay, qid)
    assert erased and erased[0]["status"] == "done"
    run_erasure_jobs(deps)
    live = (
        "SELECT count(*) FROM loom.memories WHERE org = %s AND user_id = 'u1'"
        " AND retired_at IS NULL"
    )
    assert _rows(pool, live, org) == [(0,)]
    evidence = "SELECT count(*) FROM loom.memory_evidence WHERE org = %s AND user_id = 'u1'"
    assert _rows(pool, evidence, org) == [(0,)]


def test_the_sqs_queue_sends_the_queue_id_only():
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="loom-extraction")["QueueUrl"]
        SqsQueue(url, client=sqs).send("q-123", delay_seconds=5000)
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0, MaxNumberOfMessages=10)
    assert [json.loads(m["Body"]) for m in got.get("Messages", [])] in ([], [{"queue_id": "q-123"}])


def test_a_job_whose_message_was_lost_is_sent_again(deps, org, queue, pool, client):
    qid = _defer(local_caller(org), deps, "drift")["queue_id"]
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET not_before = now() - interval '10 minutes'"
            " WHERE queue_id = %s",
            (qid,),
        )
    queue.sent.clear()
    event = client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    assert client.lambda_.invoke("extraction_queue_resend", event).payload >= 1
    assert (qid, 0) in queue.sent


def test_a_user_bounded_token_pinning_no_user_cannot_read_the_namespaces_batches(
    api, deps, pool, org, queue
):
    """GIVEN batches queued for two users, and a viewer token bounded to own_user that pins
    no user (minted by an earlier build; none is minted now)
    WHEN it asks for the namespace's batches
    THEN it is refused (401) with the error the _mine ops give it, and sees no batch.
    """
    writer = Api(api.client, mint_token(deps, org=org, role="writer"))
    msg = [{"role": "user", "content": "hi"}]
    for user in ("u1", "u2"):
        writer.ok("memory.set_from_messages", messages=msg, defer=True,
                  **{**BODY, "user_id": user})  # fmt: skip
    unpinned = Api(api.client, legacy_token(pool, org=org, role="viewer", read_scope="own_user"))

    status, data = unpinned.post("memory.extraction_status", namespace="q", agent="bot")
    mine_status, mine = unpinned.post(
        "memory.extraction_status_mine", namespace="q", agent="bot", queue_ids=["x"]
    )

    assert (status, mine_status) == (401, 401)
    assert data == mine and "batches" not in data


def test_a_user_pinned_token_sees_its_users_batches_only(api, deps, org, queue):
    """GIVEN batches queued for users u1 and u2 by one writer token
    WHEN a viewer token pinned to u1 asks for the namespace's batches by status and by id
    THEN it sees u1's batch only; u2's id answers as unknown."""
    writer = Api(api.client, mint_token(deps, org=org, role="writer"))
    msg = [{"role": "user", "content": "hi"}]
    queued = {
        user: writer.ok(
            "memory.set_from_messages", messages=msg, defer=True, **{**BODY, "user_id": user}
        )["queue_id"]  # fmt: skip
        for user in ("u1", "u2")
    }
    u1 = Api(api.client, mint_token(deps, org=org, role="viewer", read_scope="own_user",
                                    read_user_id="u1"))  # fmt: skip
    listed = u1.ok("memory.extraction_status", namespace="q", agent="bot")["batches"]
    assert [b["queue_id"] for b in listed] == [queued["u1"]]
    by_id = u1.ok("memory.extraction_status", namespace="q", agent="bot",
                  queue_ids=list(queued.values()))  # fmt: skip
    assert [b["queue_id"] for b in by_id["batches"]] == [queued["u1"]]


def test_a_user_pinned_token_reads_its_users_own_batches_only(api, deps, org, queue):
    """GIVEN one agent (one token subject) that queued a batch for u2 with a namespace-wide
    token, and one for u1 with a token pinned to u1
    WHEN the u1-pinned token asks extraction_status_mine for both ids
    THEN it gets u1's batch and u2's id comes back as unknown."""
    wide = Api(api.client, mint_token(deps, org=org, role="writer", subject="agent-p"))
    pinned = Api(api.client, mint_token(deps, org=org, role="writer", subject="agent-p",
                                        read_scope="own_user", read_user_id="u1"))  # fmt: skip
    msg = [{"role": "user", "content": "hi"}]
    q2 = wide.ok("memory.set_from_messages", messages=msg, defer=True,
                 **{**BODY, "user_id": "u2"})["queue_id"]  # fmt: skip
    q1 = pinned.ok("memory.set_from_messages", messages=msg, defer=True,
                   **{**BODY, "user_id": "u1"})["queue_id"]  # fmt: skip
    out = pinned.ok("memory.extraction_status_mine", namespace="q", agent="bot", queue_ids=[q1, q2])
    assert [b["queue_id"] for b in out["batches"]] == [q1] and out["unknown"] == [q2]


def test_a_deferred_transcript_repeating_a_long_turn_is_done_on_its_first_replay(
    deps, org, queue, pool
):
    """GIVEN a deferred request whose transcript sends one long turn twice (two identical
    verbatim chunks)
    WHEN the worker replays it
    THEN the replay is done at once: the fact is written and one chunk row holds the turn."""
    big = ("Here is the build log I pasted: " + "lorem ipsum dolor sit amet " * 70).strip()
    body = {**BODY, "messages": [{"role": "user", "content": big}] * 2, "defer": True}
    queue_id = call("memory.set_from_messages", body, local_caller(org), deps).body["queue_id"]
    deps._llm = ScriptedLLM(replies=deque([_fact("builds")]), name=f"scripted-{org}")

    assert process_job(deps, queue_id) == "done"

    assert _status(pool, queue_id)[0] == "done"
    rows = _rows(pool, "SELECT kind, count(*) FROM loom.memories WHERE org = %s GROUP BY kind", org)
    assert sorted(rows) == [("chunk", 1), ("fact", 1)]


# ---- a worker lost, a lease outlived, the worker switched off ------------------------------


class Killed(BaseException):
    """Stands for the Lambda sandbox killed at its timeout (or out of memory) mid-replay."""


class KilledLLM:
    name = "killed"
    answers = True

    def complete(self, *args, **kwargs):
        raise Killed()


def _expire_lease(pool, queue_id, ago="1 second", **columns):
    sets = "".join(f", {name} = %s" for name in columns)
    with pool.connection() as conn:
        conn.execute(
            f"UPDATE loom.memory_extraction_queue SET lease_until = now() - %s::interval{sets}"
            " WHERE queue_id = %s",
            (ago, *columns.values(), queue_id),
        )


def test_a_job_that_keeps_killing_its_worker_spends_attempts_and_ends_failed(
    deps, org, queue, pool
):
    """GIVEN a deferred job whose replay kills the worker every time (a Lambda timeout)
    WHEN its message is delivered again after each lease expired
    THEN each redelivery spends an attempt, and the one that uses up the last ends the job
    failed with the reason, without a replay; memory.search no longer reports it pending.
    """
    qid = _defer(local_caller(org), deps, "kayak")["queue_id"]
    deps._llm = KilledLLM()
    for attempts in range(3):
        with pytest.raises(Killed):
            process_job(deps, qid)
        assert _status(pool, qid) == ("running", attempts)
        _expire_lease(pool, qid)
    _expire_lease(pool, qid, attempts=7)
    assert process_job(deps, qid) == "failed"
    assert _status(pool, qid) == ("failed", 8)
    error = _rows(
        pool, "SELECT last_error FROM loom.memory_extraction_queue WHERE queue_id = %s", qid
    )
    assert "lease ran out" in error[0][0]
    search = call("memory.search", {**BODY, "query": "kayak"}, local_caller(org), deps).body
    assert search["pending_extraction"] is False


def test_a_lost_job_whose_message_is_gone_is_taken_back_and_sent_again(
    deps, org, queue, pool, client
):
    """GIVEN a job left running by a killed worker, its lease expired an hour ago and its
    message gone (the dead-letter queue), and another at its last attempt
    WHEN the resend schedule runs
    THEN the first is pending again with an attempt spent and its message sent; the second
    ends failed and is not sent.
    """
    lost, last = (_defer(local_caller(org), deps, w)["queue_id"] for w in ("canoe", "raft"))
    _expire_lease(pool, lost, "1 hour", status="running", attempts=2)
    _expire_lease(pool, last, "1 hour", status="running", attempts=7)
    queue.sent.clear()
    event = client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    assert client.lambda_.invoke("extraction_queue_resend", event).payload >= 1
    assert _status(pool, lost) == ("pending", 3)
    assert (lost, 0) in queue.sent
    assert _status(pool, last) == ("failed", 8)
    assert all(q != last for q, _ in queue.sent)
    deps._llm = OneFactLLM(0)
    assert process_job(deps, lost) == "done"


class OutlivedLLM:
    """Worker A's model: while it answers, A's lease runs out and worker B (a redelivery)
    takes the job and finishes it; then A's call fails (`fail`) or answers nothing usable."""

    name = "outlived"
    answers = True

    def __init__(self, deps, pool, queue_id, fail: bool):
        self.deps, self.pool, self.queue_id, self.fail = deps, pool, queue_id, fail
        self.outcome_b = None

    def complete(self, system, user, *, json_output=False, model=None):
        from chalicelib.providers.llm import LLMError, LLMResult

        _expire_lease(self.pool, self.queue_id)
        self.deps._llm = OneFactLLM(0)  # B's model
        try:
            self.outcome_b = process_job(self.deps, self.queue_id)
        finally:
            self.deps._llm = self
        if self.fail:
            raise LLMError("model answered 500")
        return LLMResult("not json", None, 1, 1, self.name)


@pytest.mark.parametrize("fail", [True, False])
def test_a_worker_that_outlived_its_lease_changes_nothing_of_the_finished_job(
    deps, org, queue, pool, fail
):
    """GIVEN worker A replaying a job, whose lease runs out while its model answers, and worker
    B that takes the job meanwhile and finishes it
    WHEN A then fails (or finishes with nothing written)
    THEN the job stays done with B's result, A sends no message and spends no attempt.
    """
    qid = _defer(local_caller(org), deps, "canoe")["queue_id"]
    deps._llm = model = OutlivedLLM(deps, pool, qid, fail)
    queue.sent.clear()
    outcome_a = process_job(deps, qid)
    assert model.outcome_b == "done"
    assert _status(pool, qid)[0] == "done"
    result = _rows(pool, "SELECT result FROM loom.memory_extraction_queue WHERE queue_id = %s", qid)
    assert [w["key"] for w in result[0][0]["written"]] == ["user/topic_canoe"]
    assert queue.sent == []
    assert _status(pool, qid)[1] == 1  # B took a lost lease: one attempt spent
    assert outcome_a == "lost"


def test_switched_off_the_sqs_consumer_leaves_jobs_pending_and_keeps_their_messages(
    deps, org, queue, pool, client
):
    """GIVEN a deferred job, and LOOM_EXTRACTION_QUEUE_ENABLED set false live
    WHEN SQS delivers its message, and the resend schedule runs over a stranded job
    THEN no model is called, the job stays pending with nothing written, and its message is
    sent back for later (none for the schedule); switched on again, the delivery replays it.
    """
    qid = _defer(local_caller(org), deps, "sailing")["queue_id"]
    deps._llm = llm = ScriptedLLM(replies=deque([_fact("sailing")]))
    event = client.events.generate_sqs_event(
        message_bodies=[json.dumps({"queue_id": qid})], queue_name="loom-extraction"
    )
    cron = client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    with live_setting(pool, extraction_queue_enabled="false"):
        queue.sent.clear()
        assert client.lambda_.invoke("extraction_queue", event).payload == {"batchItemFailures": []}
        assert queue.sent == [(qid, 900)]
        with pool.connection() as conn:
            conn.execute(
                "UPDATE loom.memory_extraction_queue SET not_before = now() - interval '1 hour'"
                " WHERE queue_id = %s",
                (qid,),
            )
        queue.sent.clear()
        assert client.lambda_.invoke("extraction_queue_resend", cron).payload == 0
        assert queue.sent == []
    assert llm.prompts == [] and _status(pool, qid) == ("pending", 0)
    assert _rows(pool, "SELECT count(*) FROM loom.memories WHERE org = %s", org) == [(0,)]
    assert client.lambda_.invoke("extraction_queue", event).payload == {"batchItemFailures": []}
    assert _status(pool, qid)[0] == "done"
