"""`loom reextract`: a namespace's stored transcripts extracted again into a fresh namespace,
reading the source only."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from chalicelib import cli
from chalicelib.deps import set_deps
from chalicelib.observability import logger
from chalicelib.providers import llm as llm_module
from tests.integration.test_memory_support import (
    NS,
    Mem,
    fact,
    facts_of,
    memory_rows,
    reply,
    scripted,
    turns,
)

DST = "ns-reextracted"


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


@pytest.fixture
def cli_env(monkeypatch, database_url, org, deps):
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)
    monkeypatch.setenv("LOOM_EMBEDDER", "fake")
    monkeypatch.setenv("LOOM_ORG", org)
    yield monkeypatch
    set_deps(deps)  # the CLI swaps the process-wide Deps


def test_reextract_writes_the_sources_transcripts_into_a_fresh_namespace(
    m, deps, pool, cli_env, capsys
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
    again = scripted(
        deps,
        reply(fact("user", "home city", "The user lives in Lisbon.")),
        reply(fact("user", "pet", "The user has a cat called Miso.")),
    )
    cli_env.setattr(llm_module, "build_llm", lambda settings: again)

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


def test_reextract_keeps_log_lines_off_stdout(m, deps, cli_env, capsys):
    """GIVEN a transcript extracted into a namespace, and the logger writing to stdout
    WHEN `loom reextract` runs THEN stdout holds only its result line, and each op's JSON log
    line goes to stderr.
    """
    scripted(deps, reply(fact("user", "home city", "The user lives in Lisbon.")))
    m.extract_ok(turns(("user", "I live in Lisbon.")), session_id="s1")
    again = scripted(deps, reply(fact("user", "home city", "The user lives in Lisbon.")))
    cli_env.setattr(llm_module, "build_llm", lambda settings: again)
    capsys.readouterr()

    with logging_to_stdout():
        code = cli.main(["reextract", "--org", m.org, "--namespace", NS, "--into", DST])

    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines() == [f"re-extracted 1 requests into {m.org}/{DST}: 1 rows"]
    assert "memory.set_from_messages" in captured.err
