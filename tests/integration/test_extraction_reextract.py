"""`loom reextract`: a namespace's stored transcripts extracted again into a fresh namespace,
reading the source only, each request with what its first extraction read. The CLI reaches
its model through the real `openai` client, at a local OpenAI-compatible stub."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from chalicelib import cli
from chalicelib.deps import set_deps
from chalicelib.observability import logger
from tests.integration.test_memory_support import (
    NS,
    Mem,
    drop_rows,
    fact,
    facts_of,
    live_setting,
    memory_rows,
    reply,
    scripted,
    turns,
)
from tests.openai_stub import OpenAIStub

DST = "ns-reextracted"
NOTHING = reply()


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


@pytest.fixture
def model() -> Iterator[tuple[OpenAIStub, deque[Any]]]:
    """The model the CLI reaches: a local OpenAI-compatible stub answering from a queue (a
    callable in the queue answers from the request)."""
    replies: deque[Any] = deque()

    def answer(request: dict[str, Any]) -> str:
        said = replies.popleft() if replies else NOTHING
        return str(said(request) if callable(said) else said)

    with OpenAIStub(chat_reply=answer) as stub:
        yield stub, replies


@pytest.fixture
def cli_env(monkeypatch, database_url, org, deps, model):
    stub, _ = model
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)
    monkeypatch.setenv("LOOM_EMBEDDER", "fake")
    monkeypatch.setenv("LOOM_ORG", org)
    monkeypatch.setenv("LOOM_LLM_PROVIDER", "openai")
    monkeypatch.setenv("LOOM_LLM_BASE_URL", stub.base_url)
    monkeypatch.setenv("LOOM_LLM_MODEL", f"stub-{org}")
    monkeypatch.setenv("LOOM_LLM_API_KEY", "k")
    yield monkeypatch
    set_deps(deps)  # the CLI swaps the process-wide Deps


def _prompts(stub: OpenAIStub) -> list[str]:
    """The transcript prompt of each chat request the stub got."""
    return [b["messages"][1]["content"] for p, b in stub.requests if p.endswith("/completions")]


def test_reextract_writes_the_sources_transcripts_into_a_fresh_namespace(
    m, deps, pool, cli_env, model, capsys
):
    """GIVEN two transcripts extracted into a namespace, and a model for the CLI
    WHEN `loom reextract --org ORG --namespace SRC --into DST` runs
    THEN each request is extracted again into DST (a progress bar reaches 2/2), the facts land
    there, and the source's rows are unchanged.
    """
    scripted(deps, reply(fact("user", "home city", "The user lives in Lisbon.")))
    m.extract_ok(turns(("user", "I live in Lisbon.")), session_id="s1")
    scripted(deps, reply(fact("user", "pet", "The user has a cat called Miso.")))
    m.extract_ok(turns(("user", "My cat is called Miso.")), session_id="s2")
    source = memory_rows(pool, m.org, NS)
    _, replies = model
    replies.extend(
        [
            reply(fact("user", "home city", "The user lives in Lisbon.")),
            reply(fact("user", "pet", "The user has a cat called Miso.")),
        ]
    )

    code = cli.main(["reextract", "--org", m.org, "--namespace", NS, "--into", DST])

    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "2/2 requests" in captured.err
    assert "re-extracted 2 requests" in captured.out
    assert facts_of(pool, m.org, DST) == {
        "user/home_city": "The user lives in Lisbon.",
        "user/pet": "The user has a cat called Miso.",
    }
    assert memory_rows(pool, m.org, NS) == source


RAN_PYTEST = "User ran pytest right now"
RAN_RUFF = "User ran ruff right now"
CODING_SESSION = reply(
    fact("pytest", "run", RAN_PYTEST),  # a recall echo of pytest/last_run
    fact("ruff", "run", "The user ran ruff and it found nothing: User ran ruff right now"),
    fact("build", "status", "The build is green right now"),  # dropped in coding captures
    fact("user", "deploy day", "The user deploys on Fridays."),
)


def test_reextract_replays_each_request_with_what_its_first_extraction_read(
    m, deps, pool, cli_env, model, capsys
):
    """GIVEN a coding capture extracted with extra tags, an observation date, earlier turns,
    served keys and session values (its model extracted nothing), and a second request dated
    only by when it was made
    WHEN `loom reextract` runs and the model returns a recall echo, a session echo, a status
    snapshot and one durable fact for the capture
    THEN the capture is replayed as it was read: the prompt carries its observation date and
    earlier turns, the echoes and the snapshot are dropped (it is still a coding capture), and
    the durable fact lands in DST with the capture's tags; the second request's prompt is
    dated the day it was made, not today.
    """
    scripted(deps, NOTHING, NOTHING)
    m.extract_ok(
        turns(("user", "Ran the checks; we deploy on Fridays.")),
        session_id="s1",
        extra_tags=["source:claude-code", "team:payments"],
        observation_date="2023-05-08",
        last_messages=turns(("user", "Earlier we spoke about the Friday freeze.")),
        recalled_keys=["pytest/last_run"],
        session_values=[RAN_RUFF],
    )
    m.extract_ok(
        turns(("user", "My cat is called Miso.")),
        session_id="s2",
        request_time="2024-03-01T12:00:00Z",
    )
    stub, replies = model
    replies.extend([CODING_SESSION, NOTHING])

    code = cli.main(["reextract", "--org", m.org, "--namespace", NS, "--into", DST])

    assert code == 0, capsys.readouterr().err
    capture, later = _prompts(stub)
    assert "Observation date: 2023-05-08" in capture
    assert "Earlier we spoke about the Friday freeze." in capture
    assert "Observation date: 2024-03-01" in later
    assert facts_of(pool, m.org, DST) == {"user/deploy_day": "The user deploys on Fridays."}
    tags = {r["key"]: r["tags"] for r in memory_rows(pool, m.org, DST)}["user/deploy_day"]
    assert {"source:claude-code", "team:payments"} <= set(tags)
    dropped = {(d["namespace"], d["reason"]) for d in drop_rows(pool, m.org)}
    assert {(DST, "recall_echo"), (DST, "session_echo"), (DST, "status_snapshot")} <= dropped


def test_reextract_never_defers_and_reports_what_it_wrote(m, deps, pool, cli_env, model, capsys):
    """GIVEN two transcripts extracted inline by agent a1, a destination already holding a
    different value for one of their facts, and a1 on LOOM_EXTRACTION_DEFER_AGENTS
    WHEN `loom reextract` runs
    THEN both requests are extracted inline (nothing queued), and the result line counts the
    memory written by verdict and the one left as it was (a conflict).
    """
    scripted(deps, NOTHING, NOTHING)
    m.extract_ok(turns(("user", "I live in Lisbon.")), session_id="s1")
    m.extract_ok(turns(("user", "My cat is called Miso.")), session_id="s2")
    m.set("user/pet", "The user has a dog called Rex.", namespace=DST)
    _, replies = model
    replies.extend(
        [
            reply(fact("user", "home city", "The user lives in Lisbon.")),
            reply(fact("user", "pet", "The user has a cat called Miso.")),
        ]
    )

    with live_setting(pool, extraction_defer_agents='["a1"]'):
        code = cli.main(["reextract", "--org", m.org, "--namespace", NS, "--into", DST])

    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines() == [
        f"re-extracted 2 requests into {m.org}/{DST}: 1 memories written (created 1),"
        " 1 not written (conflict 1)"
    ]
    assert facts_of(pool, m.org, DST) == {
        "user/home_city": "The user lives in Lisbon.",
        "user/pet": "The user has a dog called Rex.",
    }
    with pool.connection() as conn:
        queued = conn.execute(
            "SELECT count(*) FROM loom.memory_extraction_queue WHERE org = %s", (m.org,)
        ).fetchone()
    assert queued == (0,)


def test_a_request_that_fails_is_named_and_the_others_still_run(
    m, deps, pool, cli_env, model, capsys
):
    """GIVEN two stored transcripts, and a model that answers prose for the first replay
    WHEN `loom reextract` runs
    THEN the first request is named on stderr with its error, the second is still extracted
    into DST, the result line counts the failure, and the command exits 1.
    """
    scripted(deps, NOTHING, NOTHING)
    first = m.extract_ok(turns(("user", "I live in Lisbon.")), request_id="req-lisbon")
    m.extract_ok(turns(("user", "My cat is called Miso.")))
    _, replies = model
    replies.extend(["Sure, Lisbon!", reply(fact("user", "pet", "The user has a cat called Miso."))])

    code = cli.main(["reextract", "--org", m.org, "--namespace", NS, "--into", DST])

    captured = capsys.readouterr()
    assert code == 1
    assert "error: request req-lisbon: " in captured.err and first["evidence_ids"]
    assert captured.out.splitlines() == [
        f"re-extracted 2 requests into {m.org}/{DST}: 1 memories written (created 1),"
        " 1 requests failed"
    ]
    assert facts_of(pool, m.org, DST) == {"user/pet": "The user has a cat called Miso."}


def test_reextract_into_the_source_itself_is_refused(m, cli_env, capsys):
    """GIVEN a namespace with a stored transcript
    WHEN reextract names the same namespace as source and destination
    THEN it exits 2 with an error and extracts nothing.
    """
    m.extract_ok(turns(("user", "hello")))

    assert cli.main(["reextract", "--org", m.org, "--namespace", NS, "--into", NS]) == 2
    assert "--into" in capsys.readouterr().err


@contextmanager
def logging_to_stdout() -> Iterator[None]:
    """The logger as a fresh process has it: writing to (this test's) stdout."""
    handler = logger.registered_handler
    old = handler.setStream(sys.stdout)
    try:
        yield
    finally:
        handler.setStream(old)


def test_reextract_keeps_log_lines_off_stdout(m, deps, cli_env, model, capsys):
    """GIVEN a transcript extracted into a namespace, and the logger writing to stdout
    WHEN `loom reextract` runs THEN stdout holds only its result line, and each op's JSON log
    line goes to stderr.
    """
    scripted(deps, reply(fact("user", "home city", "The user lives in Lisbon.")))
    m.extract_ok(turns(("user", "I live in Lisbon.")), session_id="s1")
    _, replies = model
    replies.append(reply(fact("user", "home city", "The user lives in Lisbon.")))
    capsys.readouterr()

    with logging_to_stdout():
        code = cli.main(["reextract", "--org", m.org, "--namespace", NS, "--into", DST])

    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines() == [
        f"re-extracted 1 requests into {m.org}/{DST}: 1 memories written (created 1)"
    ]
    assert "memory.set_from_messages" in captured.err
