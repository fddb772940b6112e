"""What extraction's model calls cost: tokens counted for an answer that did not parse (in the
response and in `loom drops`), the provider's cached input tokens apart from Loom's own cache
hits, and the response cache's expiry."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib import cli
from chalicelib.deps import set_deps
from chalicelib.providers.llm import OpenAILLM
from chalicelib.workers.retention import purge_expired_conversations
from tests.integration.test_memory_support import (
    NS,
    Mem,
    drop_rows,
    fact,
    live_setting,
    reply,
    scripted,
    turns,
    verdicts,
)
from tests.openai_stub import OpenAIStub

SAID = turns(("user", "I moved to Lisbon last month."))
NOTHING = json.dumps({"facts": [], "forget": [], "digest": ""})
# The stub's usage for every chat call.
STUB_IN, STUB_OUT = 11, 7


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


def _chats(stub: OpenAIStub) -> list[dict[str, Any]]:
    return [body for path, body in stub.requests if path.endswith("/chat/completions")]


def test_an_unparsable_answer_still_counts_its_tokens_in_the_502_and_in_loom_drops(
    m, deps, org, cli_env, capsys
):
    """GIVEN the OpenAI provider pointed at a local stub that answers prose instead of JSON
    WHEN a transcript is sent
    THEN it answers 502 EXTRACTION_FAILED whose body names the tokens the call cost, and
    `loom drops` shows the lost answer as a loom.llm_extract parse drop with those tokens.
    """
    with OpenAIStub(chat_reply=lambda req: "Sure! The user moved to Lisbon.") as stub:
        deps._llm = OpenAILLM(model=f"stub-{org}", base_url=stub.base_url, api_key="k")
        status, body = m.extract(SAID)

    assert status == 502 and body["error"]["code"] == "EXTRACTION_FAILED", body
    assert len(_chats(stub)) == 1
    assert (body["tokens_in"], body["tokens_out"], body["cached_tokens_in"]) == (
        STUB_IN,
        STUB_OUT,
        0,
    )
    capsys.readouterr()
    assert cli.main(["drops", "--namespace", NS, "--org", org]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["stage", "reason", "count", "tokens_in", "tokens_out"]
    assert lines[1].split() == ["loom.llm_extract", "parse", "1", str(STUB_IN), str(STUB_OUT)]


class PromptCachingStub(OpenAIStub):
    """Says, as OpenAI does, how much of each prompt its own prompt cache served."""

    CACHED = 4

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        out = super().chat(body)
        out["usage"]["prompt_tokens_details"] = {"cached_tokens": self.CACHED}
        return out


def test_cached_tokens_in_is_what_the_provider_cached_and_looms_cache_hits_are_apart(m, deps, org):
    """GIVEN the OpenAI provider pointed at a stub whose usage says 4 of the 11 prompt tokens
    came from its prompt cache
    WHEN a transcript is extracted, then the same transcript again (Loom's response cache
    answers the second)
    THEN the first response counts 11 tokens in, 4 of them cached by the provider, and no
    cache hit of Loom's; the second made no model call: no tokens and nothing cached by the
    provider, one hit of Loom's response cache, whose prompt was 11 tokens.
    """
    with PromptCachingStub(chat_reply=lambda req: NOTHING) as stub:
        deps._llm = OpenAILLM(model=f"stub-{org}", base_url=stub.base_url, api_key="k")
        first = m.extract_ok(SAID)
        second = m.extract_ok(SAID)

    def costs(out: dict[str, Any]) -> tuple[int, ...]:
        return tuple(
            out[k]
            for k in (
                "tokens_in",
                "tokens_out",
                "cached_tokens_in",
                "response_cache_hits",
                "response_cache_tokens_in",
            )
        )

    assert len(_chats(stub)) == 1
    assert costs(first) == (STUB_IN, STUB_OUT, PromptCachingStub.CACHED, 0, 0)
    assert costs(second) == (0, 0, 0, 1, STUB_IN)


def test_a_verifiers_unparsable_answer_fails_open_and_its_tokens_still_count(m, deps, pool):
    """GIVEN a coding capture with a verifier model, and a verifier that answers prose
    WHEN the transcript is extracted
    THEN the fact is still written (the verifier fails open, named in pipeline_errors), the
    response counts both calls' tokens, and the lost verdict is a loom.verify_durable parse
    drop naming the verifier call's tokens.
    """
    verdict = "These all look durable to me."
    llm = scripted(deps, reply(fact("user", "deploy day", "The user deploys on Fridays.")), verdict)

    with live_setting(pool, memory_extract_verify_models='["verifier-a"]'):
        out = m.extract_ok(turns(("user", "We deploy on Fridays.")), extra_tags=["source:codex"])

    assert verdicts(out) == {"user/deploy_day": "created"}
    assert [e.split(":")[0] for e in out["pipeline_errors"]] == ["loom.verify_durable"]
    (extract_in, verify_in) = [len(system + user) // 4 for system, user in llm.prompts]
    extract_out = len(reply(fact("user", "deploy day", "The user deploys on Fridays."))) // 4
    verify_out = len(verdict) // 4
    assert (out["tokens_in"], out["tokens_out"]) == (
        extract_in + verify_in,
        extract_out + verify_out,
    )
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT stage, reason, count, tokens_in, tokens_out FROM loom.memory_drops"
            " WHERE org = %s",
            (m.org,),
        ).fetchall()
    assert rows == [("loom.verify_durable", "parse", 1, verify_in, verify_out)]
    assert [d["stage"] for d in drop_rows(pool, m.org)] == ["loom.verify_durable"]


def _age_cache(pool, org: str, days: int) -> None:
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.extraction_cache SET created_at = now() - make_interval(days => %s)"
            " WHERE org = %s",
            (days, org),
        )


def _cached(pool, org: str, within_days: int = 36500) -> int:
    """The org's cached answers, those made in the last `within_days` days only if given."""
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT count(*) FROM loom.extraction_cache WHERE org = %s"
            " AND created_at > now() - make_interval(days => %s)",
            (org, within_days),
        ).fetchone()
    return int(row[0])


