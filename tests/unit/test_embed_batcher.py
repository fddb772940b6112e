"""Concurrent embed calls share model calls; a lone call never waits."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from chalicelib.providers.embed_batcher import BatchingEmbedder
from chalicelib.providers.embedder import EmbedderError, FakeEmbedder


class SlowEmbedder(FakeEmbedder):
    """A fake that takes `seconds` a call and records how many calls ran at once."""

    def __init__(self, seconds: float, log: list, busy: list):
        super().__init__()
        self.seconds, self.log, self.busy = seconds, log, busy
        self.lock = threading.Lock()

    def embed_documents(self, texts):
        with self.lock:
            self.busy[0] += 1
            self.busy[1] = max(self.busy[1], self.busy[0])
        try:
            time.sleep(self.seconds)
            self.log.append(("documents", list(texts)))
            return super().embed_documents(texts)
        finally:
            with self.lock:
                self.busy[0] -= 1

    def embed_query(self, text):
        self.log.append(("query", [text]))
        return super().embed_documents([text])[0]


def batcher(seconds=0.0, *, slots=1, max_batch=32):
    log: list = []
    busy = [0, 0]  # running now, most at once
    shared = threading.Lock()

    def make():
        e = SlowEmbedder(seconds, log, busy)
        e.lock = shared
        return e

    return BatchingEmbedder(make, slots=slots, max_batch=max_batch), log, busy


def in_threads(n, fn):
    results: list = [None] * n
    start = threading.Barrier(n)

    def run(i):
        start.wait()
        results[i] = fn(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    return results


def test_a_lone_call_runs_at_once_in_one_model_call():
    """GIVEN a batcher whose model takes 50 ms a call
    WHEN one caller embeds two texts
    THEN one model call carries both, and the caller waits for nothing else."""
    emb, log, _ = batcher(0.05)
    start = time.perf_counter()
    out = emb.embed_documents(["a b", "c d"])
    assert time.perf_counter() - start < 0.045 + 0.05
    assert log == [("documents", ["a b", "c d"])] and emb.calls == 1
    assert np.allclose(out[1], FakeEmbedder().embed_documents(["c d"])[0])


def test_concurrent_callers_share_calls_and_each_gets_its_own_vectors():
    """GIVEN one model slot taking 50 ms a call
    WHEN eight callers embed a text each at once
    THEN fewer than eight model calls carry the eight texts (those arriving while a call runs
    go together in the next), and each caller gets its own text's vector."""
    emb, log, _ = batcher(0.05)
    texts = [f"turn number {i} about topic {i * 7}" for i in range(8)]
    out = in_threads(8, lambda i: emb.embed_documents([texts[i]])[0])
    assert len(log) < 8 and sorted(t for _, batch in log for t in batch) == sorted(texts)
    assert max(len(batch) for _, batch in log) > 1
    plain = FakeEmbedder()
    for i, vec in enumerate(out):
        assert np.allclose(vec, plain.embed_documents([texts[i]])[0])


def test_slots_run_side_by_side_and_a_call_holds_at_most_max_batch_texts():
    """GIVEN two slots and batches of at most 3 texts, the model taking 30 ms a call
    WHEN twelve callers embed a text each at once
    THEN two calls ran at the same time, none held more than 3 texts, and all twelve texts
    were embedded once."""
    emb, log, busy = batcher(0.03, slots=2, max_batch=3)
    in_threads(12, lambda i: emb.embed_documents([f"text {i}"]))
    assert busy[1] == 2
    assert all(len(batch) <= 3 for _, batch in log)
    assert sorted(t for _, batch in log for t in batch) == sorted(f"text {i}" for i in range(12))


def test_queries_and_documents_never_share_a_call():
    """GIVEN one slot
    WHEN callers embed documents and queries at once
    THEN each model call is of one kind (a query's prefix differs from a passage's)."""
    emb, log, _ = batcher(0.02)
    in_threads(
        8,
        lambda i: emb.embed_query(f"q {i}") if i % 2 else emb.embed_documents([f"d {i}"]),
    )
    kinds = {kind for kind, _ in log}
    assert kinds == {"query", "documents"}
    assert all(len(batch) == 1 for kind, batch in log if kind == "query")


