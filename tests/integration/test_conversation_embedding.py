"""Which turns are embedded, how much of them, and what happens when embedding fails or races."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from chalicelib.auth import Caller
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.registry import call
from chalicelib.services import turn_writer
from chalicelib.store import worker_positions
from chalicelib.workers.memory_maintenance import embed_missing
from tests.integration.test_conversation_support import NS, Tenant, embedding_rows, turn_rows


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


def long_text(n: int) -> str:
    words = ("river", "lantern", "copper", "meadow", "orbit", "violet", "harbor", "quartz")
    out, i = [], 0
    while sum(len(w) + 1 for w in out) < n:
        out.append(f"{words[i % len(words)]}{i}")
        i += 1
    return " ".join(out)[:n]


def test_user_and_assistant_turns_embed_their_first_2048_characters(t, pool, org, embedder):
    """GIVEN a 5,000-character user turn and a 5,000-character assistant turn
    WHEN both are appended
    THEN each gets an embedding row whose text is its first 2,048 characters, and the embedder
    was sent each turn once, alone (its context vector is derived from the stored vectors).
    """
    user_text, assistant_text = long_text(5000), "reply " + long_text(4994)
    assert len(user_text) == len(assistant_text) == 5000

    u = t.append("th-1", user_text, role="user")
    a = t.append("th-1", assistant_text, role="assistant")

    rows = {r["msg_id"]: r for r in embedding_rows(pool, org)}
    assert set(rows) == {u["msg_id"], a["msg_id"]}
    assert rows[u["msg_id"]]["text"] == user_text[:2048]
    assert rows[a["msg_id"]]["text"] == assistant_text[:2048]
    assert all(not r["vector_missing"] and r["dim"] == embedder.dim for r in rows.values())
    assert embedder.seen == [user_text[:2048], assistant_text[:2048]]
    assert embedder.batches == [1, 1]
    # The transcript itself keeps the whole turn.
    stored = {r["msg_id"]: r["content"] for r in turn_rows(pool, org)}
    assert stored[u["msg_id"]] == user_text


def test_system_and_tool_turns_are_not_embedded(t, pool, org, embedder):
    """GIVEN a system turn and a tool turn
    WHEN they are appended
    THEN both are stored in the transcript, neither has an embedding row nor reached the embedder.
    """
    s = t.append("th-1", "You are a helpful travel assistant.", role="system")
    tool = t.append("th-1", '{"trains": ["9:40", "10:15"]}', role="tool")

    assert s["stored"] and tool["stored"]
    assert {r["role"] for r in turn_rows(pool, org)} == {"system", "tool"}
    assert embedding_rows(pool, org) == []
    assert embedder.seen == []


def test_a_failing_embedder_still_stores_the_turn_and_records_the_error(t, pool, org, embedder):
    """GIVEN an embedder that fails
    WHEN a user turn is appended
    THEN the turn is stored (stored=true), its embedding row has no vector and names the error,
    and once the embedder is back, vector search still does not return that turn.
    """
    embedder.failing = True
    out = t.append("th-1", "where did we leave the blue kayak paddles")
    assert (out["stored"], out["reason"]) == (True, "")

    (row,) = embedding_rows(pool, org)
    assert row["msg_id"] == out["msg_id"]
    assert row["vector_missing"] is True
    assert row["error"] and "fail" in row["error"]
    assert row["tombstoned_at"] is None

    embedder.failing = False
    control = t.append("th-1", "the blue kayak paddles are in the shed")
    hits = t.hit_ids("where did we leave the blue kayak paddles")
    assert control["msg_id"] in hits  # search works...
    assert out["msg_id"] not in hits  # ...but the un-embedded turn is not found by vector
    got = t.ok("conversation.get", agent="", thread_id="th-1", include_messages=True)
    assert out["msg_id"] in [m["msg_id"] for m in got["messages"]]


# ---- removed while the embedding runs ------------------------------------------------------


class RemovingEmbedder:
    """A FakeEmbedder whose embed_documents runs `remove` before answering, like a slow
    provider during which the turn is deleted."""

    def __init__(self, inner: FakeEmbedder, remove):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.default_floor = inner.default_floor
        self.remove = remove
        self.removals = 0

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        vectors = self.inner.embed_documents(texts)
        self.remove()
        self.removals += 1
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def _assert_no_live_embedding(pool, org, msg_id):
    live = [r for r in embedding_rows(pool, org) if r["tombstoned_at"] is None]
    assert [r for r in live if r["msg_id"] == msg_id] == []


def test_a_turn_deleted_while_embedding_gets_no_late_vector(t, deps, pool, org, embedder):
    """GIVEN an embedder during whose call an admin deletes the thread (conversation.delete)
    WHEN a user turn is appended to that thread
    THEN append answers stored=false, reason="deleted", and no live embedding row exists for it.
    """
    admin = Caller(org=org, role="admin")

    def delete_thread():
        body = {"namespace": NS, "agent": "", "thread_id": "th-1", "confirm_thread_id": "th-1"}
        call("conversation.delete", body, admin, deps)

    wrapper = RemovingEmbedder(embedder, delete_thread)
    deps._embedder = wrapper

    out = t.append("th-1", "remember the gate code for the storage unit is on the card")

    assert wrapper.removals == 1
    assert (out["stored"], out["reason"]) == (False, "deleted")
    _assert_no_live_embedding(pool, org, out["msg_id"])
    (turn,) = turn_rows(pool, org)
    assert turn["tombstoned_at"] is not None
    deps._embedder = embedder
    assert out["msg_id"] not in t.hit_ids("gate code storage unit card")


def test_a_turn_tombstoned_while_embedding_gets_no_late_vector(t, deps, pool, org, embedder):
    """GIVEN an embedder during whose call the turn's row is tombstoned (as a retention or
    erasure job would)
    WHEN a user turn is appended
    THEN append answers stored=false, reason="deleted", and no live embedding row exists for it.
    """

    def tombstone():
        with pool.connection() as conn:
            conn.execute(
                "UPDATE loom.conversations SET tombstoned_at = now() WHERE org = %s", (org,)
            )

    deps._embedder = RemovingEmbedder(embedder, tombstone)

    out = t.append("th-1", "the spare key is under the third flower pot")

    assert (out["stored"], out["reason"]) == (False, "deleted")
    _assert_no_live_embedding(pool, org, out["msg_id"])
    deps._embedder = embedder
    assert out["msg_id"] not in t.hit_ids("spare key under the third flower pot")


HIGH_TURN = "the vault password=hunter22 works"


def test_a_turn_whose_vector_write_never_ran_is_indexed_by_the_embedding_worker(t, deps, pool, org):
    """GIVEN turns recorded over a minute ago: three that read as high, then m1 whose append
    stored the turn but never wrote its vector (the database went away between the append's
    two transactions), so a retry answers duplicate
    WHEN the embedding worker runs, pass after pass, reading two turns a pass
    THEN it reads on from where the last pass stopped (the high turns, which never get a
    vector, do not hold it up) and indexes m1 as its append would have: search finds it, and
    the high turns still have no embedding row."""
    for i in range(3):
        t.append("th", f"{HIGH_TURN} {i}", msg_id=f"h{i}")
    t.append("th", "the zanzibar ledger migration is done", msg_id="m1")
    with pool.connection() as conn:  # what a lost vector write leaves, a minute on
        conn.execute(
            "DELETE FROM loom.conversation_embeddings WHERE org = %s AND msg_id = 'm1'", (org,)
        )
        conn.execute(
            "UPDATE loom.conversations SET ts = ts - interval '2 minutes' WHERE org = %s", (org,)
        )
        first = conn.execute(
            "SELECT min(ts) FROM loom.conversations WHERE org = %s", (org,)
        ).fetchone()[0]
        # The worker's place: just before these turns (other tests' turns come before them).
        worker_positions.advance(conn, turn_writer.REPAIR_WORKER, (first, ""))
    assert t.append("th", "the zanzibar ledger migration is done", msg_id="m1")["reason"] == (
        "duplicate"
    )

    for _ in range(10):
        embed_missing(deps, turn_batch=2, turn_pages=1)
        if any(r["msg_id"] == "m1" for r in embedding_rows(pool, org, "th")):
            break

    rows = {r["msg_id"]: r for r in embedding_rows(pool, org, "th")}
    assert set(rows) == {"m1"} and not rows["m1"]["vector_missing"]
    assert "m1" in t.hit_ids("zanzibar ledger migration")


def test_no_worker_retries_a_turn_whose_embed_failed(t, pool, org, embedder, deps):
    """GIVEN a user turn appended while the embedder failed (its row names the error)
    WHEN the embedder is back and every scheduled worker runs, twice
    THEN the row still has no vector and keeps its error, the embedder was never sent the
    turn again, and vector search does not return it: the spec's "nothing retries it".
    """
    from chalicelib.providers.llm import FakeLLM
    from chalicelib.workers.schedule import scheduled_workers

    embedder.failing = True
    out = t.append("th-1", "the lantern batteries are in the green drawer")
    embedder.failing = False
    embedder.seen.clear()
    deps._llm = FakeLLM()  # the workers that call a model (titler, queue) call none here

    for _ in range(2):
        for worker in scheduled_workers():
            worker.run(deps)

    (row,) = embedding_rows(pool, org)
    assert (row["msg_id"], row["vector_missing"]) == (out["msg_id"], True)
    assert row["error"] and "fail" in row["error"]
    assert not [text for text in embedder.seen if "lantern batteries" in text]
    assert out["msg_id"] not in t.hit_ids("lantern batteries green drawer")
