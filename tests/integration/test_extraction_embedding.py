"""What an extraction wrote while the embedder failed: the embedding_worker embeds it later, and
no worker ever embeds a chunk that reads as high."""

from __future__ import annotations

import pytest

from chalicelib.providers.llm import FakeLLM
from chalicelib.workers.schedule import scheduled_workers
from tests.integration.test_memory_support import (
    HIGH_KEY_TURN,
    NS,
    OPENAI_KEY,
    Mem,
    fact,
    reply,
    scripted,
    turns,
)

GARDEN = "I water the tomatoes every evening before dinner. " * 40  # its own chunk


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def _dims(pool, org):
    """{kind: [dim, ...]} of the org's rows (0: waiting for a vector, -1: withheld)."""
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT kind, key, dim FROM loom.memories WHERE org = %s AND namespace = %s"
            " ORDER BY kind, key",
            (org, NS),
        ).fetchall()
    out: dict[str, list[int]] = {}
    for kind, _, dim in rows:
        out.setdefault(kind, []).append(dim)
    return out


def test_an_extraction_written_while_the_embedder_failed_is_embedded_by_the_worker(
    m, deps, pool, embedder
):
    """GIVEN an extraction that writes a fact, a digest and two verbatim chunks, one of which
    pastes an API key, while the embedder fails
    WHEN the embedder is back and every scheduled worker runs, twice
    THEN the fact, the digest and the plain chunk get a vector (the embedding_worker embeds
    rows left without one, as the spec's workers table says); the chunk that reads as high
    stays withheld and its text never reaches the embedder; the fact is found by a
    semantic-only search.
    """
    scripted(
        deps,
        reply(
            fact(
                "user", "garden habit", "The user waters the tomatoes every evening.", indices=[1]
            ),
            digest="The user talked about their garden.",
        ),
    )
    embedder.failing = True
    out = m.extract_ok(turns(("user", HIGH_KEY_TURN), ("user", GARDEN)))
    assert out["written"][0]["conflict_verdict"] == "created"
    assert _dims(pool, m.org) == {"chunk": sorted([0, -1]), "digest": [0], "fact": [0]}

    embedder.failing = False
    deps._llm = FakeLLM()  # the workers that call a model (titler, queue) call none here
    for _ in range(2):
        for worker in scheduled_workers():
            worker.run(deps)

    dims = _dims(pool, m.org)
    assert dims == {
        "chunk": sorted([embedder.dim, -1]),
        "digest": [embedder.dim],
        "fact": [embedder.dim],
    }
    assert not [t for t in embedder.seen if OPENAI_KEY in t]
    hits = m.search("who waters the tomatoes every evening", as_="viewer", search_mode="semantic")
    assert "user/garden_habit" in [h["key"] for h in hits]
