"""memory.search: by meaning and by words, in the caller's scope only; text that reads as high
is stored but never embedded or served by search, only by memory.get with an audit row."""

from __future__ import annotations

import pytest

from chalicelib.sensitivity import is_sensitive
from tests.integration.test_memory_support import (
    NS,
    NS2,
    Mem,
    audit_rows,
    canonical_sha,
    memory_rows,
    turns,
)

ROWS = {
    "user/drink": "The user drinks oat milk flat whites every morning.",
    "user/home_city": "The user lives in Lisbon near the river.",
    "user/pet": "The user has a grey cat called Miso.",
}


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


@pytest.fixture
def stocked(m):
    for key, value in ROWS.items():
        m.set(key, value)
    return m


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "lexical"])
def test_each_search_mode_finds_the_matching_memory_first(stocked, mode):
    """GIVEN three memories on different topics
    WHEN memory.search asks about each topic in hybrid, semantic and lexical mode
    THEN each query's own memory is the first hit, served with its value, version and kind.
    """
    for query, key in (("oat milk", "user/drink"), ("Lisbon river", "user/home_city")):
        hits = stocked.search(query, search_mode=mode)
        assert hits and hits[0]["key"] == key, (mode, query, hits)
        assert hits[0]["value"] == ROWS[key]
        assert (hits[0]["version"], hits[0]["kind"], hits[0]["user_id"]) == (1, "fact", "-")


def test_semantic_mode_reads_vectors_and_lexical_mode_reads_words(stocked, embedder):
    """GIVEN stored memories and an embedder that has started failing
    WHEN memory.search runs in each mode
    THEN semantic finds nothing (it has no vector to compare), lexical still finds by words, and
    hybrid falls back to its lexical leg rather than failing.
    """
    embedder.failing = True

    assert stocked.hit_keys("grey cat Miso", search_mode="semantic") == []
    assert stocked.hit_keys("grey cat Miso", search_mode="lexical") == ["user/pet"]
    assert stocked.hit_keys("grey cat Miso", search_mode="hybrid") == ["user/pet"]


def test_search_stays_in_the_org_and_namespace_searched(stocked, api, deps):
    """GIVEN memories in one org's namespace
    WHEN the same query runs in another namespace, in another org, and with another org's token
    naming this org
    THEN the other namespace and org find nothing, and the other org's token is refused (403).
    """
    other = Mem.open(api, deps, stocked.org + "-b")
    other.set("user/note", "unrelated")

    assert stocked.hit_keys("oat milk") == ["user/drink"]
    assert stocked.hit_keys("oat milk", namespace=NS2) == []
    assert other.hit_keys("oat milk") == []
    status, _ = other.post("memory.search", as_="viewer", query="oat milk", org=stocked.org)
    assert status == 403


def test_a_user_pinned_token_never_reads_another_users_rows(m):
    """GIVEN rows for users u1 and u2 and a shared row
    WHEN a viewer token pinned to u1 searches, and names u2
    THEN it finds u1's row and the shared one, never u2's; naming u2 is refused (403); a
    namespace-wide token asking for u2 finds u2's and the shared row.
    """
    m.set("user/drink", "Alice drinks oat milk tea.", user_id="u1")
    m.set("user/drink", "Bob drinks oat milk coffee.", user_id="u2")
    m.set("team/drink", "The team orders oat milk for the office.")
    pinned = m.token("viewer", read_scope="own_user", read_user_id="u1")

    hits = m.search("oat milk", token=pinned)
    denied, _ = m.post("memory.search", token=pinned, query="oat milk", user_id="u2")
    wide = m.search("oat milk", user_id="u2")

    assert {(h["user_id"], h["key"]) for h in hits} == {("u1", "user/drink"), ("-", "team/drink")}
    assert denied == 403
    assert {(h["user_id"], h["key"]) for h in wide} == {("u2", "user/drink"), ("-", "team/drink")}


