"""conversation.search_saved_messages: one user's saved messages in one namespace, ranked by
a vector leg (first 2,048 characters) and a BM25 leg (whole text) fused by reciprocal rank."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.integration.test_saved_support import (
    NS,
    OFF_NS,
    execute,
    hit_ids,
    insert_saved_row,
    open_tenant,
    save,
    search_saved,
)

_PROSE = (
    "deploy pipeline canary budget rollout cluster replica shard backup restore"
    " schedule invoice customer refund billing region latency cache warmup queue"
    " worker retry timeout dashboard alert pager rotation review merge branch release"
    " notes draft garden tomato harvest weather river bridge train station coffee"
    " recipe bakery"
)
WORDS = _PROSE.split()
MODES = ("hybrid", "semantic", "lexical")


def filler(rng: random.Random, chars: int) -> str:
    """Plain prose of at least `chars` characters that names no query term."""
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(WORDS))
        if len(out) % 12 == 0:
            out[-1] += "."
    return " ".join(out)


def deep(term: str, rng: random.Random) -> str:
    """A long saved answer: 3,000 characters of prose, then the term, then more prose."""
    head = filler(rng, 3000)
    assert len(head) >= 3000 and term.lower() not in head.lower()
    return f"{head} The fix is tracked as {term} and shipped last week. {filler(rng, 600)}"


@pytest.fixture
def t(api, deps, org):
    return open_tenant(api, deps, org)


@pytest.fixture
def corpus(t):
    """About thirty saved messages of u1: two long answers with an exact term past their first
    3,000 characters, and 28 others, some long, none naming either term."""
    rng = random.Random(4711)
    save(t, "c-deep", "m-ticket", deep("LOOM-4711", rng), role="assistant")
    save(t, "c-deep", "m-table", deep("ledger_entries_v2", rng), role="assistant")
    for i in range(28):
        size = rng.choice([60, 200, 900, 2500])
        save(t, f"c{i % 4}", f"m{i:02d}", filler(rng, size), role=("user", "assistant")[i % 2])
    return t


# ---- who and where -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_only_the_users_saved_messages_in_the_named_namespace_are_found(t, mode):
    """GIVEN u1's saved message, u2's saved message, an unsaved recorded turn (all about the
    harbour) in one namespace, and u1's saved message about it in another namespace
    WHEN u1 searches the first namespace for the harbour, in each mode
    THEN only u1's saved message there is a hit.
    """
    save(t, "c1", "m-u1", "the harbour ferry leaves at noon")
    save(t, "c1", "m-u2", "the harbour ferry leaves at noon sharp", user="u2")
    t.append("c1", "the harbour ferry leaves at noon today", msg_id="m-recorded", user_id="u1")
    save(t, "c1", "m-elsewhere", "the harbour ferry leaves at noon", namespace=OFF_NS)
    hits = search_saved(t, "harbour ferry noon", search_mode=mode)
    assert hit_ids(hits) == ["m-u1"]
    assert hits[0]["conversation_id"] == "c1" and hits[0]["saved_at"] is not None


def test_an_unsaved_message_leaves_the_search(t):
    """GIVEN two saved messages about the harbour, one then unsaved
    WHEN the user searches in each mode
    THEN only the one still saved is found.
    """
    t.append("c1", "the harbour ferry leaves at noon", msg_id="m1")
    save(t, "c1", "m1")
    save(t, "c1", "m2", "the harbour ferry is late again")
    t.ok(
        "conversation.unsave_message",
        agent="a1",
        conversation_id="c1",
        message_id="m1",
        user_id="u1",
        as_="writer",
    )
    for mode in MODES:
        assert hit_ids(search_saved(t, "harbour ferry", search_mode=mode)) == ["m2"], mode


# ---- an exact term deep in a long answer ---------------------------------------------------


@pytest.mark.parametrize(
    ("query", "target"), [("LOOM-4711", "m-ticket"), ("ledger_entries_v2", "m-table")]
)
def test_an_exact_term_past_the_vectors_reach_ranks_first(corpus, query, target):
    """GIVEN thirty saved messages, one a long answer naming the term only after its first
    3,000 characters (past the 2,048 the vector sees), so the vector leg alone does not put it
    first
    WHEN the user searches for the exact term in lexical and in hybrid mode
    THEN that answer is the first hit in both.
    """
    semantic = hit_ids(search_saved(corpus, query, search_mode="semantic"))
    assert semantic[0] != target  # the vector never saw the term
    assert hit_ids(search_saved(corpus, query, search_mode="lexical"))[0] == target
    assert hit_ids(search_saved(corpus, query, search_mode="hybrid"))[0] == target


@pytest.mark.parametrize(
    ("query", "target", "term"),
    [
        ("LOOM-4711", "m-ticket", "LOOM-4711"),
        pytest.param(
            "ledger_entries_v2",
            "m-table",
            "ledger_entries_v2",
        ),
    ],
)
@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_a_bm25_hits_excerpt_is_centred_on_the_matched_term(corpus, mode, query, target, term):
    """GIVEN a long saved answer naming the term after 3,000 characters
    WHEN the user searches for the term
    THEN the hit's excerpt (240 characters) holds the term, near its middle.
    """
    hit = next(
        h for h in search_saved(corpus, query, search_mode=mode) if h["message_id"] == target
    )
    excerpt = hit["excerpt"]
    assert len(excerpt) == 240
    assert term in excerpt
    centre = excerpt.index(term) + len(term) / 2
    assert abs(centre - 120) <= 30, excerpt


# ---- modes, weights, filters, fusion -------------------------------------------------------


def test_lexical_weight_zero_gives_the_semantic_order(corpus):
    """GIVEN the saved corpus
    WHEN the user searches in hybrid mode with lexical_weight 0
    THEN the hits and scores equal the semantic mode's.
    """
    for query in ("deploy canary rollout", "LOOM-4711", "tomato harvest weather"):
        zero = search_saved(corpus, query, search_mode="hybrid", lexical_weight=0)
        semantic = search_saved(corpus, query, search_mode="semantic")
        assert hit_ids(zero) == hit_ids(semantic), query
        assert [h["score"] for h in zero] == pytest.approx([h["score"] for h in semantic])


def test_lexical_weight_out_of_range_is_a_422(t):
    """GIVEN any caller
    WHEN it searches with lexical_weight 1.5 or -0.1
    THEN it answers 422.
    """
    for weight in (1.5, -0.1):
        status, body = t.post(
            "conversation.search_saved_messages",
            agent="*",
            user_id="u1",
            query="x",
            lexical_weight=weight,
            as_="viewer",
        )
        assert status == 422, body


@pytest.mark.parametrize("mode", MODES)
def test_conversation_and_role_filters(corpus, mode):
    """GIVEN saved messages across conversations c0..c3 and both roles
    WHEN the user searches with conversation_id c1, and with role assistant
    THEN every hit is of c1, or of the assistant role, and the filtered hits are exactly the
    unfiltered hits that match.
    """
    query = "deploy canary rollout budget"
    everything = search_saved(corpus, query, search_mode="lexical")
    assert {h["conversation_id"] for h in everything} >= {"c0", "c1"}
    by_conv = search_saved(corpus, query, search_mode=mode, conversation_id="c1")
    by_role = search_saved(corpus, query, search_mode=mode, role="assistant")
    assert by_conv and {h["conversation_id"] for h in by_conv} == {"c1"}
    assert by_role and {h["role"] for h in by_role} == {"assistant"}
    unfiltered = search_saved(corpus, query, search_mode=mode)
    assert set(hit_ids(by_conv)) == {
        h["message_id"] for h in unfiltered if h["conversation_id"] == "c1"
    }
    assert set(hit_ids(by_role)) == {
        h["message_id"] for h in unfiltered if h["role"] == "assistant"
    }


@pytest.mark.parametrize("mode", MODES)
def test_scores_never_increase_down_the_hits(corpus, mode):
    """GIVEN the saved corpus
    WHEN the user searches in each mode
    THEN the hits come best first: scores are non-increasing, and top_k bounds their number.
    """
    for query in ("deploy canary rollout", "LOOM-4711 ledger", "coffee bakery recipe"):
        scores = [h["score"] for h in search_saved(corpus, query, search_mode=mode)]
        assert scores and scores == sorted(scores, reverse=True), (mode, query)
    assert len(search_saved(corpus, "deploy canary", search_mode=mode, top_k=5)) == 5


def reference_rrf(legs: list[tuple[list[str], float]], k: int = 60) -> dict[str, float]:
    """Reciprocal rank fusion written out plainly: sum of weight / (k + rank), rank from 1."""
    scores: dict[str, float] = {}
    for ranked, weight in legs:
        for rank, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_the_fused_order_is_reciprocal_rank_fusion_of_the_two_legs(corpus, weight):
    """GIVEN the saved corpus and the two legs' own orders (semantic and lexical mode)
    WHEN the user searches in hybrid mode with lexical_weight 1.0 or 0.5
    THEN each hit's score is the reference RRF score (k=60, rank from 1, weights 1 and
    lexical_weight), and the hits are the reference order, best first (ties in any order).
    """
    for query in ("deploy canary rollout", "LOOM-4711", "garden tomato bridge station"):
        vec = hit_ids(search_saved(corpus, query, search_mode="semantic"))
        lex = hit_ids(search_saved(corpus, query, search_mode="lexical"))
        ref = reference_rrf([(vec, 1.0), (lex, weight)])
        fused = search_saved(corpus, query, search_mode="hybrid", lexical_weight=weight)
        assert set(hit_ids(fused)) == set(ref), query
        for h in fused:
            assert h["score"] == pytest.approx(ref[h["message_id"]], abs=1e-9), (query, h)
        ref_scores = sorted(ref.values(), reverse=True)
        assert [h["score"] for h in fused] == pytest.approx(ref_scores, abs=1e-9), query
        top = search_saved(corpus, query, search_mode="hybrid", lexical_weight=weight, top_k=3)
        assert [h["score"] for h in top] == pytest.approx(ref_scores[:3], abs=1e-9), query


def test_with_the_embedder_down_hybrid_answers_from_the_lexical_leg(corpus, embedder):
    """GIVEN the saved corpus and an embedder that fails
    WHEN the user searches in hybrid mode
    THEN it still answers, with the lexical leg's hits in the lexical leg's order.
    """
    lexical = hit_ids(search_saved(corpus, "LOOM-4711", search_mode="lexical"))
    embedder.failing = True
    hybrid = hit_ids(search_saved(corpus, "LOOM-4711", search_mode="hybrid"))
    assert hybrid and hybrid == lexical
    assert hybrid[0] == "m-ticket"


# ---- rows that read as high ----------------------------------------------------------------

HIGH = "the vpn password=hunter22 for the harbour office"


def _earlier_build_saved_high(pool, org, embedder) -> None:
    """A saved row holding a password, with the vector and lexical index an earlier build
    gave it."""
    insert_saved_row(pool, org, "c1", "m-high", HIGH)
    vec = embedder._vector(HIGH)
    execute(
        pool,
        "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id, model,"
        " agent, role, user_id, text, dim, embedding, ts, is_saved, saved_at)"
        " SELECT org, namespace, thread_id, msg_id, %s, agent, role, user_id, content, %s, %s,"
        " ts, true, saved_at FROM loom.conversations WHERE org = %s AND msg_id = 'm-high'",
        (embedder.name, len(vec), np.asarray(vec), org),
    )


def test_a_saved_row_that_reads_as_high_is_never_a_keyword_hit(t, pool, org, embedder):
    """GIVEN a saved row an earlier build wrote holding a password, beside a plain saved
    message about the harbour office
    WHEN the user searches lexically for words of both
    THEN only the plain message is a hit.
    """
    _earlier_build_saved_high(pool, org, embedder)
    save(t, "c1", "m-plain", "the harbour office opens at nine")
    assert hit_ids(search_saved(t, "harbour office vpn hunter22", search_mode="lexical")) == [
        "m-plain"
    ]


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_saved_row_that_reads_as_high_is_never_a_vector_hit(t, pool, org, embedder, mode):
    """GIVEN a saved row an earlier build wrote (and embedded) holding a password, beside a
    plain saved message
    WHEN the user searches by vector (semantic, hybrid) for the high row's own words
    THEN the high row is not a hit and its text is in no excerpt.
    """
    _earlier_build_saved_high(pool, org, embedder)
    save(t, "c1", "m-plain", "the harbour office opens at nine")
    hits = search_saved(t, HIGH, search_mode=mode)
    assert "m-high" not in hit_ids(hits)
    assert not any("hunter22" in h["excerpt"] for h in hits)


def test_the_search_needs_a_query_and_a_sane_top_k(t):
    """GIVEN any caller
    WHEN it searches with an empty query, top_k 0 or top_k 201, or an unknown mode
    THEN each is a 422.
    """
    for extra in ({"query": ""}, {"top_k": 0}, {"top_k": 201}, {"search_mode": "fuzzy"}):
        body = {"agent": "*", "user_id": "u1", "query": "x", "namespace": NS, **extra}
        status, out = t.post("conversation.search_saved_messages", as_="viewer", **body)
        assert status == 422, (extra, out)


def test_a_term_deep_in_a_long_saved_message_ranks(t):
    """GIVEN a saved message of over 550,000 characters whose one rare term (a ticket id) lies
    past its first 500,000
    WHEN the saved search looks for that term lexically
    THEN the message is found: the BM25 leg reads its whole text."""
    body = "the ferry leaves at nine " * 22_000 + "ticket ZX-99321 closes the matter"
    assert body.index("ZX-99321") > 500_000
    save(t, "c1", "m-long", body)
    save(t, "c1", "m-short", "the ferry leaves at nine")
    assert hit_ids(search_saved(t, "ZX-99321", search_mode="lexical")) == ["m-long"]
