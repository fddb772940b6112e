"""Who may call the memory ops, and what bad input answers (422 or 400, never 500)."""

from __future__ import annotations

import pytest

from chalicelib.errors import BadRequestError
from tests.integration.legacy_tokens import legacy_token
from tests.integration.test_memory_support import NS, NS2, Mem, memory_rows

WRITES = (
    ("memory.set", {"key": "user/drink", "value": "tea"}),
    ("memory.bulk_set", {"entries": [{"key": "user/drink", "value": "tea"}]}),
    ("memory.delete", {"key": "user/drink"}),
)
EXTRACT = ("memory.set_from_messages", {"messages": [{"role": "user", "content": "hi"}]})
READS = (
    ("memory.get", {"key": "user/drink"}),
    ("memory.search", {"query": "tea"}),
    ("memory.evidence", {"key": "user/drink"}),
    ("memory.recall", {"query": "tea"}),
)


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def test_a_viewer_reads_but_cannot_write(m, pool):
    """GIVEN a stored row and a viewer token
    WHEN the viewer calls every write op and every read op
    THEN each write is refused (403) and changes nothing; each read answers 200.
    """
    m.set("user/drink", "The user drinks tea.")
    before = memory_rows(pool, m.org)

    for op, body in (*WRITES, EXTRACT):
        status, data = m.post(op, as_="viewer", **body)
        assert status == 403, (op, data)
    for op, body in READS:
        status, data = m.post(op, as_="viewer", **body)
        assert status == 200, (op, data)
    assert memory_rows(pool, m.org) == before


def test_the_blacklist_needs_an_admin(m):
    """GIVEN a writer token
    WHEN it adds a blacklist pattern
    THEN it is refused (403), and a value matching the pattern is still written.
    """
    status, _ = m.api.post(
        "memory.blacklist", token=m.tokens["writer"], namespace=NS, pattern="tea"
    )

    assert status == 403
    assert m.set("user/drink", "The user drinks tea.")["conflict_verdict"] == "created"


def test_own_session_tokens_are_refused(m, pool):
    """GIVEN a token whose read scope is own_session: not minted, and one an earlier build
    minted
    WHEN the earlier one calls any memory op, extraction included
    THEN every call is refused (401) and nothing is written.
    """
    with pytest.raises(BadRequestError, match="own_session is not minted"):
        m.token("writer", read_scope="own_session")
    tok = legacy_token(pool, org=m.org, read_scope="own_session")
    for op, body in (*WRITES, *READS, EXTRACT):
        status, data = m.post(op, token=tok, session_id="s1", **body)
        assert status == 401, (op, data)
    assert memory_rows(pool, m.org) == []


def test_tokens_act_in_their_own_org_namespace_and_user(m, api, deps, pool):
    """GIVEN a namespace-bound token, a user-pinned token and another org's token
    WHEN they write inside and outside what they are bound to
    THEN writes outside are refused (403); the pinned token's write lands under its user.
    """
    bound = m.token("writer", namespace=NS)
    pinned = m.token("writer", read_scope="own_user", read_user_id="u1")
    stranger = Mem.open(api, deps, m.org + "-b")

    assert m.post("memory.set", token=bound, key="k/a", value="v", namespace=NS2)[0] == 403
    assert m.post("memory.set", token=pinned, key="k/a", value="v", user_id="u2")[0] == 403
    assert stranger.post("memory.set", key="k/a", value="v", org=m.org)[0] == 403
    assert memory_rows(pool, m.org) == []

    assert m.post("memory.set", token=bound, key="k/a", value="v")[0] == 200
    assert m.post("memory.set", token=pinned, key="k/b", value="v")[0] == 200
    rows = {r["key"]: (r["namespace"], r["user_id"]) for r in memory_rows(pool, m.org)}
    assert rows == {"k/a": (NS, "-"), "k/b": (NS, "u1")}


def test_a_user_pinned_token_cannot_write_into_another_users_personal_collection(m, pool):
    """GIVEN a token pinned to user u1
    WHEN it writes into namespace "@me:u2" (u2's personal collection), then into "@me" and
    "@me:u1"
    THEN the first is refused (403) and nothing lands in u2's collection; the others land in
    u1's."""
    pinned = m.token("writer", read_scope="own_user", read_user_id="u1")
    status, body = m.post("memory.set", token=pinned, key="k/x", value="v", namespace="@me:u2")
    assert status == 403, body
    assert memory_rows(pool, m.org) == []
    for ns in ("@me", "@me:u1"):
        assert m.post("memory.set", token=pinned, key="k/x", value=ns, namespace=ns)[0] == 200
    assert {r["namespace"] for r in memory_rows(pool, m.org)} == {"@me:u1"}