class SlowQueryEmbedder(SlowEmbedder):
    def embed_query(self, text):
        time.sleep(0.05)
        return super().embed_query(text)


def test_the_same_query_asked_at_once_is_embedded_once():
    """GIVEN two slots, a query taking 50 ms to embed
    WHEN four callers embed the same query at once, and two others another query
    THEN each query is embedded once and every caller gets its query's vector; asked again
    once done, the query is embedded again (nothing is kept)."""
    log: list = []
    emb = BatchingEmbedder(lambda: SlowQueryEmbedder(0.0, log, [0, 0]), slots=2)
    out = in_threads(6, lambda i: emb.embed_query("oat milk" if i < 4 else "the cat"))
    assert sorted(t for _, batch in log for t in batch) == ["oat milk", "the cat"]
    plain = FakeEmbedder()
    for i, vec in enumerate(out):
        assert np.allclose(vec, plain.embed_query("oat milk" if i < 4 else "the cat"))
    emb.embed_query("oat milk")
    assert len(log) == 3


def test_a_failed_call_fails_its_callers_and_the_next_call_runs():
    """GIVEN a model that fails once
    WHEN a caller embeds, then another
    THEN the first gets EmbedderError (appends fail open on it) and the second its vector."""
    emb, log, _ = batcher()
    slot = emb._idle[0]
    slot.failing = True
    with pytest.raises(EmbedderError):
        emb.embed_documents(["x"])
    slot.failing = False
    assert len(emb.embed_documents(["y"])) == 1


def test_the_local_model_gets_a_slot_a_core_a_remote_endpoint_four_and_lambda_one():
    """GIVEN the embedders the settings name
    WHEN each is built
    THEN the local model runs one instance a core, a remote endpoint four requests at once,
    one inside Lambda, and LOOM_EMBED_SLOTS overrides each."""
    from chalicelib.config import Settings
    from chalicelib.providers.embed_batcher import build_embedder

    def slots(**kw) -> int:
        emb = build_embedder(Settings(**kw), cores=6)
        assert isinstance(emb, BatchingEmbedder)
        return len(emb._idle) + emb._unmade

    assert slots(embedder="local") == 6
    assert slots(embedder="openai", embed_base_url="http://127.0.0.1:9/v1") == 4
    assert slots(embedder="local", lambda_function_name="loom-api", auth="tokens") == 1
    assert slots(embedder="local", embed_slots=3) == 3


def test_a_remote_endpoint_gets_one_request_a_batch():
    """GIVEN the openai embedder (the real client) pointed at a local OpenAI-compatible server
    that takes 50 ms a request, with one slot
    WHEN eight callers embed a text each at once
    THEN fewer than eight requests reach the server, one of them carrying several inputs, and
    each caller gets its own text's vector."""
    from chalicelib.config import Settings
    from chalicelib.providers.embed_batcher import build_embedder
    from tests.openai_stub import OpenAIStub

    with OpenAIStub(dim=8) as stub:
        answer = stub.embeddings

        def slow(body):
            time.sleep(0.05)
            return answer(body)

        stub.embeddings = slow
        emb = build_embedder(
            Settings(embedder="openai", embed_base_url=stub.base_url, embed_api_key="k",
                     embed_dim=8, embed_slots=1)
        )  # fmt: skip
        texts = [f"text number {i}" for i in range(8)]
        out = in_threads(8, lambda i: emb.embed_documents([texts[i]])[0])
    inputs = [body["input"] for path, body in stub.requests if path.endswith("/embeddings")]
    assert len(inputs) < 8 and max(len(i) for i in inputs) > 1
    assert sorted(t for i in inputs for t in i) == sorted(texts)
    for text, vec in zip(texts, out, strict=True):
        expected = np.asarray(stub.vector(text), dtype=np.float32)
        assert np.allclose(vec, expected / np.linalg.norm(expected), atol=1e-6)
