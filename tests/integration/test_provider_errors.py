"""A model or embedding provider's own words never reach a tenant: a failed call answers with
the provider's status code, and the provider's text (which can quote part of the platform's
API key) goes to the server log only. Against a local OpenAI-compatible stub answering 401."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.observability import logger
from chalicelib.providers.embedder import OpenAIEmbedder
from chalicelib.providers.llm import OpenAILLM
from chalicelib.providers.queue import FakeQueue
from chalicelib.workers.extraction_queue import process_job
from tests.integration.test_conversation_support import Tenant
from tests.integration.test_mcp_protocol import Session
from tests.integration.test_memory_support import Mem, reply, scripted, turns
from tests.openai_stub import OpenAIStub

# What OpenAI answers a wrong key with: the start and end of the key that was sent.
PLATFORM_KEY = "sk-proj-abc123FAKEKEYxxxxxxxxxxxxwxyz"
LEAKED = "abc123FAKEKEY"
PROVIDER_TEXT = (
    "Incorrect API key provided: sk-proj-abc123FAKEKEY********************wxyz. You can find"
    " your API key at https://platform.openai.com/account/api-keys."
)
SAID = turns(("user", "I only drink black coffee."))


@pytest.fixture
def log_lines() -> Iterator[Any]:
    stream = io.StringIO()
    handler = logger.registered_handler
    old = handler.setStream(stream)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]
    handler.setStream(old)


@pytest.fixture
def refusing() -> Iterator[OpenAIStub]:
    """A provider refusing the platform's key, as OpenAI does (401, the key's ends quoted)."""
    with OpenAIStub(dim=8) as stub:
        stub.fail_next = 1_000
        stub.fail_status = 401
        stub.fail_message = PROVIDER_TEXT
        yield stub


@pytest.fixture
def m(api, deps, org) -> Mem:
    return Mem.open(api, deps, org)


def _refused_model(deps: Any, stub: OpenAIStub) -> None:
    deps._llm = OpenAILLM(model="stub-chat", base_url=stub.base_url, api_key=PLATFORM_KEY)


def _says_401_and_not_the_key(answer: Any) -> None:
    text = json.dumps(answer)
    assert LEAKED not in text and "sk-proj" not in text and "Incorrect API key" not in text
    assert "answered 401" in text, answer


def _logged(lines: list[dict[str, Any]], message: str) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("message") == message]


def test_a_refused_extraction_answers_the_status_and_logs_the_providers_text(
    m, deps, refusing, log_lines
):
    """GIVEN the model provider answering 401 with text quoting part of the platform's key
    WHEN a tenant's memory.set_from_messages calls it over HTTP
    THEN it answers 502 EXTRACTION_FAILED naming the provider's 401, without a character of
    the provider's text, and the server log holds that text with the status."""
    _refused_model(deps, refusing)

    status, body = m.extract(SAID)

    assert (status, body["error"]["code"]) == (502, "EXTRACTION_FAILED"), body
    _says_401_and_not_the_key(body)
    (line,) = _logged(log_lines(), "model provider call failed")
    assert line["provider_status"] == 401 and LEAKED in line["error"]


def test_a_refused_extraction_over_mcp_answers_the_status_alone(client, m, deps, refusing):
    """GIVEN the same refusing provider
    WHEN the extraction is called as an MCP tool
    THEN the tool's error names the 401 and carries nothing of the provider's text."""
    _refused_model(deps, refusing)
    session = Session(client, m.tokens["writer"])

    status, body, _ = session.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {
                "name": "loom_memory_set_from_messages",
                "arguments": {"namespace": "ns-mem", "agent": "a1", "messages": SAID},
            },
        }
    )

    assert status == 200 and body["result"]["isError"] is True, body
    _says_401_and_not_the_key(body)


def test_a_refused_summary_answers_the_status_alone(api, deps, org, refusing):
    """GIVEN a thread long enough to compact and the refusing provider
    WHEN conversation.compact asks it for the summary
    THEN it answers 502 naming the 401, without the provider's text."""
    t = Tenant.open(api, deps, org)
    for i in range(8):
        t.append("th", f"turn {i} about the barge timetable", msg_id=f"m{i}")
    _refused_model(deps, refusing)

    status, body = t.post(
        "conversation.compact",
        agent="a1",
        thread_id="th",
        keep_recent=2,
        min_to_compact=2,
        as_="writer",
    )

    assert (status, body["error"]["code"]) == (502, "upstream_error"), body
    _says_401_and_not_the_key(body)


def test_a_deferred_batch_keeps_the_status_as_its_last_error(m, deps, refusing):
    """GIVEN a deferred extraction, and the refusing provider when the worker replays it
    WHEN its owner reads memory.extraction_status_mine
    THEN the batch's last_error names the 401 and holds nothing of the provider's text."""
    deps._queue = FakeQueue()
    queue_id = m.extract_ok(SAID, defer=True)["queue_id"]
    _refused_model(deps, refusing)

    assert process_job(deps, queue_id) == "retry"

    out = m.ok("memory.extraction_status_mine", queue_ids=[queue_id])
    (batch,) = out["batches"]
    assert batch["last_error"], batch
    _says_401_and_not_the_key(batch)


def test_a_refused_embedding_is_named_by_its_status_in_pipeline_errors(
    m, deps, refusing, log_lines
):
    """GIVEN a model that extracts and an embedding provider answering 401 with the key
    WHEN the extraction's step that embeds the transcript fails open
    THEN pipeline_errors names the embedding provider's 401 and nothing of its text, and the
    log holds the text."""
    scripted(deps, reply())
    deps._embedder = OpenAIEmbedder(
        model="stub-embed", dim=8, base_url=refusing.base_url, api_key=PLATFORM_KEY
    )

    out = m.extract_ok(SAID)

    errors = [e for e in out["pipeline_errors"] if e.startswith("loom.fetch_existing_memories")]
    assert errors and "embedding provider answered 401" in errors[0], out["pipeline_errors"]
    _says_401_and_not_the_key(out)
    lines = _logged(log_lines(), "embedding provider call failed")
    assert lines and LEAKED in lines[0]["error"]
