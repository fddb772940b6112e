"""The openai providers through the real `openai` client, against a local stub server."""

from __future__ import annotations

import numpy as np
import pytest

from chalicelib.providers.embedder import OPENAI_MAX_BATCH, EmbedderError, OpenAIEmbedder
from chalicelib.providers.llm import LLMError, OpenAILLM
from tests.openai_stub import OpenAIStub


def test_openai_llm_returns_json_and_token_counts():
    with OpenAIStub(chat_reply=lambda req: '{"title": "Billing move"}') as stub:
        llm = OpenAILLM(model="stub-model", base_url=stub.base_url, api_key="k")
        result = llm.complete("system", "user text", json_output=True)
    assert result.data == {"title": "Billing move"}
    assert (result.tokens_in, result.tokens_out) == (11, 7)
    path, sent = stub.requests[0]
    assert path == "/v1/chat/completions"
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["messages"][1]["content"] == "user text"


def test_openai_llm_non_json_answer_is_an_llm_error():
    with OpenAIStub(chat_reply=lambda req: "not json") as stub:
        llm = OpenAILLM(model="m", base_url=stub.base_url, api_key="k")
        with pytest.raises(LLMError):
            llm.complete("s", "u", json_output=True)


def test_openai_embedder_batches_at_2048_inputs():
    with OpenAIStub(dim=8) as stub:
        emb = OpenAIEmbedder(model="e", dim=8, base_url=stub.base_url, api_key="k")
        texts = [f"turn {i}" for i in range(OPENAI_MAX_BATCH + 5)]
        vectors = emb.embed_documents(texts)
    sizes = [len(body["input"]) for _, body in stub.requests]
    assert sizes == [OPENAI_MAX_BATCH, 5]
    assert len(vectors) == len(texts)
    expected = np.asarray(stub.vector("turn 3"))
    assert np.allclose(vectors[3], expected / np.linalg.norm(expected), atol=1e-6)


def test_openai_embedder_failure_and_wrong_dimension_raise_embedder_error():
    with OpenAIStub(dim=8) as stub:
        wrong = OpenAIEmbedder(model="e", dim=16, base_url=stub.base_url, api_key="k")
        with pytest.raises(EmbedderError, match="LOOM_EMBED_DIM"):
            wrong.embed_documents(["x"])
        stub.fail_next = 5
        right = OpenAIEmbedder(model="e", dim=8, base_url=stub.base_url, api_key="k")
        with pytest.raises(EmbedderError):
            right.embed_documents(["x"])
