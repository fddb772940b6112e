"""The embedding_worker and entity_extractor against rows rewritten while they work, and a row
the embedder always refuses.

Both workers are global over orgs: each test asserts only on its own org's rows, and retires
any row it leaves for the workers so no later test meets it.
"""

from __future__ import annotations

import numpy as np
import pytest

from chalicelib.auth import local_caller
from chalicelib.providers.embedder import EmbedderError, FakeEmbedder
from chalicelib.registry import call
from chalicelib.workers import memory_maintenance as worker

BODY = {"namespace": "m", "agent": "a1", "user_id": "u1"}
LISBON = "The user lives in Lisbon by the river"
PORTO = "The user moved to Porto in the north"


def _set(deps, org, key, value):
    call("memory.set", {**BODY, "key": key, "value": value}, local_caller(org), deps)


def _row(pool, org, key):
    with pool.connection() as conn:
        return conn.execute(
            "SELECT value, dim, embedding, entities FROM loom.memories WHERE org = %s AND key = %s",
            (org, key),
        ).fetchone()


def _forget_refusals():
    """Forget the rows this process's embedding_worker set aside."""
    worker._refused.clear()


def _retire(pool, org):
    with pool.connection() as conn:
        conn.execute("UPDATE loom.memories SET retired_at = now() WHERE org = %s", (org,))


class Rewriting(FakeEmbedder):
    """Down for writes (every row is left with dim 0); for the worker, embedding the Lisbon
    text, it first lets the user rewrite the row to Porto (whose own embed fails: dim 0)."""

    def __init__(self, rewrite):
        super().__init__()
        self.rewrite, self.mode = rewrite, "down"

    def embed_documents(self, texts):
        if self.mode == "down":
            raise EmbedderError("embedder outage")
        if self.mode == "worker" and any("Lisbon" in t for t in texts):
            self.mode = "down"
            self.rewrite()
            self.mode = "up"
        return super().embed_documents(texts)


def test_a_row_rewritten_while_it_is_embedded_gets_the_vector_of_its_new_value(deps, org, pool):
    """GIVEN a memory written during an embedder outage (no vector)
    WHEN the embedding_worker embeds it, and meanwhile the user rewrites it (its own embed
    fails again)
    THEN the old value's vector is not stored on the row; a pass later the row holds the vector
    of its new value.
    """
    deps._embedder = emb = Rewriting(lambda: _set(deps, org, "home", PORTO))
    _set(deps, org, "home", LISBON)
    assert _row(pool, org, "home")[:2] == (LISBON, 0)
    emb.mode = "worker"
    worker.embed_missing(deps)
    value, dim, _, _ = _row(pool, org, "home")
    assert value == PORTO
    assert dim == 0  # Lisbon's vector was not written onto Porto's row
    worker.embed_missing(deps)
    value, dim, vec, _ = _row(pool, org, "home")
    stored = np.asarray(vec.to_list() if hasattr(vec, "to_list") else vec, dtype=np.float32)
    assert dim == emb.dim
    assert float(stored @ FakeEmbedder()._vector(PORTO)) == pytest.approx(1.0, abs=1e-5)


class Picky(FakeEmbedder):
    """Refuses any request holding one input (as a provider that rejects one input fails the
    whole request), and every request while down; notes each request it is sent."""

    def __init__(self):
        super().__init__()
        self.down = True
        self.asked: list[list[str]] = []

    def embed_documents(self, texts):
        self.asked.append(list(texts))
        if self.down:
            raise EmbedderError("embedder outage")
        if any("REFUSED-INPUT" in t for t in texts):
            raise EmbedderError("embedding request failed: 400 invalid input")
        return super().embed_documents(texts)


def test_a_row_the_embedder_always_refuses_does_not_stop_the_others(deps, org, pool):
    """GIVEN a row of one org the embedder always refuses, written first, and three rows of
    another org, all left without a vector by an outage
    WHEN the embedding_worker runs twice with the embedder back
    THEN the first pass embeds the three rows, the refused row stays without a vector, and the
    second pass does not send it again.
    """
    other = f"{org}-b"
    deps._embedder = emb = Picky()
    _forget_refusals()
    try:
        _set(deps, org, "odd", "REFUSED-INPUT")
        for i in range(3):
            _set(deps, other, f"k{i}", f"fact number {i}")
        emb.down = False
        worker.embed_missing(deps)
        assert [_row(pool, other, f"k{i}")[1] for i in range(3)] == [emb.dim] * 3
        assert _row(pool, org, "odd")[1] == 0
        emb.asked.clear()
        worker.embed_missing(deps)
        assert not any("REFUSED-INPUT" in t for texts in emb.asked for t in texts)
    finally:
        _retire(pool, org)
        _retire(pool, other)
        _forget_refusals()