def test_a_cached_answer_older_than_its_ttl_is_not_served(m, deps, pool):
    """GIVEN an extraction whose answer was cached 31 days ago (default TTL 30 days), and one
    cached 10 days ago while LOOM_EXTRACTION_CACHE_TTL_DAYS is 7
    WHEN the same transcript is extracted again
    THEN the model is asked again each time (no cache hit), and its new answer is cached.
    """
    llm = scripted(deps, NOTHING, NOTHING, NOTHING)
    m.extract_ok(SAID)
    _age_cache(pool, m.org, 31)

    again = m.extract_ok(SAID)
    _age_cache(pool, m.org, 10)
    with live_setting(pool, extraction_cache_ttl_days="7"):
        third = m.extract_ok(SAID)

    assert len(llm.prompts) == 3
    assert again["response_cache_hits"] == third["response_cache_hits"] == 0
    assert again["tokens_in"] > 0 and third["tokens_in"] > 0
    assert _cached(pool, m.org) == _cached(pool, m.org, within_days=1) == 1


def test_the_retention_worker_removes_cached_answers_past_their_ttl(m, deps, pool, client):
    """GIVEN two cached extraction answers, one 31 and one 10 days old
    WHEN the conversation_retention schedule fires, then fires again while
    LOOM_EXTRACTION_CACHE_TTL_DAYS is 7
    THEN the first pass removes the 31-day-old answer only (default TTL 30 days), the second
    the 10-day-old one.
    """
    scripted(deps, NOTHING, NOTHING)
    m.extract_ok(SAID)
    _age_cache(pool, m.org, 31)
    m.extract_ok(turns(("user", "My cat is called Miso.")))
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.extraction_cache SET created_at = now() - interval '10 days'"
            " WHERE org = %s AND created_at > now() - interval '1 day'",
            (m.org,),
        )
    assert _cached(pool, m.org) == 2

    event = client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    first = client.lambda_.invoke("conversation_retention", event).payload
    assert first["cache_removed"] >= 1 and _cached(pool, m.org) == 1
    with live_setting(pool, extraction_cache_ttl_days="7"):
        assert purge_expired_conversations(deps)["cache_removed"] >= 1
    assert _cached(pool, m.org) == 0
