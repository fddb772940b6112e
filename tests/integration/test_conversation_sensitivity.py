"""A turn that reads as high is kept verbatim but never embedded, searched or excerpted."""

from __future__ import annotations

import pytest

from tests.integration.test_conversation_support import Tenant, embedding_rows

PASSWORD_TURN = "for the staging database use password=hunter22 and keep it quiet"
AWS_TURN = "the deploy bot key is AKIAQWERTYUIOPASDFGH for the staging bucket"


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


@pytest.mark.parametrize("secret_turn", [PASSWORD_TURN, AWS_TURN], ids=["password", "aws_key"])
def test_a_high_turn_is_stored_verbatim_but_never_embedded(t, pool, org, embedder, secret_turn):
    """GIVEN a user turn holding a high shape (a password= assignment, or an AWS access key)
    WHEN it is appended
    THEN it is stored and conversation.get returns it verbatim, but its text never reached the
    embedder and it has no embedding row.
    """
    out = t.append("th-1", secret_turn)

    assert (out["stored"], out["reason"]) == (True, "")
    got = t.ok("conversation.get", agent="", thread_id="th-1", include_messages=True)
    assert [m["content"] for m in got["messages"]] == [secret_turn]
    listed = t.ok("conversation.list", agent="a1", thread_id="th-1")["rows"]
    assert [m["content"] for m in listed] == [secret_turn]
    assert embedder.seen == []
    assert embedding_rows(pool, org) == []


@pytest.mark.parametrize("secret_turn", [PASSWORD_TURN, AWS_TURN], ids=["password", "aws_key"])
def test_search_never_returns_a_high_turn(t, embedder, secret_turn):
    """GIVEN a high turn and a plain turn that share most of their words
    WHEN conversation.search runs by vector, and then on the substring fallback
    THEN the plain turn is found both ways and the high turn never is.
    """
    plain = t.append("th-1", "the staging database and the staging bucket need the deploy bot")
    high = t.append("th-1", secret_turn)

    by_vector = t.hit_ids("staging database deploy bot key password bucket")
    assert plain["msg_id"] in by_vector
    assert high["msg_id"] not in by_vector

    embedder.failing = True
    for needle in ("staging", "STAGING", secret_turn[:20]):
        hits = t.search(needle)["hits"]
        assert high["msg_id"] not in [h["msg_id"] for h in hits], needle
    assert plain["msg_id"] in t.hit_ids("staging")


def test_threads_shows_a_high_last_turn_with_an_empty_excerpt(t):
    """GIVEN two threads, one whose last turn reads as high
    WHEN conversation.threads lists them
    THEN that thread shows the high turn as its last turn (count includes it) with an empty
    last_excerpt, while the plain thread shows its excerpt.
    """
    t.append("th-secret", "let me paste the login for you")
    t.append("th-secret", PASSWORD_TURN, role="assistant")
    t.append("th-plain", "what time does the ferry leave")

    rows = {r["thread_id"]: r for r in t.ok("conversation.threads", as_="viewer")["threads"]}
    assert rows["th-secret"]["msg_count"] == 2
    assert rows["th-secret"]["last_excerpt"] == ""
    assert rows["th-plain"]["last_excerpt"] == "what time does the ferry leave"


def test_a_high_title_reads_as_empty_in_threads(t):
    """GIVEN a thread created with a title that holds a password assignment
    WHEN conversation.threads lists it
    THEN its title shows empty.
    """
    t.ok("conversation.create", agent="a1", thread_id="th-1", title="wifi password=hunter22")
    t.append("th-1", "hello")
    (row,) = t.ok("conversation.threads")["threads"]
    assert row["title"] == ""


def _filler(n: int) -> str:
    text = "calm " * (n // 5 + 1)
    return text[:n]


@pytest.mark.parametrize(
    ("secret_at", "excerpt_hidden"),
    [(240 + 1000, True), (240 + 1100, False)],
    ids=["inside-lookahead", "past-lookahead"],
)
def test_threads_checks_the_excerpt_and_1024_characters_past_it(t, secret_at, excerpt_hidden):
    """GIVEN a long last turn of plain words with "password=hunter22" starting at character
    240+1000 (inside the 1,024 characters threads checks past its 240-character excerpt), or at
    240+1100 (past them)
    WHEN conversation.threads lists the thread
    THEN the first empties last_excerpt; the second shows the turn's first 240 characters.
    """
    content = _filler(secret_at) + "password=hunter22 and then some more calm words"
    assert content.index("password=") == secret_at

    t.append("th-long", content)

    (row,) = t.ok("conversation.threads")["threads"]
    if excerpt_hidden:
        assert row["last_excerpt"] == ""
    else:
        assert row["last_excerpt"] == content[:240]
