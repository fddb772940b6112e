"""The model gateway holding a deferred replay: asked to wait (429) or refused (403) for the
enqueuer, the replay waits held with the reason, no attempt spent, and the worker claims none
of that enqueuer's requests in the namespace until the hold ends, while others' still run.
Through the real `openai` client against a local OpenAI-compatible stub."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from chalicelib.auth import mint_token
from chalicelib.deps import utcnow
from chalicelib.providers.llm import OpenAILLM
from chalicelib.providers.queue import FakeQueue
from chalicelib.workers.extraction_queue import drain_due
from tests.conftest import Api, live_setting
from tests.integration.test_model_calls_switch import drain_until_settled, job_states
from tests.openai_stub import OpenAIStub


def _word(request: dict[str, Any]) -> str:
    """The first word of the request's first user turn (the stub's view of who asks)."""
    user = request["messages"][1]["content"]
    line = user.split("Conversation:\n", 1)[-1].splitlines()[0]
    return line.split(": ", 1)[-1].split()[0].lower()


def _one_fact(request: dict[str, Any]) -> str:
    word = _word(request)
    fact = {
        "subject": "user",
        "attribute": f"topic {word}",
        "value": f"The user talked about {word}.",
        "source_message_indices": [0],
    }
    return json.dumps({"facts": [fact]})


class Gateway:
    """The stub's gateway: holds the chat requests whose first word it names, with a status
    and headers, until told otherwise; counts each word's chat requests."""

    def __init__(self) -> None:
        self.holding: dict[str, tuple[int, dict[str, str]]] = {}
        self.asked: dict[str, int] = {}

    def asked_of(self, *words: str) -> dict[str, int]:
        """How often these words were asked (the shared queue replays other tests' too)."""
        return {w: n for w, n in self.asked.items() if w in words}

    def __call__(self, request: dict[str, Any]) -> tuple[int, dict[str, str]] | None:
        word = _word(request)
        self.asked[word] = self.asked.get(word, 0) + 1
        return self.holding.get(word)


@pytest.fixture
def gateway(deps, org) -> Iterator[Gateway]:
    gate = Gateway()
    with OpenAIStub(chat_reply=_one_fact) as stub:
        stub.gateway = gate
        deps._llm = OpenAILLM(model=f"stub-{org}", base_url=stub.base_url, api_key="k")
        deps._queue = FakeQueue()
        yield gate


def _agent(api, deps, org: str, subject: str) -> Api:
    return Api(api.client, mint_token(deps, org=org, role="writer", subject=subject))


def _defer(agent: Api, word: str, namespace: str = "q") -> str:
    msg = [{"role": "user", "content": f"{word} is on my mind"}]
    body = {"namespace": namespace, "agent": "bot", "user_id": "u1", "messages": msg}
    return str(agent.ok("memory.set_from_messages", defer=True, **body)["queue_id"])


def _held_for(pool, queue_id: str) -> float:
    """Seconds from now until the job's hold ends."""
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM not_before - now())"
            " FROM loom.memory_extraction_queue WHERE queue_id = %s",
            (queue_id,),
        ).fetchone()
    return float(row[0])


def _hold_ends(pool, queue_id: str) -> None:
    """The time of the job's hold comes (as it would once its seconds passed)."""
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memory_extraction_queue SET not_before = now() - interval '1 second'"
            " WHERE queue_id = %s",
            (queue_id,),
        )


def test_a_replay_the_gateway_asks_to_wait_is_held_as_long_as_it_asked_and_its_enqueuer_waits(
    api, deps, org, pool, gateway
):
    """GIVEN an enqueuer with three deferred requests, the gateway answering 429 with
    Retry-After 600 to the first, another enqueuer's request in the same namespace, and
    passes of two jobs
    WHEN the worker drains the queue, twice
    THEN the first is held with reason gateway_wait for 600 s, no attempt spent, its model asked
    once; none of the enqueuer's other requests is sent to the model, and the other
    enqueuer's runs; once the hold ends the three run, each asked once more at most.
    """
    a, b = _agent(api, deps, org, "agent-a"), _agent(api, deps, org, "agent-b")
    first, second, third = (_defer(a, w) for w in ("gwalpha", "gwapple", "gwapricot"))
    other = _defer(b, "gwbravo")
    gateway.holding["gwalpha"] = (429, {"Retry-After": "600"})

    with live_setting(pool, extraction_queue_batch="2"):
        drain_until_settled(deps, pool, [other])
        drain_due(deps)

    assert job_states(pool, [first, second, third, other]) == {
        first: ("held", 0, "gateway_wait"),
        second: ("pending", 0, ""),
        third: ("pending", 0, ""),
        other: ("done", 0, ""),
    }
    assert 590 <= _held_for(pool, first) <= 600
    words = ("gwalpha", "gwapple", "gwapricot", "gwbravo")
    assert gateway.asked_of(*words) == {"gwalpha": 1, "gwbravo": 1}
    assert (first, 601) in deps.queue.sent  # its message comes back when the hold ends

    del gateway.holding["gwalpha"]
    _hold_ends(pool, first)
    drain_until_settled(deps, pool, [first, second, third])

    assert {s for s, _, _ in job_states(pool, [first, second, third]).values()} == {"done"}
    assert gateway.asked_of(*words) == {"gwalpha": 2, "gwapple": 1, "gwapricot": 1, "gwbravo": 1}


