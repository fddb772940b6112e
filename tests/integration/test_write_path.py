"""The write path at the embedder's limit: one model call a turn, calls shared by concurrent
appends, and a turn searchable in every mode once its append has answered."""

from __future__ import annotations

import threading
import time

import numpy as np

from chalicelib.auth import local_caller
from chalicelib.deps import Deps
from chalicelib.providers.embed_batcher import BatchingEmbedder
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.registry import call
from tests.conftest import make_settings

NS = "ns-write"


class SlowFake(FakeEmbedder):
    """The fake embedder taking 40 ms a call, as a model would."""

    def embed_documents(self, texts):
        time.sleep(0.04)
        return super().embed_documents(texts)


def _open(deps: Deps, org: str):
    caller = local_caller(org)
    call("conversation.set_logging", {"namespace": NS, "enabled": True}, caller, deps)
    return caller


def _append(deps, caller, thread: str, msg_id: str, text: str) -> dict:
    body = {"namespace": NS, "agent": "a", "thread_id": thread, "msg_id": msg_id,
            "role": "user", "content": text}  # fmt: skip
    return call("conversation.append", body, caller, deps).body


def _vectors(pool, org: str) -> dict[str, np.ndarray]:
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT msg_id, embedding FROM loom.conversation_embeddings WHERE org = %s",
            (org,),
        ).fetchall()
    return {m: np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v) for m, v in rows}


def test_concurrent_appends_share_model_calls_and_each_keeps_its_own_vector(pool, org):
    """GIVEN a server's embedder (one model slot, 40 ms a call) behind the batcher
    WHEN eight clients append four turns each, all at once
    THEN the 32 turns are stored with fewer model calls than turns, each call carrying more
    than one turn at times, and each turn's vector is its own text's."""
    slow = SlowFake(64)
    batched = BatchingEmbedder(lambda: slow, slots=1, max_batch=32)
    deps = Deps(make_settings(), pool=pool, embedder=batched)
    caller = _open(deps, org)
    texts = {f"c{c}-{i}": f"client {c} says thing {i} about topic {c * 10 + i}"
             for c in range(8) for i in range(4)}  # fmt: skip
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def client(c: int) -> None:
        start.wait()
        try:
            for i in range(4):
                msg = f"c{c}-{i}"
                assert _append(deps, caller, f"th-{c}", msg, texts[msg])["stored"] is True
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert errors == []
    assert sorted(slow.seen) == sorted(texts.values())  # each turn embedded once
    assert batched.calls == len(slow.batches) < len(texts) and max(slow.batches) > 1
    plain = FakeEmbedder(64)
    stored = _vectors(pool, org)
    for msg, text in texts.items():
        assert np.allclose(stored[msg], plain.embed_documents([text])[0], atol=1e-6)


def _words_apart(embedder, org: str, n: int) -> list[str]:
    """n words of this org whose fake vectors share no bucket, so that each word's own turn is
    its nearest (two words hashed to one bucket would tie, or cancel in a context vector)."""
    words: list[str] = []
    taken = np.zeros(embedder.dim, dtype=bool)
    for j in range(10 * n):
        w = f"zq{j}word{org[-6:]}"
        bucket = embedder.embed_query(w) != 0
        if not (taken & bucket).any():
            words.append(w)
            taken |= bucket
        if len(words) == n:
            return words
    raise AssertionError("no words apart")


def test_a_turn_is_found_in_every_mode_as_soon_as_its_append_answers(deps, pool, org):
    """GIVEN a thread of turns appended one after another
    WHEN each append has answered, another connection searches for the word it alone holds
    THEN lexical, hybrid and semantic search all find it at once: its vector, window and
    context vector are committed before the append answers (the lag is zero)."""
    caller = _open(deps, org)
    for i, w in enumerate(_words_apart(FakeEmbedder(deps.embedder.dim), org, 6)):
        _append(deps, caller, "th-lag", f"m{i}", f"{w} {w} {w}")
        for mode in ("lexical", "hybrid", "semantic"):
            body = {"namespace": NS, "agent": "*", "query": w, "search_mode": mode,
                    "namespace_scope": "this", "top_k": 3}  # fmt: skip
            hits = call("conversation.search", body, caller, deps).body["hits"]
            assert hits and hits[0]["msg_id"] == f"m{i}", (mode, hits)
