"""A LoCoMo session extracted end to end: the real openai client, a stub model, evidence."""

from __future__ import annotations

import json
import re
from pathlib import Path

from chalicelib.auth import mint_token
from chalicelib.providers.llm import OpenAILLM
from tests.conftest import Api
from tests.openai_stub import OpenAIStub

LOCOMO = Path(__file__).parents[1] / "fixtures" / "locomo26_sessions1-5.json"
_LINE = re.compile(r"^\[(\d+)\] (user|assistant)[^:]*: (\w+): (.*)$")
_MY = re.compile(r"\bmy ([a-z]{3,})\b", re.IGNORECASE)


def stub_extractor(request: dict) -> str:
    """A stand-in model: one fact per turn that says "my <thing>", citing that turn."""
    prompt = request["messages"][1]["content"]
    conversation = prompt.split("Conversation:\n", 1)[-1]
    facts = []
    for line in conversation.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        index, _, speaker, text = match.groups()
        thing = _MY.search(text)
        if thing:
            facts.append(
                {
                    "subject": speaker,
                    "attribute": thing.group(1),
                    "value": f"{speaker} talked about their {thing.group(1)}: {text[:200]}",
                    "tags": ["source:locomo"],
                    "source_message_indices": [int(index)],
                    "span": text[max(0, thing.start() - 40) : thing.end() + 60],
                }
            )
    return json.dumps({"facts": facts, "forget": [], "digest": "A LoCoMo session."})


def test_a_locomo_session_is_extracted_with_evidence_for_every_memory(api, deps, org):
    """GIVEN the first session of LoCoMo conversation 26 and a model behind the real openai
    client WHEN it is posted to memory.set_from_messages THEN facts are written, and each
    written memory's evidence is the turn it cites, with the supporting span."""
    turns = json.loads(LOCOMO.read_text())[:18]
    writer = Api(api.client, mint_token(deps, org=org, role="writer"))
    with OpenAIStub(chat_reply=stub_extractor) as stub:
        deps._llm = OpenAILLM(model="stub-extractor", base_url=stub.base_url, api_key="k")
        out = writer.ok(
            "memory.set_from_messages",
            namespace="locomo",
            agent="bench",
            user_id="caroline",
            messages=turns,
            observation_date="2023-05-08",
        )
    facts = [w for w in out["written"] if w["conflict_verdict"] == "created"]
    assert facts, out
    assert out["tokens_in"] > 0 and len(out["evidence_ids"]) == len(turns)
    for w in facts:
        ev = writer.ok("memory.evidence", namespace="locomo", agent="bench",
                       user_id="caroline", key=w["key"])["turns"]  # fmt: skip
        assert ev, w["key"]
        attribute = w["key"].split("/")[-1]
        assert all(attribute in t["content"].lower() for t in ev), (w["key"], ev)
        assert all(attribute in t["span"].lower() for t in ev)
