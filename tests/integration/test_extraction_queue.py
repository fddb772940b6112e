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
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from chalicelib.auth import local_caller, mint_token
from chalicelib.providers.llm import LLMUnavailableError, ScriptedLLM
from chalicelib.providers.queue import FakeQueue, SqsQueue
from chalicelib.registry import call
from chalicelib.workers.extraction_queue import drain_due, expire_stale_jobs, process_job
from tests.conftest import Api, live_setting
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
    for _ in range(5):
        drain_due(deps)
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


def test_a_request_waiting_29_days_is_dropped_with_a_record(deps, org, queue, pool):
    qid = _defer(local_caller(org), deps, "tide")["queue_id"]
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
    api, deps, org, queue
):
    """GIVEN batches queued for two users, and a viewer token bounded to own_user that pins
    no user
    WHEN it asks for the namespace's batches
    THEN it is refused (403) with the error the _mine ops give it, and sees no batch.
    """
    writer = Api(api.client, mint_token(deps, org=org, role="writer"))
    msg = [{"role": "user", "content": "hi"}]
    for user in ("u1", "u2"):
        writer.ok("memory.set_from_messages", messages=msg, defer=True,
                  **{**BODY, "user_id": user})  # fmt: skip
    unpinned = Api(api.client, mint_token(deps, org=org, role="viewer", read_scope="own_user"))

    status, data = unpinned.post("memory.extraction_status", namespace="q", agent="bot")
    mine_status, mine = unpinned.post(
        "memory.extraction_status_mine", namespace="q", agent="bot", queue_ids=["x"]
    )

    assert (status, mine_status) == (403, 403)
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