def test_include_chunks_false_leaves_verbatim_chunks_out(m):
    """GIVEN a transcript kept as verbatim chunks (the stock fake model extracts nothing)
    WHEN memory.search asks about its words with and without include_chunks
    THEN the chunk is a hit by default and absent with include_chunks false.
    """
    m.extract_ok(turns(("user", "We hiked the Serra da Estrela trail in April.")))

    hits = m.search("Serra Estrela trail")
    without = m.search("Serra Estrela trail", include_chunks=False)

    assert [h["kind"] for h in hits] == ["chunk"]
    assert hits[0]["key"].startswith("chunk:")
    assert without == []


def test_a_high_value_is_stored_unembedded_never_searched_and_got_with_an_audit_row(m, pool):
    """GIVEN a memory whose value reads as high (a password assignment) beside a plain one
    WHEN it is searched in every mode by its own words, then read by memory.get
    THEN it is stored without an embedding, is never a search hit, and memory.get serves it
    while leaving a memory.sensitive_read audit row (reading the plain row leaves none).
    """
    secret = "staging database password=hunter22"
    assert m.set("db/staging_login", secret)["conflict_verdict"] == "created"
    m.set("db/staging_host", "The staging database host is db-staging.")
    rows = {r["key"]: r for r in memory_rows(pool, m.org)}
    assert rows["db/staging_login"]["unembedded"] is True
    assert rows["db/staging_host"]["unembedded"] is False

    for mode in ("hybrid", "semantic", "lexical"):
        hits = m.hit_keys("staging database password hunter22", search_mode=mode)
        assert "db/staging_login" not in hits, mode
    assert "db/staging_host" in m.hit_keys("staging database", search_mode="lexical")

    m.get("db/staging_host")
    assert audit_rows(pool, m.org, "memory.sensitive_read") == []
    got = m.get("db/staging_login")
    assert got["memory"]["value"] == secret
    (audit,) = audit_rows(pool, m.org, "memory.sensitive_read")
    assert (audit["namespace"], audit["principal"]) == (NS, f"token:viewer-{m.org}")
    assert audit["body_sha256"] == canonical_sha(secret)


@pytest.mark.parametrize(
    ("key", "tags"),
    [
        ("vault/sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", []),  # an API key in the key
        ("user/ferry", ["password=hunter22"]),  # a tag
    ],
)
def test_a_row_whose_key_or_tag_reads_as_high_is_no_hit_in_any_mode(m, key, tags):
    """GIVEN a plain value stored under a key, or with a tag, that reads as high
    WHEN memory.search asks about the value's words in every mode
    THEN the row is never a hit (its key and tags are shown with a hit), while a plain row
    beside it is."""
    assert is_sensitive(key) or any(is_sensitive(tag) for tag in tags)
    m.set(key, "The user takes the harbour ferry on Fridays.", tags=tags)
    m.set("user/ferry_plain", "The user takes the harbour ferry on Mondays.")
    for mode in ("hybrid", "semantic", "lexical"):
        found = m.hit_keys("harbour ferry", search_mode=mode)
        assert key not in found, mode
    assert "user/ferry_plain" in m.hit_keys("harbour ferry", search_mode="lexical")


def test_a_value_an_earlier_guard_let_in_is_no_hit_in_any_mode(m, pool):
    """GIVEN two embedded memories about the user's locker, one of whose stored value now
    reads as high (as if an earlier build's weaker guard had embedded it)
    WHEN memory.search asks about the locker in every mode
    THEN only the plain memory comes back: both legs' hits are checked with today's guard."""
    m.set("user/locker", "The user keeps a gym locker at the harbour pool.")
    m.set("user/locker_code", "The user's gym locker at the harbour pool is the blue one.")
    secret = "The user's gym locker at the harbour pool: password=hunter22xyz"
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memories SET value = %s WHERE org = %s AND key = 'user/locker_code'",
            (secret, m.org),
        )
    for mode in ("hybrid", "semantic", "lexical"):
        assert m.hit_keys("gym locker harbour pool", search_mode=mode) == ["user/locker"], mode
