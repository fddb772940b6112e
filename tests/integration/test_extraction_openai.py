"""End to end through the real `openai` client: a LoCoMo session extracted by the OpenAI
provider against a local OpenAI-compatible stub, and the written fact's evidence served."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chalicelib.providers.llm import OpenAILLM
from tests.integration.test_memory_support import Mem, keys
from tests.openai_stub import OpenAIStub

LOCOMO = Path(__file__).parents[1] / "fixtures" / "locomo26_sessions1-5.json"
SPAN = "I went to a LGBTQ support group yesterday"


def _extractor(request: dict[str, Any]) -> str:
    """The stub model: cites the turn that mentions the support group, when its segment has it."""
    user = request["messages"][1]["content"]
    found = re.search(r"^\[(\d+)\] [^\n]*LGBTQ support group yesterday", user, re.MULTILINE)
    if found is None:
        return json.dumps({"facts": [], "forget": [], "digest": ""})
    fact = {
        "subject": "Caroline",
        "attribute": "support group",
        "value": "Caroline went to an LGBTQ support group on 7 May 2023.",
        "tags": ["category:community"],
        "source_message_indices": [int(found.group(1))],
        "span": SPAN,
        "about": "user",
    }
    return json.dumps({"facts": [fact], "forget": [], "digest": "Caroline and Melanie caught up."})


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def test_a_locomo_session_is_extracted_through_the_openai_client(m, deps, org):
    """GIVEN the OpenAI provider pointed at a local OpenAI-compatible stub whose chat reply is
    an extraction JSON
    WHEN a LoCoMo conversation is sent to memory.set_from_messages
    THEN the stub got JSON-mode chat requests with the extraction system prompt and the
    transcript, the fact is written at its minted key with the stub's token counts, and
    memory.evidence serves its source turn with the supporting span.
    """
    messages = json.loads(LOCOMO.read_text())
    with OpenAIStub(chat_reply=_extractor) as stub:
        deps._llm = OpenAILLM(model=f"stub-{org}", base_url=stub.base_url, api_key="k")
        out = m.extract_ok(messages, session_id="locomo-1", observation_date="2023-05-08")

    chats = [body for path, body in stub.requests if path.endswith("/chat/completions")]
    assert len(chats) == out["segments"] >= 1
    assert all(body["response_format"] == {"type": "json_object"} for body in chats)
    assert "durable facts" in chats[0]["messages"][0]["content"]
    assert "Observation date: 2023-05-08" in chats[0]["messages"][1]["content"]
    assert keys(out) == ["caroline/support_group"]
    assert out["written"][0]["conflict_verdict"] == "created"
    assert (out["tokens_in"], out["tokens_out"]) == (11 * len(chats), 7 * len(chats))

    ev = m.ok("memory.evidence", as_="viewer", key="caroline/support_group")["turns"]
    assert len(ev) == 1
    assert SPAN in ev[0]["content"] and ev[0]["span"] == SPAN
    assert ev[0]["session_id"] == "locomo-1"
    got = m.get("caroline/support_group")["memory"]
    assert got["value"] == "Caroline went to an LGBTQ support group on 7 May 2023."
    assert "category:community" in got["tags"]
