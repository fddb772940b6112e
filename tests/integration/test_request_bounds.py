"""What one request may cost: its body's bytes, one MCP message a POST, the bytes a page of
turns answers, and the model calls of one extraction."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.deps import Deps, set_deps
from chalicelib.extraction import pipeline
from chalicelib.extraction.steps import call_model
from chalicelib.providers.llm import FakeLLM
from chalicelib.providers.queue import FakeQueue
from tests.conftest import live_setting, make_settings
from tests.integration.test_conversation_support import NS, Tenant
from tests.integration.test_mcp_protocol import Session
from tests.integration.test_memory_support import (
    Mem,
    evidence_rows,
    memory_rows,
    reply,
    scripted,
)

MB = 1024 * 1024


@pytest.fixture
def t(api, deps, org) -> Tenant:
    return Tenant.open(api, deps, org)


def _msg_count(t: Tenant, thread: str) -> int:
    got = t.ok("conversation.get", agent="-", thread_id=thread, as_="viewer")
    return int(got["msg_count"])


def _post_raw(t: Tenant, path: str, body: str, role: str = "writer") -> tuple[int, Any, bytes]:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {t.tokens[role]}"}
    resp = t.api.client.http.post(path, headers=headers, body=body)
    return resp.status_code, json.loads(resp.body or b"null"), resp.body


# ---- the body's bytes ----------------------------------------------------------------------


def _append_padded_to(t: Tenant, size: int) -> str:
    """A conversation.append body the op would store, padded with an unknown field (served and
    named in ignored_args) to `size` bytes."""
    body = {"namespace": NS, "agent": "a1", "thread_id": "big", "role": "user",
            "content": "a turn sent with a large body", "padding": ""}  # fmt: skip
    body["padding"] = "x" * (size - len(json.dumps(body)))
    return json.dumps(body)


def test_a_20_mb_body_answers_413_and_stores_nothing(t):
    """GIVEN a conversation.append body of 20 MB (a valid turn padded with an unknown field)
    WHEN it is posted to /v1/conversation.append
    THEN it answers 413 payload_too_large in the contract's error shape, and no turn is
    stored."""
    status, body, _ = _post_raw(t, "/v1/conversation.append", _append_padded_to(t, 20 * MB))

    assert status == 413, body
    assert body["error"]["code"] == "payload_too_large"
    assert "10,485,760" in body["error"]["message"]
    assert _msg_count(t, "big") == 0


def test_a_20_mb_mcp_message_answers_413_and_runs_nothing(t, client):
    """GIVEN an open MCP session
    WHEN a tools/call of conversation.append padded to 20 MB is posted to /mcp
    THEN it answers 413 payload_too_large in the contract's error shape, and no turn is
    stored."""
    session = Session(client, t.tokens["writer"])
    arguments = {
        "namespace": NS,
        "agent": "a1",
        "thread_id": "big",
        "role": "user",
        "content": "a turn sent with a large body",
        "padding": "x" * (20 * MB),
    }
    call = {"name": "loom_conversation_append", "arguments": arguments}

    status, body, _ = session.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": call})  # fmt: skip

    assert status == 413 and body["error"]["code"] == "payload_too_large", body
    assert _msg_count(t, "big") == 0


def test_the_size_is_refused_before_the_body_is_parsed(t):
    """GIVEN a 20 MB body that is not JSON
    WHEN it is posted THEN it answers 413, not the 400 of a body that does not parse."""
    status, body, _ = _post_raw(t, "/v1/conversation.append", "{" * (20 * MB))
    assert (status, body["error"]["code"]) == (413, "payload_too_large"), body


def test_the_limit_is_the_setting_and_a_body_at_it_is_served(pool, embedder, org, api):
    """GIVEN LOOM_MAX_REQUEST_BYTES set to 4,096
    WHEN bodies of 4,097 and 4,096 bytes are posted
    THEN the first answers 413, the second is served and stored."""
    small = Deps(make_settings(max_request_bytes=4096), pool=pool, embedder=embedder,
                 llm=FakeLLM())  # fmt: skip
    set_deps(small)
    try:
        t = Tenant.open(api, small, org)
        at, over = _append_padded_to(t, 4096), _append_padded_to(t, 4097)
        assert (len(at), len(over)) == (4096, 4097)
        assert _post_raw(t, "/v1/conversation.append", over)[0] == 413
        assert _post_raw(t, "/v1/conversation.append", at)[0] == 200
        assert _msg_count(t, "big") == 1
    finally:
        set_deps(None)


# ---- one MCP message a POST ----------------------------------------------------------------


def test_a_batch_of_300_calls_is_refused_and_none_runs(t, client):
    """GIVEN an open MCP session whose client sends no MCP-Protocol-Version (read as the
    2025-03-26 revision, the one that had batches)
    WHEN a JSON-RPC batch of 300 conversation.append tool calls is POSTed
    THEN it answers 400 with one JSON-RPC error -32600 and a null id, and none of the 300 turns
    is stored."""
    session = Session(client, t.tokens["writer"])
    batch = [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call",
         "params": {"name": "loom_conversation_append",
                    "arguments": {"namespace": NS, "agent": "a1", "thread_id": "batched",
                                  "role": "user", "content": f"batched turn {i}"}}}
        for i in range(300)
    ]  # fmt: skip

    status, body, _ = session.send(batch)

    assert status == 400 and isinstance(body, dict), body
    assert (body["error"]["code"], body["id"]) == (-32600, None)
    assert _msg_count(t, "batched") == 0


# ---- the bytes of a page of turns ----------------------------------------------------------

PAGE_BUDGET = 64 * 1024
ENVELOPE = 1024  # a page's own fields around its turns: next_cursor, ignored_args, ...


@pytest.fixture
def large_thread(t, pool) -> Iterator[list[str]]:
    """Twelve turns of 7 to 30 KB (some written outside ASCII, which the answer escapes), and
    one of 100 KB, larger than a page, under a page budget of 64 KB."""
    ids = []
    for i in range(13):
        text = f"turn {i} " + ("é" * 5_000 if i % 3 == 0 else "x" * (7_000 + 2_000 * i))
        if i == 6:
            text = "the turn larger than a page " + "y" * 100_000
        ids.append(t.append("large", text, msg_id=f"m{i:02d}")["msg_id"])
    with live_setting(pool, conversation_page_max_bytes=str(PAGE_BUDGET)):
        yield ids


def test_list_pages_stay_within_the_budget_and_return_every_turn_once(t, large_thread):
    """GIVEN a thread of large turns and a page budget of 64 KB
    WHEN it is walked with conversation.list (limit 1000) from cursor to cursor
    THEN every page's answer stays within the budget, except a page of the one turn larger
    than it, and the walk returns every turn exactly once, in order."""
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        body = {"namespace": NS, "agent": "-", "thread_id": "large", "limit": 1000}
        if cursor:
            body["cursor"] = cursor
        status, page, raw = _post_raw(t, "/v1/conversation.list", json.dumps(body), "viewer")
        assert status == 200, page
        pages += 1
        if len(page["rows"]) > 1:
            assert len(raw) <= PAGE_BUDGET + ENVELOPE, (pages, len(raw))
        seen += [r["msg_id"] for r in page["rows"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert pages < 50
    assert seen == large_thread
    assert pages > 3


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_get_pages_stay_within_the_budget_and_offsets_return_every_turn_once(
    t, large_thread, order
):
    """GIVEN the same thread and budget
    WHEN it is read with conversation.get (include_messages, limit 1000) page after page,
    each at offset + len(messages), from either end
    THEN every page stays within the budget (one turn larger than it comes alone), every
    turn is returned exactly once, and with order asc next_cursor is set until the last page."""
    seen: list[str] = []
    offset = 0
    while True:
        body = {"namespace": NS, "agent": "-", "thread_id": "large", "include_messages": True,
                "limit": 1000, "offset": offset, "order": order}  # fmt: skip
        status, page, raw = _post_raw(t, "/v1/conversation.get", json.dumps(body), "viewer")
        assert status == 200, page
        assert page["msg_count"] == len(large_thread)
        if len(page["messages"]) > 1:
            assert len(raw) <= PAGE_BUDGET + ENVELOPE, (offset, len(raw))
        seen += [r["msg_id"] for r in page["messages"]]
        offset += len(page["messages"])
        done = offset >= page["msg_count"]
        assert (page["next_cursor"] is not None) == (order == "asc" and not done)
        if done:
            break
    assert seen == (large_thread if order == "asc" else large_thread[::-1])


def test_get_next_cursor_of_a_cut_page_continues_with_list(t, large_thread):
    """GIVEN a first conversation.get page cut short by the budget
    WHEN its next_cursor is passed to conversation.list
    THEN the list starts at the turn right after the page."""
    first = t.ok("conversation.get", agent="-", thread_id="large", include_messages=True,
                 limit=1000, as_="viewer")  # fmt: skip
    held = [r["msg_id"] for r in first["messages"]]
    assert 0 < len(held) < len(large_thread)
    rest = t.ok("conversation.list", agent="-", thread_id="large", limit=1,
                cursor=first["next_cursor"], as_="viewer")  # fmt: skip
    assert rest["rows"][0]["msg_id"] == large_thread[len(held)]


# ---- the model calls of one extraction -----------------------------------------------------


@pytest.fixture
def m(api, deps, org) -> Mem:
    return Mem.open(api, deps, org)


def _turns(n: int) -> list[dict[str, str]]:
    """n user turns of about 400 characters: two to a segment of 1,000."""
    return [{"role": "user", "content": f"turn {i} " + "about the harbour " * 22} for i in range(n)]


@pytest.fixture
def ceiling_of_3(pool) -> Iterator[None]:
    with live_setting(pool, memory_extract_max_model_calls="3",
                      memory_extract_size_segment_chars="1000"):  # fmt: skip
        yield


def test_an_extraction_within_the_ceiling_runs(m, deps, ceiling_of_3):
    """GIVEN a ceiling of 3 model calls and segments of 1,000 characters
    WHEN six turns (three segments) are sent THEN they are extracted with three calls."""
    llm = scripted(deps, reply(), reply(), reply())
    out = m.extract_ok(_turns(6))
    assert out["segments"] == 3 and len(llm.prompts) == 3


def test_an_extraction_over_the_ceiling_is_refused_before_any_call(m, deps, pool, ceiling_of_3):
    """GIVEN the same ceiling
    WHEN eight turns (four segments) are sent, inline or deferred, or six with a pipeline
    that names the extraction step twice
    THEN each answers 422 naming the ceiling, the model is never called, and nothing is
    stored or queued."""
    llm = scripted(deps, reply(), reply(), reply(), reply())
    deps._queue = queue = FakeQueue()

    for extra in ({}, {"defer": True}):
        status, body = m.extract(_turns(8), **extra)
        assert status == 422, body
        assert "LOOM_MEMORY_EXTRACT_MAX_MODEL_CALLS" in body["error"]["message"]
        assert "4 model calls" in body["error"]["message"]
    steps = ["loom.llm_extract", "loom.llm_extract", "loom.bulk_write"]
    status, body = m.extract(_turns(6), pipeline_steps=steps)
    assert status == 422 and "6 model calls" in body["error"]["message"], body

    assert llm.prompts == [] and queue.sent == []
    assert evidence_rows(pool, m.org) == [] and memory_rows(pool, m.org) == []


@pytest.fixture
def chatty_step() -> Iterator[str]:
    """An operator's step that asks the model five times."""

    def ask_five_times(run: Any) -> None:
        for i in range(5):
            call_model(run, "system", f"question {i}")

    pipeline.step("acme.chatty")(ask_five_times)
    yield "acme.chatty"
    pipeline.STEPS.pop("acme.chatty", None)


def test_an_operators_step_is_held_to_the_ceiling_too(m, deps, ceiling_of_3, chatty_step):
    """GIVEN the ceiling of 3 and an operator's step that asks the model five times
    WHEN a one-segment transcript runs the extraction and then that step
    THEN the model is called three times in all, and the step's failure is named in
    pipeline_errors."""
    llm = scripted(deps, *[reply()] * 6)
    out = m.extract_ok(_turns(1), pipeline_steps=["loom.llm_extract", chatty_step])
    assert len(llm.prompts) == 3
    assert any(e.startswith(chatty_step) and "ceiling" in e for e in out["pipeline_errors"])