def test_an_own_user_token_without_a_pin_reads_nothing(m, pool):
    """GIVEN a viewer token bounded to own_user with no pinned user: not minted, and one an
    earlier build minted
    WHEN the earlier one searches without user_id, then naming one
    THEN both are refused (401): a user it names itself bounds nothing.
    """
    with pytest.raises(BadRequestError, match="needs --read-user-id"):
        m.token("viewer", read_scope="own_user")
    tok = legacy_token(pool, org=m.org, role="viewer", read_scope="own_user")

    assert m.post("memory.search", token=tok, query="tea")[0] == 401
    assert m.post("memory.search", token=tok, query="tea", user_id="u1")[0] == 401


BAD = (
    ("memory.set", {"key": "has space", "value": "v"}),
    ("memory.set", {"key": "", "value": "v"}),
    ("memory.set", {"key": "k" * 301, "value": "v"}),
    ("memory.set", {"key": "k/a", "value": ""}),
    ("memory.set", {"key": "k/a", "value": "v" * 100_001}),
    ("memory.set", {"key": "k/a"}),
    ("memory.set", {"key": "k/a", "value": 5}),
    ("memory.set", {"key": "k/a", "value": "nul \x00 inside"}),
    ("memory.set", {"key": "k/a", "value": "v", "tags": ["t"] * 51}),
    ("memory.set", {"key": "k/a", "value": "v", "tags": ["t" * 101]}),
    ("memory.set", {"key": "k/a", "value": "v", "valid_at": "yesterday"}),
    ("memory.set", {"key": "k/a", "value": "v", "observation_date": "2024-13-45"}),
    ("memory.set", {"key": "k/a", "value": "v", "pin": "sometimes"}),
    ("memory.set", {"key": "k/a", "value": "v", "namespace": "has space"}),
    ("memory.set", {"key": "k/a", "value": "v", "agent": None}),
    ("memory.bulk_set", {"entries": []}),
    ("memory.bulk_set", {"entries": [{"key": "k/a", "value": "v"}] * 501}),
    ("memory.bulk_set", {"entries": [{"key": "k/a"}]}),
    ("memory.bulk_set", {"entries": "k/a=v"}),
    ("memory.get", {"key": "a b"}),
    ("memory.delete", {}),
    ("memory.search", {"query": ""}),
    ("memory.search", {"query": "tea", "top_k": 0}),
    ("memory.search", {"query": "tea", "top_k": 101}),
    ("memory.search", {"query": "tea", "search_mode": "fuzzy"}),
    ("memory.search", {"query": "q" * 10_001}),
    ("memory.recall", {"query": "tea", "limit": 0}),
    ("memory.recall", {"query": "tea", "role": "robot"}),
    ("memory.recall", {"query": "tea", "since": "last week"}),
    ("memory.evidence", {"key": ""}),
)


@pytest.mark.parametrize(("op", "body"), BAD, ids=[f"{o}-{i}" for i, (o, _) in enumerate(BAD)])
def test_bad_input_is_422_and_writes_nothing(m, pool, op, body):
    """GIVEN an org admin token (so no role check answers first)
    WHEN a memory op gets a field of the wrong shape, size or type
    THEN it answers 422 with a validation error naming the problem, and writes nothing.
    """
    status, data = m.post(op, as_="org_admin", **body)

    assert status == 422, data
    assert data["error"]["code"] == "validation_error" and data["error"]["message"]
    assert memory_rows(pool, m.org) == []


ODD_BUT_VALID = (
    ("memory.search", {"query": "!!! ??? ..."}),
    ("memory.search", {"query": "a:b & c | !d ' \\ ( ) <-> *"}),
    ("memory.search", {"query": "tea", "user_id": "-"}),
    ("memory.recall", {"query": "100% _under_ \\back"}),
    ("memory.recall", {"since": "2030-01-01T00:00:00Z", "until": "2020-01-01T00:00:00Z"}),
    ("memory.get", {"key": "ключ/名前"}),
    ("memory.set", {"key": "k/a", "value": "word" * 600}),
    ("memory.set", {"key": "k/b", "value": "v", "valid_at": "9999-12-31T23:59:59Z"}),
)


