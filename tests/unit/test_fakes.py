"""The fakes behave as the tests that lean on them assume."""

from __future__ import annotations

import numpy as np
import pytest

from chalicelib.providers.embedder import EmbedderError, FakeEmbedder
from chalicelib.providers.llm import FakeLLM


def test_fake_embedder_ranks_shared_words_above_unrelated_text():
    emb = FakeEmbedder()
    q = emb.embed_query("invoice ledger migration")
    near, far = emb.embed_documents(["we moved the invoice ledger", "my cat likes tuna"])
    assert float(np.dot(q, near)) > 0.3 > float(np.dot(q, far))


def test_fake_embedder_can_be_told_to_fail():
    emb = FakeEmbedder(failing=True)
    with pytest.raises(EmbedderError):
        emb.embed_documents(["x"])
    assert emb.seen == []


def test_stock_fake_llm_answers_nothing():
    result = FakeLLM().complete("s", "u", json_output=True)
    assert result.data == {} and result.text == "" and FakeLLM.answers is False
