"""A value within an op's bounds that the database still cannot hold (an index entry or a
tsvector past its size) answers 422 naming the limit, never 500, and stores nothing."""

from __future__ import annotations

import random

import pytest

from chalicelib.auth import mint_token
from tests.integration.test_conversation_support import snapshot


def _wide(n: int, seed: int) -> str:
    """n characters of four bytes each (in UTF-8), random so nothing compresses them."""
    rnd = random.Random(seed)
    return "".join(chr(0x20000 + rnd.randrange(40000)) for _ in range(n))


def _memory_rows(pool, org):
    with pool.connection() as conn:
        return conn.execute("SELECT count(*) FROM loom.memories WHERE org = %s", (org,)).fetchone()


def test_ids_whose_bytes_overflow_an_index_entry_answer_422(api, deps, org, pool):
    """GIVEN a namespace, user id and key of 200, 200 and 300 characters (within their bounds)
    of four bytes each: the primary-key entry they make is over PostgreSQL's 2,704 bytes
    WHEN memory.set writes under them
    THEN it answers 422 validation_error naming the limit, and no memory is stored."""
    token = mint_token(deps, org=org, role="org_admin")
    status, body = api.post(
        "memory.set",
        token=token,
        namespace=_wide(200, 1),
        agent="a1",
        user_id=_wide(200, 2),
        key=_wide(300, 3),
        value="a value",
    )
    assert status == 422, body
    assert body["error"]["code"] == "validation_error"
    assert "database cannot hold" in body["error"]["message"]
    assert _memory_rows(pool, org) == (0,)


def test_a_saved_message_whose_words_overflow_a_tsvector_answers_422(api, deps, org, pool):
    """GIVEN a message of 500,000 characters made of distinct nine-character words of
    three-byte characters (its tsvector would pass PostgreSQL's 1 MB)
    WHEN it is saved
    THEN it answers 422 validation_error, and nothing of it is stored."""
    token = mint_token(deps, org=org, role="org_admin")
    rnd = random.Random(7)
    words = ["".join(chr(0x4E00 + rnd.randrange(20000)) for _ in range(9)) for _ in range(50_000)]
    before = snapshot(pool, org)
    status, body = api.post(
        "conversation.save_message",
        token=token,
        namespace="ns-limits",
        agent="a1",
        conversation_id="c1",
        message_id="m1",
        role="user",
        content=" ".join(words),
        user_id="u1",
    )
    assert status == 422, body
    assert body["error"]["code"] == "validation_error"
    assert snapshot(pool, org) == before


@pytest.mark.parametrize("op", ["conversation.append", "conversation.save_message"])
def test_turn_ids_too_wide_for_the_embedding_indexes_answer_422_and_store_nothing(
    api, deps, org, pool, op
):
    """GIVEN a recording namespace and a thread of 256 characters, a message id of 150, all
    of four bytes each: the transcript's own key fits, the embedding row's (with the model's
    name) would not
    WHEN the message is appended or saved, then sent again
    THEN each answers 422 naming the ids' size, and nothing is stored (before, the turn was
    kept, never indexed, and the second append answered duplicate)."""
    token = mint_token(deps, org=org, role="org_admin")
    namespace = _wide(256, 4)
    api.post("conversation.set_logging", token=token, namespace=namespace, enabled=True)
    ids = {"namespace": namespace, "agent": "a", "role": "user", "content": "the ferry is late"}
    if op == "conversation.append":
        body = {**ids, "thread_id": _wide(256, 5), "msg_id": _wide(150, 6)}
    else:
        body = {**ids, "conversation_id": _wide(256, 5), "message_id": _wide(150, 6),
                "user_id": "u1"}  # fmt: skip
    before = snapshot(pool, org)
    for _ in range(2):
        status, out = api.post(op, token=token, **body)
        assert status == 422 and "bytes" in out["error"]["message"], out
    assert snapshot(pool, org) == before