def test_a_replay_the_gateway_refuses_is_held_then_asked_again_and_runs_once_allowed(
    api, deps, org, pool, gateway
):
    """GIVEN an enqueuer's deferred requests in two namespaces, the gateway refusing (403) the
    first, and another enqueuer's request in its namespace
    WHEN the worker drains, the hold ends while the gateway still refuses, then ends again
    once it allows the call
    THEN the first is held with reason gateway_refused for the configured 900 s, no attempt
    spent; the enqueuer's request in the same namespace waits unasked, the one in the other
    namespace and the other enqueuer's run; asked again and refused, it is held again with
    no attempt spent; allowed, it and the waiting one run.
    """
    a, b = _agent(api, deps, org, "agent-a"), _agent(api, deps, org, "agent-b")
    first, waiting = _defer(a, "gwalpha"), _defer(a, "gwapple")
    elsewhere, other = _defer(a, "gwaside", namespace="q2"), _defer(b, "gwbravo")
    gateway.holding["gwalpha"] = (403, {})

    drain_until_settled(deps, pool, [elsewhere, other])
    drain_due(deps)

    jobs = job_states(pool, [first, waiting, elsewhere, other])
    assert jobs == {
        first: ("held", 0, "gateway_refused"),
        waiting: ("pending", 0, ""),
        elsewhere: ("done", 0, ""),
        other: ("done", 0, ""),
    }
    assert 890 <= _held_for(pool, first) <= 900
    assert "gwapple" not in gateway.asked and gateway.asked["gwalpha"] == 1

    _hold_ends(pool, first)
    drain_until_settled(deps, pool, [first])
    assert job_states(pool, [first, waiting]) == {
        first: ("held", 0, "gateway_refused"),
        waiting: ("pending", 0, ""),
    }
    assert gateway.asked["gwalpha"] == 2 and "gwapple" not in gateway.asked

    del gateway.holding["gwalpha"]
    _hold_ends(pool, first)
    drain_until_settled(deps, pool, [first, waiting])
    assert job_states(pool, [first, waiting]) == {first: ("done", 0, ""), waiting: ("done", 0, "")}
    assert (gateway.asked["gwalpha"], gateway.asked["gwapple"]) == (3, 1)


def test_a_wait_without_retry_after_holds_for_the_configured_seconds(api, deps, org, pool, gateway):
    """GIVEN the gateway answering 429 with no Retry-After, and a configured wait of 120 s
    WHEN the worker drains a deferred request
    THEN it is held with reason gateway_wait for 120 s, no attempt spent, and the status view
    reports it held with the provider's status as its last error."""
    a = _agent(api, deps, org, "agent-a")
    qid = _defer(a, "gwalpha")
    gateway.holding["gwalpha"] = (429, {})

    with live_setting(pool, extraction_queue_gateway_wait_seconds="120"):
        drain_until_settled(deps, pool, [qid])

    assert job_states(pool, [qid])[qid] == ("held", 0, "gateway_wait")
    assert 110 <= _held_for(pool, qid) <= 120
    mine = a.ok("memory.extraction_status_mine", namespace="q", agent="bot", queue_ids=[qid])
    batch = mine["batches"][0]
    assert batch["status"] == "held" and "429" in batch["last_error"], batch
    _let_through(deps, pool, gateway, qid)


def test_retry_after_as_an_http_date_is_honoured(api, deps, org, pool, gateway):
    """GIVEN the gateway answering 429 with Retry-After as an HTTP date 300 s away
    WHEN the worker drains a deferred request THEN it is held for about 300 s."""
    a = _agent(api, deps, org, "agent-a")
    qid = _defer(a, "gwalpha")
    when = format_datetime(utcnow().replace(microsecond=0) + timedelta(seconds=300), usegmt=True)
    gateway.holding["gwalpha"] = (429, {"Retry-After": when})

    drain_until_settled(deps, pool, [qid])

    assert job_states(pool, [qid])[qid] == ("held", 0, "gateway_wait")
    assert 285 <= _held_for(pool, qid) <= 300
    _let_through(deps, pool, gateway, qid)


def _let_through(deps, pool, gateway: Gateway, qid: str) -> None:
    """The gateway lets the job's call through and its hold ends: it runs (and leaves no
    job held for a later test's passes)."""
    gateway.holding.clear()
    _hold_ends(pool, qid)
    drain_until_settled(deps, pool, [qid])
    assert job_states(pool, [qid])[qid] == ("done", 0, "")