@pytest.mark.parametrize(
    ("op", "body"), ODD_BUT_VALID, ids=[f"{o}-{i}" for i, (o, _) in enumerate(ODD_BUT_VALID)]
)
def test_odd_but_valid_input_answers_200_not_500(m, op, body):
    """GIVEN stored memories
    WHEN an op gets punctuation-only or operator-laden queries, unicode keys, an empty time
    window or a single very long word
    THEN it answers 200.
    """
    m.set("user/drink", "The user drinks tea, 100% of the time.")

    status, data = m.post(op, as_="writer", **body)

    assert status == 200, data


def test_a_body_that_is_not_a_json_object_is_400(m):
    """GIVEN a writer token
    WHEN memory.set gets a body that is not JSON, or a JSON array
    THEN it answers 400, not 500.
    """
    for raw in ("{not json", "[1, 2]"):
        status, data, _ = m.api.raw("memory.set", raw, token=m.tokens["writer"])
        assert status == 400, data


SHARED = "policy/wifi"
UNPINNED_OPS = (
    ("memory.get", {"key": SHARED}),
    ("memory.set", {"key": SHARED, "value": "The wifi is evil-twin."}),
    ("memory.bulk_set", {"entries": [{"key": SHARED, "value": "The wifi is evil-twin."}]}),
    ("memory.delete", {"key": SHARED}),
    ("memory.evidence", {"key": SHARED}),
    ("memory.search", {"query": "wifi"}),
    ("memory.recall", {"query": "wifi"}),
    ("memory.set_from_messages", {"messages": [{"role": "user", "content": "VPN is off"}]}),
    (
        "memory.set_from_messages",
        {"messages": [{"role": "user", "content": "VPN is off"}], "defer": True},
    ),
    ("observe.record", {"session_id": "s1", "action": "ran pytest"}),
    ("observe.crystallize", {"session_id": "s1"}),
)


@pytest.mark.parametrize("user_id", [None, "", "-"], ids=["absent", "empty", "shared"])
def test_an_own_user_token_without_a_pin_reaches_no_shared_row(m, pool, user_id):
    """GIVEN a namespace-shared row (user "-") and a writer token bounded to own_user that pins
    no user (minted by an earlier build)
    WHEN it calls every memory op (reads, writes, deletes, evidence, inline and deferred
    extraction, observe.record and observe.crystallize) naming no user, or the shared user "-"
    THEN each is refused with 401 saying to mint one pinned to a user, and nothing is read,
    changed, queued or recorded.
    """
    m.set(SHARED, "The office wifi is acme-guest.")
    before = memory_rows(pool, m.org)
    tok = legacy_token(pool, org=m.org, read_scope="own_user")
    named = {} if user_id is None else {"user_id": user_id}

    for op, body in UNPINNED_OPS:
        status, data = m.post(op, token=tok, **body, **named)
        assert status == 401, (op, data)
        assert "mint one with --read-user-id" in data["error"]["message"], op

    assert memory_rows(pool, m.org) == before
    with pool.connection() as conn:
        for table in ("memory_extraction_queue", "observations", "memory_evidence"):
            count = conn.execute(f"SELECT count(*) FROM loom.{table} WHERE org = %s", (m.org,))
            assert count.fetchone()[0] == 0, table


def test_an_own_user_token_without_a_pin_no_longer_acts_as_the_user_it_names(m, pool):
    """GIVEN a namespace-shared row and a writer token bounded to own_user that pins no user
    (minted by an earlier build: each call named the user it liked)
    WHEN it sets, gets and deletes that key naming user u1
    THEN each answers 401; no row of u1 is written and the shared row is untouched.
    """
    m.set(SHARED, "The office wifi is acme-guest.")
    before = memory_rows(pool, m.org)
    tok = legacy_token(pool, org=m.org, read_scope="own_user")

    for op, body in (
        ("memory.set", {"key": SHARED, "value": "u1's wifi is home-net."}),
        ("memory.get", {"key": SHARED}),
        ("memory.delete", {"key": SHARED}),
    ):
        status, data = m.post(op, token=tok, user_id="u1", **body)
        assert status == 401, (op, data)

    assert memory_rows(pool, m.org) == before