def test_an_embedder_that_is_down_stops_the_pass_without_setting_rows_aside(deps, org, pool):
    """GIVEN rows left without a vector and an embedder that refuses everything (down)
    WHEN the embedding_worker runs, then again with the embedder back
    THEN the first pass embeds nothing and asks the embedder twice (the batch, then a check),
    and the second embeds every row.
    """
    deps._embedder = emb = Picky()
    _forget_refusals()
    for i in range(3):
        _set(deps, org, f"k{i}", f"fact number {i}")
    emb.asked.clear()  # the writes' own tries, while it was down
    assert worker.embed_missing(deps)["embedded"] == 0
    asked = emb.asked
    assert len(asked) == 2 and asked[1] == [worker.CANARY]
    assert worker._refused == {}
    emb.down = False
    worker.embed_missing(deps)
    assert [_row(pool, org, f"k{i}")[1] for i in range(3)] == [emb.dim] * 3


def test_a_row_rewritten_while_its_entities_are_read_gets_the_new_values_names(deps, org, pool):
    """GIVEN a memory naming Alice Johnson, without entities yet
    WHEN the entity_extractor reads it, and the user rewrites it to name Bob Stone before the
    entities are written
    THEN Alice's names are not written onto Bob's row; the next pass writes Bob's.
    """
    _set(deps, org, "boss", "My manager is Alice Johnson")
    rewrites = []

    def rewrite(rows):
        if not rewrites and any(r["org"] == org for r in rows):
            rewrites.append(1)
            _set(deps, org, "boss", "My manager is Bob Stone")

    deps.hooks.on("entities.read", rewrite)
    worker.extract_entities(deps)
    assert rewrites and _row(pool, org, "boss")[3] is None
    worker.extract_entities(deps)
    assert _row(pool, org, "boss")[3] == ["Bob Stone"]


def test_a_row_rewritten_after_its_entities_were_read_is_read_again(deps, org, pool):
    """GIVEN a memory naming Alice Johnson whose entities the extractor has written
    WHEN the user rewrites it to name Bob Stone
    THEN the row's entities are cleared with the old value, and the next pass writes Bob's."""
    _set(deps, org, "boss", "My manager is Alice Johnson")
    worker.extract_entities(deps)
    assert _row(pool, org, "boss")[3] == ["Alice Johnson"]

    _set(deps, org, "boss", "My manager is Bob Stone")
    assert _row(pool, org, "boss")[3] is None
    worker.extract_entities(deps)
    assert _row(pool, org, "boss")[3] == ["Bob Stone"]
    _retire(pool, org)


def test_a_full_batch_of_rows_that_read_as_high_does_not_stop_the_rows_behind_it(deps, org, pool):
    """GIVEN a batch's worth (200) of the oldest rows without a vector whose text reads as high
    under today's guard (written before it did), and one plain row behind them
    WHEN the embedding_worker runs
    THEN the plain row is embedded, and none of the high rows is."""
    high = "my password=Hunter2Secret!x"
    try:
        with pool.connection() as conn:
            conn.execute(
                "INSERT INTO loom.memories (org, namespace, user_id, key, value, content_hash,"
                " updated_at) SELECT %s, 'm', '-', 'old/' || g, %s || g, md5(g::text),"
                " now() - interval '1 day' - g * interval '1 second'"
                " FROM generate_series(1, %s) g",
                (org, high, worker.BATCH),
            )
            conn.execute(
                "INSERT INTO loom.memories (org, namespace, user_id, key, value, content_hash)"
                " VALUES (%s, 'm', '-', 'plain', 'The user likes tea', 'x')",
                (org,),
            )
        worker.embed_missing(deps)
        assert _row(pool, org, "plain")[1] == deps.embedder.dim
        with pool.connection() as conn:
            (embedded_high,) = conn.execute(
                "SELECT count(*) FROM loom.memories WHERE org = %s AND key LIKE 'old/%%'"
                " AND dim <> 0",
                (org,),
            ).fetchone()
        assert embedded_high == 0
    finally:
        _retire(pool, org)
