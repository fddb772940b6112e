"""A model the provider answers does not exist (404, model_not_found): the session brief's model
gives way to the deployment's LLM, and a verifier model is skipped. Through the real `openai`
client against a local OpenAI-compatible stub."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.extraction.steps import VERIFIER_SYSTEM
from chalicelib.providers.llm import OpenAILLM
from tests.integration.test_memory_support import Mem, fact, keys, reply, turns
from tests.integration.test_session_support import Briefs, ev, live_setting, sections_json
from tests.openai_stub import OpenAIStub


def chat_models(stub: OpenAIStub) -> list[str]:
    return [body["model"] for path, body in stub.requests if path.endswith("/chat/completions")]


def test_a_brief_model_the_provider_does_not_serve_falls_back_to_the_deployments_llm(
    api, deps, org, pool
):
    """GIVEN the deployment's LLM is the openai client at a compatible server, and
    LOOM_SESSION_BRIEF_LLM_MODEL names a model that server answers 404 model_not_found
    WHEN events filling two windows are saved
    THEN the brief's model is asked once, then the deployment's model revises both windows:
    author llm, no window failed, stats.model names the deployment's model, and the answer
    carries none of the provider's text.
    """
    b = Briefs.open(api, deps, org)
    gone, deployed = f"brief-gone-{org}", f"deployed-{org}"
    events = [ev("user", f"step {i} " + "y" * 480) for i in range(4)]
    reply_ = sections_json(goal="Rotate the keys", decisions=["Rotate staging first"])
    with OpenAIStub(chat_reply=lambda req: reply_) as stub:
        stub.missing_models = {gone}
        deps._llm = OpenAILLM(model=deployed, base_url=stub.base_url, api_key="k")
        with live_setting(pool, session_brief_llm_model=gone, session_brief_window_chars="1000"):
            out = b.save(brief_key="k", events=events)

    assert chat_models(stub) == [gone, deployed, deployed]
    assert out["author"] == "llm" and out["changed"] is True
    assert out["stats"]["windows"] == 2 and out["stats"]["windows_failed"] == 0
    assert out["stats"]["model"] == deployed
    assert "Rotate staging first" in out["rendered"]
    assert "does not exist" not in json.dumps(out)


DURABLE = (
    fact("project", "release 2.3", "Release 2.3 changed the default port to 8080."),
    fact("project", "config", "The service reads its config from /etc/atlas.toml."),
)


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def test_a_verifier_model_the_provider_does_not_serve_is_skipped(m, deps, org, pool):
    """GIVEN a coding capture, the openai client at a compatible server, and two verifier
    models: one the server answers 404 model_not_found, one calling the first fact non-durable
    WHEN the extraction returns two facts
    THEN the missing verifier is skipped rather than failing the step: the other's verdict
    drops the first fact, and no pipeline error is named.
    """
    gone, judge = f"verify-gone-{org}", f"verify-judge-{org}"

    def answer(req: dict[str, Any]) -> str:
        if req["messages"][0]["content"] == VERIFIER_SYSTEM:
            return '{"non_durable": [0]}'
        return reply(*DURABLE)

    said = turns(("user", "Let me tell you about the service."))
    with OpenAIStub(chat_reply=answer) as stub:
        stub.missing_models = {gone}
        deps._llm = OpenAILLM(model=f"stub-{org}", base_url=stub.base_url, api_key="k")
        with live_setting(pool, memory_extract_verify_models=f"{gone},{judge}"):
            out = m.extract_ok(said, extra_tags=["source:claude-code"])

    assert chat_models(stub) == [f"stub-{org}", gone, judge]
    assert keys(out) == ["project/config"]
    assert not [e for e in out["pipeline_errors"] if "verify_durable" in e], out
