"""The SDK's examples and an MCP client session, against the real server (`loom serve`)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import anyio
import pytest
from loom import Agent, LoomError

from tests.live_server import live_server

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def server(database_url):
    with live_server(database_url) as base:
        yield base


def _run(coro):
    return anyio.run(coro)


def test_the_session_example_runs_as_written(server, monkeypatch):
    """GIVEN `make run`'s server (auth off) WHEN the spec's Session example runs THEN the turns
    are not recorded (the namespace does not record), close() hands them to deferred
    extraction, and the brief is saved by the agent."""

    async def example():
        async with Agent("dev", "local", "support-bot", base_url=server) as bot:
            s = bot.session("thread-42", user_id="u1")
            resumed = await s.resume(query="resume the billing migration")
            await s.append(
                {"role": "user", "content": "We moved invoices to the new ledger."},
                {"role": "assistant", "content": "Noted; I'll update the export job."},
            )
            stored = s.transcript_stored  # False when the namespace does not record
            await s.close()  # flushes the buffered turns to extraction
            brief = await bot.briefs.save(
                project="billing",
                branch="ledger-move",
                sections={
                    "goal": "Move invoices to the new ledger",
                    "next_steps": ["Update the export job"],
                },
            )
            batches = await bot.memory.extraction_status_mine(s.queue_ids)
            return resumed, stored, brief, batches

    resumed, stored, brief, batches = _run(example)
    assert (resumed["memories"], resumed["transcript"]) == ([], [])
    assert (resumed["context"]["text"], resumed["context"]["tokens"]) == ("", 0)
    assert stored is False
    assert (brief["brief_key"], brief["author"], brief["changed"]) == (
        "auto/billing/ledger-move", "model", True,
    )  # fmt: skip
    assert [b["status"] for b in batches["batches"]] == ["pending"]


def test_a_recording_namespace_keeps_the_turns_and_resume_reads_the_tail(server):
    async def flow():
        async with Agent("dev", "recorded", "support-bot", base_url=server) as bot:
            await bot.conversations.set_logging(True)
            s = bot.session("thread-7", user_id="u1", flush_every=100)
            await s.append({"role": "user", "content": "Invoices now live in ledger v2."})
            resumed = await s.resume()
            return s.transcript_stored, resumed

    stored, resumed = _run(flow)
    assert stored is True
    assert [t["content"] for t in resumed["transcript"]] == ["Invoices now live in ledger v2."]


def test_a_session_append_carries_each_turns_own_fields(server):
    """GIVEN a recording namespace
    WHEN a session appends a "yes", an assistant turn with its reasoning, and a second "yes",
    each turn carrying its own msg_id
    THEN the transcript holds all three with their ids and the reasoning (the second "yes" is
    not answered duplicate)."""

    async def flow():
        async with Agent("dev", "fields", "support-bot", base_url=server) as bot:
            await bot.conversations.set_logging(True)
            s = bot.session("thread-f", user_id="u1", flush_every=100)
            answers = await s.append(
                {"role": "user", "content": "yes", "msg_id": "m1"},
                {"role": "assistant", "content": "Done.", "msg_id": "m2", "reasoning": "asked"},
                {"role": "user", "content": "yes", "msg_id": "m3"},
            )
            thread = await bot.conversations.get("thread-f", agent="-", include_messages=True)
            return answers, thread

    answers, thread = _run(flow)
    assert [(a["msg_id"], a["reason"]) for a in answers] == [("m1", ""), ("m2", ""), ("m3", "")]
    assert [(m["msg_id"], m["reasoning"]) for m in thread["messages"]] == [
        ("m1", ""),
        ("m2", "asked"),
        ("m3", ""),
    ]


def test_transcript_stored_follows_the_recording_switch(server):
    """GIVEN a session in a namespace that does not record
    WHEN it appends, recording is turned on, and it appends again
    THEN transcript_stored is False, then True."""

    async def flow():
        async with Agent("dev", "switched", "support-bot", base_url=server) as bot:
            s = bot.session("thread-s", user_id="u1", flush_every=100)
            await s.append({"role": "user", "content": "before"})
            before = s.transcript_stored
            await bot.conversations.set_logging(True)
            await s.append({"role": "user", "content": "after"})
            return before, s.transcript_stored

    assert _run(flow) == (False, True)


def test_a_session_hands_long_and_many_turns_to_extraction_as_it_takes_them(server, pool):
    """GIVEN a session with a 250,000-character turn (the transcript takes it; an extraction
    message holds 200,000), then 400 more turns, flushed only at close
    WHEN it closes
    THEN the 401 turns reach extraction in two calls (400 turns, then 1), the long one cut to
    200,000 characters; nothing is left buffered."""
    ns = f"sdk-{uuid.uuid4().hex[:8]}"

    async def flow():
        async with Agent("dev", ns, "bot", base_url=server) as bot:
            s = bot.session("thread-long", user_id="u1", flush_every=1000)
            await s.append({"role": "assistant", "content": "x" * 250_000})
            for i in range(400):
                await s.append({"role": "user", "content": f"turn {i}", "msg_id": f"m{i}"})
            await s.close()
            return s.queue_ids, s._buffer

    queue_ids, left = _run(flow)
    assert len(queue_ids) == 2 and left == []
    with pool.connection() as conn:
        sizes = conn.execute(
            "SELECT sizes FROM loom.memory_extraction_queue WHERE queue_id = ANY(%s)"
            " ORDER BY created_at",
            (queue_ids,),
        ).fetchall()
    assert [s["messages"] for (s,) in sizes] == [400, 1]
    assert sizes[0][0]["chars"] == 200_000 + sum(len(f"turn {i}") for i in range(399))


def test_set_from_messages_carries_agent_learnings(server, pool):
    """GIVEN the SDK WHEN set_from_messages is called with agent_learnings=False (deferred)
    THEN the request the server queued carries it."""
    ns = f"sdk-{uuid.uuid4().hex[:8]}"

    async def flow():
        async with Agent("dev", ns, "bot", base_url=server) as bot:
            return await bot.memory.set_from_messages(
                [{"role": "user", "content": "I moved to Lisbon."}],
                agent_learnings=False,
                defer=True,
            )

    out = _run(flow)
    with pool.connection() as conn:
        (request,) = conn.execute(
            "SELECT request FROM loom.memory_extraction_queue WHERE queue_id = %s",
            (out["queue_id"],),
        ).fetchone()
    assert request["agent_learnings"] is False


def test_the_extraction_example_runs_and_errors_carry_the_servers_code(server, monkeypatch):
    monkeypatch.setenv("LOOM_BASE_URL", server)

    async def example():
        async with Agent(org="acme", namespace="support", agent="triage-bot") as bot:
            out = await bot.memory.set_from_messages(
                [
                    {
                        "role": "user",
                        "content": "I moved to Lisbon last month, please bill me in EUR.",
                    },
                    {"role": "assistant", "content": "Noted, invoices will be in EUR."},
                ],
                user_id="u-42",
                observation_date="2026-11-01",  # the day the conversation happened
            )
            rows = [(row["memory_key"], row["conflict_verdict"]) for row in out["written"]]
            try:
                await bot.call("conversation.get", thread_id="")
            except LoomError as exc:
                return out, rows, exc
            return out, rows, None

    out, rows, error = _run(example)
    assert rows == [] and len(out["evidence_ids"]) == 2  # the stock fake extracts nothing
    assert error is not None and (error.status, error.code) == (422, "validation_error")


def test_namespace_none_erases_a_user_in_every_namespace(server):
    """GIVEN u-erase's fact in namespace erase-b WHEN an agent of erase-a asks erasure.request
    for the user THEN its own namespace only is erased, and with namespace=None the whole org."""

    async def flow():
        async with Agent("dev", "erase-b", "bot", base_url=server) as other:
            await other.memory.set("city", "Lisbon", user_id="u-erase")
        async with Agent("dev", "erase-a", "bot", base_url=server) as bot:
            own = await bot.call("erasure.request", kind="user", user_id="u-erase")
            async with Agent("dev", "erase-b", "bot", base_url=server) as other:
                kept = await other.memory.get("city", user_id="u-erase")
                org = await bot.call(
                    "erasure.request", kind="user", user_id="u-erase", namespace=None
                )
                gone = await other.memory.get("city", user_id="u-erase")
        return own, kept, org, gone

    own, kept, org, gone = _run(flow)
    assert own["namespaces"] == ["erase-a"] and kept["found"] is True
    assert org["namespaces"] is None and gone["found"] is False


def test_the_sdk_publishes_knowledge_and_reads_it_back_through_the_agents_reads(server):
    """GIVEN the SDK against a live server WHEN a document is published and a memory set
    THEN Agent.context packs both, Agent.search finds the document and Agent.ask returns it
    whole (a short best hit)."""

    async def flow():
        async with Agent("local", "sdk-reads", "support-bot", base_url=server) as bot:
            published = await bot.knowledge.publish(
                "doc://refunds", "Refunds go back to the card used, within five days.",
                title="Refunds",
            )  # fmt: skip
            await bot.memory.set("user/card", "The customer pays with a company card.")
            packed = await bot.context("how long do refunds take", budget_tokens=500)
            found = await bot.search("refunds card")
            asked = await bot.ask("how long do refunds take")
            listed = await bot.knowledge.list()
            return published, packed, found, asked, listed

    published, packed, found, asked, listed = _run(flow)
    assert (published["version"], published["changed"], published["chunks"]) == (1, True, 1)
    assert "## Knowledge" in packed["text"] and packed["tokens"] <= 500
    assert [h["uri"] for h in found["knowledge"]] == ["doc://refunds"]
    assert asked["passages"][0]["whole_document"] is True
    assert [d["uri"] for d in listed["documents"]] == ["doc://refunds"]


def test_an_mcp_client_session_appends_a_turn_and_reads_it_back(server):
    """GIVEN the official `mcp` client on /mcp?toolset=all WHEN it initializes, lists the tools
    and calls loom_conversation_append THEN the turn reads back through loom_op, and a hidden
    op is refused as a tool error."""
    urllib.request.urlopen(
        urllib.request.Request(
            f"{server}/v1/conversation.set_logging",
            data=json.dumps({"org": "local", "namespace": "mcp-ns", "enabled": True}).encode(),
            headers={"Content-Type": "application/json"},
        )
    ).read()
    script = ROOT / "tests" / "mcp_session.py"
    out = subprocess.run(
        [sys.executable, str(script), f"{server}/mcp?toolset=all&namespace=mcp-ns"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert "loom_conversation_append" in report["tools_all"]
    assert (
        "loom_op" in report["tools_all"] and "loom_conversation_search" not in report["tools_all"]
    )
    assert report["append"]["stored"] is True
    assert report["read_back"] == ["Hello from an MCP client."]
    assert report["hidden_is_error"] is True
    assert report["searched"] == ["mcp-thread"]  # loom_search over every plane


def test_the_core_listing_leaves_out_append_and_openapi_lists_every_op(server):
    from chalicelib.mcp import list_tools
    from chalicelib.registry import registered

    core = {t["name"] for t in list_tools("core")}
    assert "loom_memory_search" in core and "loom_conversation_append" not in core
    with urllib.request.urlopen(f"{server}/openapi.json") as resp:
        doc = json.loads(resp.read())
    assert doc["openapi"] == "3.1.0"
    assert {p.removeprefix("/v1/") for p in doc["paths"]} == set(registered())


def test_the_sdks_generated_types_are_current():
    fresh = subprocess.run(
        [sys.executable, "-m", "chalicelib.sdk_codegen"], capture_output=True, text=True, cwd=ROOT
    ).stdout
    ruff = Path(sys.executable).parent / "ruff"
    formatted = subprocess.run(
        [str(ruff), "format", "--stdin-filename", "_generated.py", "-"],
        input=fresh,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    assert formatted == (ROOT / "sdk" / "loom" / "_generated.py").read_text(), (
        "run: python -m chalicelib.sdk_codegen > sdk/loom/_generated.py && ruff format sdk"
    )
