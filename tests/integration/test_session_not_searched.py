"""Session briefs are never embedded and never returned by a search."""

from __future__ import annotations

import pytest

from tests.integration.test_session_support import NS, Briefs, ev

GOAL = "zebra quantum marmalade harbour"


@pytest.fixture
def b(api, deps, org):
    b = Briefs.open(api, deps, org)
    b.set_logging(True)
    return b


def conversation_texts(pool, org) -> list[str]:
    with pool.connection() as conn:
        embedded = conn.execute(
            "SELECT text FROM loom.conversation_embeddings WHERE org = %s", (org,)
        ).fetchall()
        turns = conn.execute(
            "SELECT content FROM loom.conversations WHERE org = %s", (org,)
        ).fetchall()
    return [r[0] for r in embedded + turns]


def test_a_saved_brief_is_never_embedded_nor_found_by_conversation_search(b, pool):
    """GIVEN a recording namespace holding one recorded turn, and briefs whose goal, events and
    client summary all say GOAL (saved from sections, from events, at precompact)
    WHEN conversation.search looks for GOAL
    THEN no conversation or embedding row carries GOAL, and no hit is from a brief; the
    recorded turn is still found for its own text.
    """
    status, data = b.api.post(
        "conversation.append",
        token=b.tokens["writer"],
        namespace=NS,
        agent="a1",
        thread_id="th-1",
        role="user",
        content="the weekly billing sync moved to thursday",
    )
    assert status == 200 and data["stored"] is True, data
    b.save(brief_key="from-sections", sections={"goal": GOAL, "decisions": [GOAL]})
    b.save(
        brief_key="from-events",
        trigger="precompact",
        events=[ev("user", GOAL), ev("assistant", GOAL), ev("summary", GOAL)],
    )
    assert GOAL in b.get(brief_key="from-events", full=True)["rendered"]

    texts = conversation_texts(pool, b.org)
    assert texts and not any(GOAL in t for t in texts)
    status, found = b.api.post(
        "conversation.search", token=b.tokens["viewer"], namespace=NS, agent="*", query=GOAL
    )
    assert status == 200, found
    assert not any(GOAL in h["excerpt"] for h in found["hits"])
    assert all(h["thread_id"] == "th-1" for h in found["hits"])
    own = b.api.post(
        "conversation.search",
        token=b.tokens["viewer"],
        namespace=NS,
        agent="*",
        query="the weekly billing sync moved to thursday",
    )[1]
    assert [h["thread_id"] for h in own["hits"]] == ["th-1"]
