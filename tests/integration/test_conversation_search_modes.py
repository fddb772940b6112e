"""conversation.search modes: semantic (the default, unchanged), lexical (BM25 over each turn's
window: its date, the two turns before it and the turn) and hybrid
(reciprocal-rank fusion of the turn's vector, its context vector and the BM25 leg, no floor),
and lexical_weight."""

from __future__ import annotations

import json
import math
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from chalicelib.deps import Deps, set_deps
from chalicelib.providers.embedder import EmbedderError, FakeEmbedder
from chalicelib.providers.llm import ScriptedLLM
from chalicelib.search.tuning import SearchCaches, SearchTuning
from chalicelib.sensitivity import is_sensitive
from chalicelib.services import turn_writer
from chalicelib.services.turn_writer import record_turns
from chalicelib.store.pool import autocommit_connection
from chalicelib.store.turn_vectors import TurnVector, write_embeddings
from chalicelib.store.turn_writes import NewTurn, insert_turns
from chalicelib.workers.retention import purge_expired_conversations
from tests.integration.test_conversation_support import (
    NS,
    Tenant,
    live_setting,
    snapshot,
    turn_rows,
)
from tests.integration.test_saved_support import OFF_NS, SUMMARY, content, save, unsave

MODES = ("lexical", "hybrid")
RRF_K = 60  # the reciprocal-rank constant of the fusion
VECTOR_LEG_DEPTH = SearchTuning().vector_leg_depth


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


Tune = Callable[..., Deps]


@pytest.fixture
def tune(deps: Deps) -> Iterator[Tune]:
    """Serve requests from a Deps with these search tuning values (the others at their
    defaults) and caches of its own, empty unless given; the test's Deps again afterwards."""

    def serve(caches: SearchCaches | None = None, **values: Any) -> Deps:
        tuned = Deps(
            deps.settings,
            pool=deps.pool,
            embedder=deps.embedder,
            llm=deps.llm,
            search_tuning=SearchTuning(**values),
            search_caches=caches,
        )
        set_deps(tuned)
        return tuned

    yield serve
    set_deps(deps)


# The large-scope path on the 200 turns of `corpus`: over 30 windows, so the scope's terms are
# estimated from a sample (of up to 2,000 windows: here all 200, so the estimates are exact).
LARGE = {"sample_rows": 30, "rare_df": 8}


_CONSONANTS = str.maketrans("0123456789abcdef", "bcdfghjklmnpqrtv")


def word() -> str:
    """A made-up word no other row of the database holds (no vowel, no trailing s: the
    English stemmer leaves it as it is)."""
    return "zq" + uuid.uuid4().hex[:10].translate(_CONSONANTS)


def hits(t, query: str, mode: str, **kw) -> list[dict]:
    kw.setdefault("namespace_scope", "this")
    kw.setdefault("top_k", 200)
    return t.search(query, search_mode=mode, **kw)["hits"]


def findable(sentence: str) -> str:
    """A made-up word (as `word`) that semantic search by itself finds `sentence` holding it
    by, over the fake embedder's floor: no word of the sentence hashed to its bucket with the
    other sign cancels it, as one draw in a hundred would."""
    embedder = FakeEmbedder()
    while True:
        w = word()
        near = float(embedder.embed_query(w) @ embedder.embed_query(sentence.format(w)))
        if near >= embedder.default_floor + 0.05:
            return w


def ids(found: list[dict]) -> list[str]:
    return [h["msg_id"] for h in found]


def windows_holding(pool, term: str, org: str | None = None, *, live_only: bool = False):
    """(org, thread_id, msg_id) of every embedding row whose window holds the term's lexeme."""
    with pool.connection() as conn:
        return conn.execute(
            "SELECT org, thread_id, msg_id FROM loom.conversation_embeddings"
            " WHERE window_tsv @@ plainto_tsquery('english', %s)"
            " AND (%s::text IS NULL OR org = %s) AND (NOT %s OR tombstoned_at IS NULL)"
            " ORDER BY ts, msg_id",
            (term, org, org, live_only),
        ).fetchall()


def context_state(pool, org: str, thread_id: str) -> dict[str, tuple]:
    """msg_id -> (context_of, context vector equals the turn's own vector) of live rows."""
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT msg_id, context_of, context_embedding::text = embedding::text"
            " FROM loom.conversation_embeddings WHERE org = %s AND thread_id = %s"
            " AND tombstoned_at IS NULL",
            (org, thread_id),
        ).fetchall()
    return {m: (of, same) for m, of, same in rows}


def inserted(pool, turn: NewTurn):
    """The turn recorded as an append's first transaction records it: its ts by msg_id."""
    with autocommit_connection(pool) as conn:
        return insert_turns(conn, [turn])


def derived_from(pool, org: str, thread_id: str, msg_id: str) -> str | None:
    """The msg_id whose stored vector a row's context vector was derived from (its own vector
    and that row's, added and normalised, as they stand now); None when it is not so derived."""
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT b.msg_id FROM loom.conversation_embeddings e"
            " JOIN loom.conversation_embeddings b ON b.org = e.org AND b.namespace = e.namespace"
            " AND b.thread_id = e.thread_id AND b.model = e.model AND b.msg_id = e.context_of"
            " WHERE e.org = %s AND e.thread_id = %s AND e.msg_id = %s AND e.tombstoned_at IS NULL"
            " AND e.context_embedding::text = l2_normalize(e.embedding + b.embedding)::text",
            (org, thread_id, msg_id),
        ).fetchone()
    return None if row is None else row[0]


# ---- input ---------------------------------------------------------------------------------


def test_semantic_is_the_default_and_bad_modes_or_weights_are_refused(t, pool, org):
    """GIVEN a turn about kettle descaling, a plain turn after it and an unrelated thread
    WHEN conversation.search runs with no search_mode, with search_mode semantic, lexical and
    hybrid, and then with an unknown search_mode or a lexical_weight outside 0-1
    THEN a search without search_mode gives the semantic hits (similarity over the floor,
    score = similarity), which differ from the lexical and hybrid hits; each bad value is
    refused with 422 validation_error and nothing stored changes; weights 0 and 1 are accepted.
    """
    kettle = t.append("th-1", "the kettle descaling schedule is weekly")
    t.append("th-1", "noted, I will set a reminder", role="assistant")
    t.append("th-2", "zulu yankee xray whiskey victor")
    query = "kettle descaling schedule"

    default = t.search(query, namespace_scope="this")["hits"]
    semantic = hits(t, query, "semantic", top_k=20)
    assert default == semantic
    assert ids(default) == [kettle["msg_id"]]
    assert default[0]["score"] == default[0]["similarity"] > 0.3
    assert len(hits(t, query, "lexical", top_k=20)) == 2  # the kettle turn and its next
    assert len(hits(t, query, "hybrid", top_k=20)) == 3  # no floor

    before = snapshot(pool, org)
    bad = [
        {"search_mode": "fuzzy"},
        {"search_mode": "Semantic"},
        {"search_mode": ""},
        {"search_mode": None},
        {"search_mode": ["lexical"]},
        {"lexical_weight": -0.01},
        {"lexical_weight": 1.01},
        {"lexical_weight": "heavy"},
        {"lexical_weight": None},
        {"search_mode": "hybrid", "lexical_weight": 2},
    ]
    for change in bad:
        body = {"namespace": NS, "agent": "*", "query": query, **change}
        status, out, _ = t.api.raw("conversation.search", json.dumps(body), t.tokens["viewer"])
        assert status == 422, (change, status, out)
        assert out["error"]["code"] == "validation_error", change
        assert out["error"]["message"], change
    assert snapshot(pool, org) == before
    for weight in (0, 1, 0.5):
        assert hits(t, query, "hybrid", lexical_weight=weight)


# ---- windows -------------------------------------------------------------------------------


def test_lexical_reads_each_turns_window_and_excerpts_show_the_hit_turn(t):
    """GIVEN a thread T0..T4 where T0 holds one rare word, T1 (a long turn) another in its
    middle and T3 a third, and another thread written between them holding a fourth
    WHEN lexical search asks for each word
    THEN T1's word finds T1 and the turns whose window holds it (T2 and T3 after it); T0's
    word finds T0, T1 and T2; T3's word finds T3 and T4 (a window holds the turn and the two
    before it); the other thread's word finds only that thread; every excerpt is the hit turn's own
    text, T1's centred on its word, a neighbour's its opening (never the neighbour's text).
    """
    w_first, w_own, w_next, w_other = word(), word(), word(), word()
    filler = "the engineers reviewed the rollout plan again " * 8
    texts = {
        "T0": f"we talked about {w_first} yesterday",
        "T1": f"{filler}{w_own} {filler}",
        "X0": f"another thread mentions {w_other}",
        "T2": "a short plain answer",
        "X1": "and carries on",
        "T3": f"then {w_next} came up",
        "T4": "closing words",
    }
    for name, text in texts.items():
        thread = "th-x" if name.startswith("X") else "th-t"
        t.append(thread, text, msg_id=name, role=("user", "assistant")[len(text) % 2])

    def check(query: str, expected: set[str]) -> dict[str, str]:
        found = hits(t, query, "lexical")
        assert set(ids(found)) == expected, query
        for h in found:
            assert h["excerpt"] in texts[h["msg_id"]], (query, h)
            assert h["similarity"] is None and h["score"] > 0
        return {h["msg_id"]: h["excerpt"] for h in found}

    excerpts = check(w_own, {"T1", "T2", "T3"})
    centred = excerpts["T1"]
    assert w_own not in texts["T1"][:240] and len(centred) == 240
    assert abs(centred.index(w_own) + len(w_own) / 2 - 120) <= 30, centred
    assert all(w_own not in excerpts[m] for m in ("T2", "T3"))
    assert excerpts["T2"] == texts["T2"]

    excerpts = check(w_first, {"T0", "T1", "T2"})
    assert excerpts["T1"] == texts["T1"][:240] and w_first not in excerpts["T1"]
    check(w_next, {"T3", "T4"})
    check(w_other, {"X0", "X1"})

    hybrid = {h["msg_id"]: h["excerpt"] for h in hits(t, w_own, "hybrid")}
    assert hybrid["T1"] == centred


def test_lexical_scores_are_okapi_bm25_with_each_terms_frequency_in_the_window(t, pool, org):
    """GIVEN one-turn threads holding a rare word 1, 2, 3 and 40 times, beside a second word,
    a thread of three turns holding it 150 times each (each window keeps 255 of its positions,
    PostgreSQL's cap) and turns holding neither
    WHEN lexical search asks for both words
    THEN each hit's score is Okapi BM25 (k1 1.2, b 0.75) over the scope's windows, with each
    term's frequency read from the window's positions: more repeats score higher, saturating.
    """
    a, b = word(), word()
    counts = {"x1": 1, "x2": 2, "x3": 3, "x40": 40}
    for m, tf in counts.items():
        t.append(f"th-{m}", " ".join([a] * tf) + f" about {b if m == 'x2' else 'lamps'}", msg_id=m)
    for n in range(3):
        t.append("th-cap", " ".join([a] * 150), msg_id=f"cap{n}")
    for n in range(4):
        t.append(f"th-o{n}", f"nothing of note number {n}", msg_id=f"o{n}")
    found = {h["msg_id"]: h["score"] for h in hits(t, f"{a} {b}", "lexical")}

    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT msg_id, window_tsv::text, window_len FROM loom.conversation_embeddings"
            " WHERE org = %s AND namespace = %s AND tombstoned_at IS NULL",
            (org, NS),
        ).fetchall()
    n, avgdl = len(rows), sum(r[2] for r in rows) / len(rows)

    def tf(tsv: str, term: str) -> int:
        for entry in tsv.split(" "):
            lexeme, _, positions = entry.partition(":")
            if lexeme == f"'{term}'":
                return len(positions.split(","))
        return 0

    df = {w: sum(1 for r in rows if tf(r[1], w)) for w in (a, b)}
    expected = {}
    for m, tsv, length in rows:
        score = 0.0
        for w in (a, b):
            f = tf(tsv, w)
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            score += idf * f * 2.2 / (f + 1.2 * (1 - 0.75 + 0.75 * length / avgdl))
        if score:
            expected[m] = score
    windows = {r[0]: r[1] for r in rows}
    assert [tf(windows[m], a) for m in counts] == [1, 2, 3, 40]
    assert [tf(windows[f"cap{n}"], a) for n in range(3)] == [150, 255, 255]
    assert found == pytest.approx(expected)
    assert found["x3"] > found["x1"] and found["x40"] > found["x3"]


def test_an_excerpt_is_centred_on_a_word_the_stemmer_shortens(t):
    """GIVEN a long turn holding "reconciliations" well past its first 240 characters
    WHEN lexical search asks for "reconciliations"
    THEN the hit's excerpt holds the word, near its middle.
    """
    filler = "the engineers reviewed the rollout plan again " * 8
    text = f"{filler}reconciliations {filler}"
    t.append("th-1", text, msg_id="m-long")

    (hit,) = hits(t, "reconciliations", "lexical")
    assert hit["msg_id"] == "m-long"
    assert "reconciliations" in hit["excerpt"]


# ---- sensitivity ---------------------------------------------------------------------------


def test_a_high_turn_is_neither_a_hit_nor_a_neighbour(t, pool, embedder):
    """GIVEN a thread P0, P1, H, N0, N1 where H holds a card number and a unique word, and P1
    holds another unique word
    WHEN lexical and hybrid search ask for H's word
    THEN lexical returns nothing; hybrid never returns H and its ranking is the vectors'
    alone (identical to lexical_weight 0: H's word lent no turn any weight); no window in the
    database holds H's word and H's text never reached the embedder; P1's word finds P0, P1,
    N0 and N1 (the windows around H skip it).
    """
    w_high, w_before = word(), word()
    high = f"charge it to my card 4111 1111 1111 1111 for the {w_high} order"
    assert is_sensitive(high)
    turns = {
        "P0": "we are ordering new office chairs",
        "P1": f"the {w_before} model looks comfortable",
        "H": high,
        "N0": "done, the order is placed",
        "N1": "thanks, delivery is next week",
    }
    for name, text in turns.items():
        t.append("th-1", text, msg_id=name)
    t.append("th-2", "an unrelated thread about gardening", msg_id="G0")
    assert not any(w_high in s or "4111" in s for s in embedder.seen)  # nor in a context
    assert windows_holding(pool, w_high) == []

    assert hits(t, w_high, "lexical") == []
    hybrid = hits(t, w_high, "hybrid")
    assert "H" not in ids(hybrid)
    assert hybrid == hits(t, w_high, "hybrid", lexical_weight=0)

    assert set(ids(hits(t, w_before, "lexical"))) == {"P1", "N0", "N1"}
    assert "H" not in ids(hits(t, high, "hybrid"))


def test_a_turn_an_earlier_guard_let_in_is_no_hit_in_any_mode(t, pool, org):
    """GIVEN two indexed turns sharing a unique word, one of whose indexed text now reads as
    high (as if an earlier build's weaker guard had embedded and indexed it)
    WHEN semantic, lexical and hybrid search ask for the word
    THEN only the plain turn comes back: every leg's hits are checked with today's guard."""
    w = findable("the {} invoice went out on Monday")
    t.append("th-old", f"the {w} invoice went out on Monday", msg_id="plain")
    t.append("th-old", f"the {w} invoice is paid", msg_id="old")
    secret = f"the {w} invoice is paid, password: Tr0ub4dor&3xyz"
    assert is_sensitive(secret)
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversation_embeddings SET text = %s WHERE org = %s AND msg_id = 'old'",
            (secret, org),
        )
    for mode in ("semantic", *MODES):
        assert ids(hits(t, w, mode)) == ["plain"], mode


def test_a_turn_whose_embedded_cut_reads_as_high_is_neither_embedded_nor_a_neighbour(
    t, pool, embedder
):
    """GIVEN a turn whose whole text holds five groups of four digits (no card number) placed so
    that its first 2,048 characters, the part embedded and indexed, end with four of them
    WHEN it is appended between two plain turns
    THEN the turn is stored as written but no text holding the four groups reached the
    embedder (neither as the turn nor in a context), no window holds the digits, and no mode
    finds a turn by them (hybrid, which has no floor, ranks by its vectors alone)."""
    digits = "4111 1111 1111 1111"
    pad = ("we talked about the weather and the garden. " * 47)[:2028] + " "
    long_turn = pad + digits + " 1111 and the rest of the note"
    assert not is_sensitive(long_turn) and is_sensitive(long_turn[:2048])
    t.append("th-cut", "the first plain turn", msg_id="A0")
    t.append("th-cut", long_turn, msg_id="C")
    t.append("th-cut", "the last plain turn", msg_id="A1")
    assert [r["content"] for r in turn_rows(pool, t.org, "th-cut")][1] == long_turn
    assert not any(digits in s for s in embedder.seen)
    assert windows_holding(pool, "4111", t.org) == []
    assert hits(t, digits, "semantic") == [] and hits(t, digits, "lexical") == []
    hybrid = hits(t, digits, "hybrid")
    assert "C" not in ids(hybrid) and hybrid == hits(t, digits, "hybrid", lexical_weight=0)


def test_a_turn_before_that_reads_as_high_is_never_sent_in_a_context(t, pool, org, embedder):
    """GIVEN an indexed turn whose text now reads as high (as if an earlier build's guard had
    let it in)
    WHEN a plain turn is appended after it
    THEN the embedder is sent the new turn alone, in one call: its context vector is derived
    from the stored vectors, so no text of the turn before reaches the model again."""
    t.append("th-ctx", "we set up the vpn today", msg_id="P0")
    t.append("th-ctx", "the vpn login works", msg_id="old")
    secret = "the vpn login, password: Tr0ub4dor&3xyz"
    assert is_sensitive(secret)
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversation_embeddings SET text = %s WHERE org = %s AND msg_id = 'old'",
            (secret, org),
        )
    embedder.seen.clear()
    embedder.batches.clear()
    t.append("th-ctx", "thanks, connected fine", msg_id="N0")
    assert embedder.seen == ["thanks, connected fine"] and embedder.batches == [1]
    assert derived_from(pool, org, "th-ctx", "N0") == "old"


# ---- tombstones ----------------------------------------------------------------------------


def test_a_deleted_threads_turns_are_never_lexical_or_hybrid_hits(t, scope_path):
    """GIVEN a thread of three turns sharing a unique word, and another live thread
    WHEN an admin deletes the first thread
    THEN lexical, hybrid and semantic search return none of its turns (by its word or its
    exact text), while the other thread is still found.
    """
    w = word()
    gone = [t.append("th-del", f"{w} note number {n}", msg_id=f"d{n}")["msg_id"] for n in "abc"]
    kept = t.append("th-keep", "the kept thread talks about lanterns", msg_id="k0")["msg_id"]
    assert set(ids(hits(t, w, "lexical"))) == set(gone)

    t.ok(
        "conversation.delete",
        agent="",
        thread_id="th-del",
        confirm_thread_id="th-del",
        as_="admin",
    )

    for mode in ("lexical", "hybrid", "semantic"):
        for query in (w, f"{w} note number a"):
            assert not set(ids(hits(t, query, mode))) & set(gone), (mode, query)
    if scope_path == "exact":  # an HNSW scan may stop short of a few rows
        assert ids(hits(t, w, "hybrid")) == [kept]
    assert ids(hits(t, "lanterns", "lexical")) == [kept]


def test_one_agents_deleted_turns_leave_the_windows_of_another_agents_live_turns(t, pool, org):
    """GIVEN a thread where agent a2's turns surround a turn of agent a1 holding a unique word
    WHEN an admin deletes the thread as a1 (a2's turns stay live)
    THEN lexical and hybrid search never return a1's turn, the word finds no turn (no live
    window holds it), and the a2 turn after it has its own vector as context vector.
    """
    w = word()
    t.append("th-1", "the rota for next week is ready", msg_id="b0", agent="a2")
    t.append("th-1", f"swap my {w} shift please", msg_id="a1-turn", agent="a1")
    t.append("th-1", "done, swapped it", msg_id="b1", agent="a2", role="assistant")
    t.append("th-1", "thanks a lot", msg_id="b2", agent="a2")
    assert set(ids(hits(t, w, "lexical"))) == {"a1-turn", "b1", "b2"}
    assert context_state(pool, org, "th-1")["b1"] == ("a1-turn", False)

    t.ok("conversation.delete", agent="a1", thread_id="th-1", confirm_thread_id="th-1", as_="admin")

    assert hits(t, w, "lexical") == []
    assert windows_holding(pool, w, org, live_only=True) == []
    assert set(ids(hits(t, w, "hybrid"))) == {"b0", "b1", "b2"}
    assert context_state(pool, org, "th-1")["b1"] == (None, True)


def test_compacted_turns_leave_every_mode_and_every_window(t, deps, pool, org):
    """GIVEN a thread of 20 turns m00..m19 (each naming its own topic) compacted with a
    scripted summary (keep_recent 10)
    WHEN the thread is searched in every mode and its rows are read
    THEN no compacted turn comes back in semantic, lexical or hybrid mode and the summary
    is found first; no live window holds m08's or m09's topic any more (m10's and m11's did);
    m10, whose turn before was compacted, has its own vector as context vector with
    context_of NULL, while m11..m19 keep the context of the turn before them.
    """
    ids_ = []
    for i in range(20):
        role = ("user", "assistant")[i % 2]
        ids_.append(t.append("th", content(i), msg_id=f"m{i:02d}", role=role)["msg_id"])
    for topic in ("vineyard", "harbour"):
        assert {r[2] for r in windows_holding(pool, topic, org, live_only=True)} >= {"m10"}
    ctx = context_state(pool, org, "th")
    assert ctx["m10"] == ("m09", False) and ctx["m11"] == ("m10", False)

    deps._llm = ScriptedLLM(replies=deque([SUMMARY]))
    out = t.ok("conversation.compact", agent="a1", thread_id="th", keep_recent=10, as_="writer")
    assert out["compacted"] and out["messages_summarized"] == 10
    summary = out["summary_msg_id"]

    for mode in ("semantic", "lexical", "hybrid"):
        for i in range(10):
            assert not set(ids(hits(t, content(i), mode))) & set(ids_[:10]), (mode, i)
        assert ids(hits(t, "relocate the orchard and fire the kiln", mode))[0] == summary, mode
    for topic in ("vineyard", "harbour"):
        assert windows_holding(pool, topic, org, live_only=True) == []
    ctx = context_state(pool, org, "th")
    assert set(ctx) == {summary, *ids_[10:]}
    assert ctx["m10"] == (None, True)
    assert ctx[summary] == (None, True)
    for i in range(11, 20):
        assert ctx[f"m{i}"] == (f"m{i - 1}", False), i


def test_a_saved_only_message_is_in_no_window_before_or_after_its_unsave(t, pool, org):
    """GIVEN two messages saved in a namespace that does not record, the second holding a
    unique word
    WHEN they are searched, then the second is unsaved (its turn removed, its embedding row
    tombstoned)
    THEN no window ever holds the word (neither message is a transcript turn: neither has a
    window nor is another's neighbour), and no search mode finds either message."""
    w = word()
    save(t, "c1", "m1", "we discussed the garden fence today", namespace=OFF_NS)
    save(t, "c1", "m2", f"my private note mentions {w} here", namespace=OFF_NS)
    assert windows_holding(pool, w, org) == []
    for mode in ("semantic", "lexical", "hybrid"):
        assert hits(t, f"garden fence {w}", mode, namespace=OFF_NS) == [], mode
    assert unsave(t, "c1", "m2", namespace=OFF_NS)["removed"] is True
    assert windows_holding(pool, w, org) == []
    assert hits(t, w, "lexical", namespace=OFF_NS) == []


def _vectorless_copy_then_four_turns(t, embedder, thread_id: str, w: str) -> None:
    """m1 logged by agent A holding the word `w` while the embedder fails (a row with no vector,
    read by the windows after it), then four turns of agent B."""
    embedder.failing = True
    try:
        t.append(thread_id, f"agent one says {w} about the plan", msg_id="m1", agent="A")
    finally:
        embedder.failing = False
    for i in range(1, 5):
        t.append(thread_id, f"plain turn number {i} from b", msg_id=f"b{i}", agent="B")


def test_a_row_another_agents_copy_takes_over_leaves_no_window_where_it_stood(
    t, pool, org, embedder
):
    """GIVEN turn m1 logged by agent A with a unique word while the embedder fails (a row with
    no vector, read by the windows after it), then four turns of agent B
    WHEN B logs m1 with other text (its vector takes the row over and moves it to the end)
    THEN no live window holds A's word: those around where the row stood are rewritten."""
    w = word()
    _vectorless_copy_then_four_turns(t, embedder, "th-m", w)
    assert {m for _, _, m in windows_holding(pool, w, org, live_only=True)} >= {"b1", "b2"}
    t.append("th-m", "agent two logs a different text for m1", msg_id="m1", agent="B")
    assert windows_holding(pool, w, org, live_only=True) == []
    assert hits(t, w, "lexical") == []


def test_a_vector_written_after_a_concurrent_copy_failed_leaves_no_window_where_it_stood(
    t, pool, org, embedder
):
    """GIVEN agent A's and agent B's appends of m1 interleaved: A's turn is recorded, four turns
    of B follow, B's copy of m1 is recorded (no row of m1 has a vector yet), then A's embed
    fails and writes a row with A's word and no vector
    WHEN B's vector is written, taking that row over and moving it to B's time, and A's copies
    are deleted
    THEN no live window holds A's word and lexical search does not find it: the windows around
    where the row stood are rewritten in the vector's transaction, the row read under its lease."""
    w = word()
    model = embedder.name
    a = NewTurn(org, NS, "th-i", "A", "m1", "user", f"agent one says {w} about the plan")
    stored_a = inserted(pool, a)
    for i in range(1, 5):
        t.append("th-i", f"plain turn number {i} from b", msg_id=f"b{i}", agent="B")
    b = NewTurn(org, NS, "th-i", "B", "m1", "user", "agent two logs another text for m1")
    stored_b = inserted(pool, b)
    assert stored_a and stored_b
    write_embeddings(pool, model, [TurnVector(a, stored_a["m1"], a.content, None, "down")])
    assert {m for _, _, m in windows_holding(pool, w, org, live_only=True)} >= {"b1", "b2"}
    vector = embedder.embed_documents([b.content])[0]
    written = write_embeddings(
        pool, model, [TurnVector(b, stored_b["m1"], b.content, vector, None)]
    )
    assert written == {"m1"}
    t.ok("conversation.delete", agent="A", thread_id="th-i", confirm_thread_id="th-i",
         as_="admin")  # fmt: skip
    assert windows_holding(pool, w, org, live_only=True) == []
    assert hits(t, w, "lexical", thread_id="th-i") == []


def test_a_save_that_moves_a_row_leaves_no_window_where_it_stood(t, pool, org, embedder):
    """GIVEN m1 logged by agent A with a unique word and by agent B with other text, both embeds
    failing, four turns of B between them; a user saves A's copy (its embed fails again, so the
    row holds A's text where A's copy stands), then unsaves it
    WHEN the user saves B's copy (its vector moves the row to B's time) and A's copies are
    deleted
    THEN no live window holds A's word and lexical search does not find it."""
    w = word()
    _vectorless_copy_then_four_turns(t, embedder, "th-s", w)
    embedder.failing = True
    try:
        t.append("th-s", "agent two logs another text for m1", msg_id="m1", agent="B")
        assert save(t, "th-s", "m1", agent="A")["reason"] == "embed_failed"
    finally:
        embedder.failing = False
    unsave(t, "th-s", "m1")
    assert save(t, "th-s", "m1", agent="B")["indexed"] is True
    t.ok("conversation.delete", agent="A", thread_id="th-s", confirm_thread_id="th-s",
         as_="admin")  # fmt: skip
    assert windows_holding(pool, w, org, live_only=True) == []
    assert hits(t, w, "lexical", thread_id="th-s") == []


def test_a_save_over_an_expired_turns_row_leaves_none_of_its_text(t, deps, pool, org):
    """GIVEN a thread whose turn m1 (a unique word) expired under retention, its embedding row
    kept live as the spec keeps it
    WHEN a user saves message m1 with other text (the row moves to the save's time)
    THEN no live window holds the expired word, lexical search does not find it, and the turn
    read after m1 keeps no context vector read after the expired text."""
    w = word()
    t.append("th-x", "we are planning the team offsite", msg_id="p0")
    t.append("th-x", "the venue shortlist is ready", msg_id="p1", role="assistant")
    t.append("th-x", f"book the {w} lodge for friday", msg_id="m1")
    t.append("th-x", "done, it is booked", msg_id="n0", role="assistant")
    t.append("th-x", "great, thanks", msg_id="n1")
    t.append("th-x", "anything else today", msg_id="n2", role="assistant")
    assert context_state(pool, org, "th-x")["n0"] == ("m1", False)
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversations SET ts = now() - interval '40 days'"
            " WHERE org = %s AND msg_id = 'm1'",
            (org,),
        )
    with live_setting(pool, "retention_conversations_days", "30"):
        assert purge_expired_conversations(deps)["turns_removed"] >= 1
    assert save(t, "th-x", "m1", "a completely different note about lunch")["indexed"] is True
    assert windows_holding(pool, w, org, live_only=True) == []
    assert hits(t, w, "lexical", thread_id="th-x") == []
    assert context_state(pool, org, "th-x")["n0"] == (None, True)


def test_a_context_is_never_read_after_words_the_row_before_does_not_hold(t, deps, pool, org):
    """GIVEN turn m logged by agent A (its row holds A's words)
    WHEN agent B records, in one batch, its own copy of m with other words (which shares A's
    row) and then turn N
    THEN N's context vector is derived from the vector m's row holds (A's words): B's words of
    m, which no row holds, reach no vector, so nothing that removes B's copy (a delete, an
    erasure) could leave them behind."""
    t.append("th-c", "we are planning the garden", msg_id="p0", agent="A")
    t.append("th-c", "agent a logs m as plain text", msg_id="m", agent="A")
    bob = f"bob private words {word()} about his diagnosis"
    record_turns(
        deps,
        [
            NewTurn(org, NS, "th-c", "B", "m", "user", bob, user_id="u-bob"),
            NewTurn(org, NS, "th-c", "B", "N", "assistant", "noted, thanks for telling me"),
        ],
    )
    assert derived_from(pool, org, "th-c", "N") == "m"
    with pool.connection() as conn:
        (text,) = conn.execute(
            "SELECT text FROM loom.conversation_embeddings WHERE org = %s AND msg_id = 'm'",
            (org,),
        ).fetchone()
    assert text == "agent a logs m as plain text"


def test_a_context_read_after_a_copy_of_the_words_an_earlier_row_cut_short_is_kept(
    t, deps, pool, org
):
    """GIVEN turn m of 720 characters logged by agent A, its row holding only its first 240
    (as an earlier build cut it)
    WHEN agent B records, in one batch, its copy of m (the same words) and then turn N
    THEN N's context vector is the one read after m: the row holds the start of those words."""
    long = "the long turn about the garden plan " * 20
    t.append("th-k", "we are planning", msg_id="p0", agent="A")
    t.append("th-k", long, msg_id="m", agent="A")
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversation_embeddings SET text = left(text, 240)"
            " WHERE org = %s AND msg_id = 'm'",
            (org,),
        )
    record_turns(
        deps,
        [
            NewTurn(org, NS, "th-k", "B", "m", "user", long),
            NewTurn(org, NS, "th-k", "B", "N", "assistant", "noted, thanks for the plan"),
        ],
    )
    assert context_state(pool, org, "th-k")["N"] == ("m", False)


def test_saving_a_turn_whose_embed_failed_keeps_the_next_turns_context(t, pool, org, embedder):
    """GIVEN turn m appended while the embedder failed (a row with no vector at its place),
    then turn N, whose context vector is its own (the row before it has none to add)
    WHEN a user saves m with the same words (embedding it in place)
    THEN N keeps its context vector: the save moved nothing."""
    t.append("th-v", "we are planning", msg_id="p0")
    embedder.failing = True
    try:
        t.append("th-v", "the message worth keeping", msg_id="m")
    finally:
        embedder.failing = False
    t.append("th-v", "noted, thanks", msg_id="N", role="assistant")
    assert context_state(pool, org, "th-v")["N"] == (None, True)
    assert save(t, "th-v", "m", "the message worth keeping")["indexed"] is True
    assert context_state(pool, org, "th-v")["N"] == (None, True)


def test_a_context_is_derived_from_the_row_as_it_stands_when_the_vector_is_written(
    t, deps, pool, org, embedder
):
    """GIVEN turn m logged by agent A while the embedder fails (a row of A's words with no
    vector), and turn N recorded after it
    WHEN agent B's vector takes m's row over with other words before N's vector is written
    THEN N's context vector is derived from the vector m's row holds then (B's), under the
    thread's lease: never from a vector of words the row no longer holds."""
    model = embedder.name
    t.append("th-t", "we are planning the garden", msg_id="p0", agent="A")
    a_words = f"agent one says {word()} about the plan"
    embedder.failing = True
    try:
        t.append("th-t", a_words, msg_id="m", agent="A")
    finally:
        embedder.failing = False
    b = NewTurn(org, NS, "th-t", "B", "m", "user", "agent two logs another text for m")
    stored_b = inserted(pool, b)
    n = NewTurn(org, NS, "th-t", "B", "N", "assistant", "noted, thanks")
    stored_n = inserted(pool, n)
    assert stored_b and stored_n
    vector = embedder.embed_documents([b.content])[0]
    write_embeddings(pool, model, [TurnVector(b, stored_b["m"], b.content, vector, None)])
    turn_writer._embed(deps, [n], dict(stored_n))
    assert derived_from(pool, org, "th-t", "N") == "m"
    with pool.connection() as conn:
        (text,) = conn.execute(
            "SELECT text FROM loom.conversation_embeddings WHERE org = %s AND msg_id = 'm'",
            (org,),
        ).fetchone()
    assert text == b.content


def test_a_row_a_save_revives_has_no_context_vector_of_its_earlier_text(t, pool, org, embedder):
    """GIVEN turn m1 logged by agent A (holding a unique word) and, with other text, by agent B,
    after a turn m0; A's copies are deleted, so the shared row (A's text) is tombstoned
    WHEN B saves its copy of m1, reviving the row with B's text
    THEN the row's context vector is its own vector, read after no turn: it keeps nothing of
    A's deleted text, and its context vector no longer ranks m1 by A's word."""
    w = word()
    t.append("th-r", "alpha opening turn", msg_id="m0", agent="B")
    t.append("th-r", f"agent a private words {w} {w} {w}", msg_id="m1", agent="A")
    t.append("th-r", "b copy says something else", msg_id="m1", agent="B")
    t.ok("conversation.delete", agent="A", thread_id="th-r", confirm_thread_id="th-r",
         as_="admin")  # fmt: skip
    assert "m1" not in context_state(pool, org, "th-r")  # tombstoned: the texts differ
    save(t, "th-r", "m1", "b copy says something else", agent="B")
    assert context_state(pool, org, "th-r")["m1"] == (None, True)
    assert windows_holding(pool, w, org, live_only=True) == []


# ---- appends -------------------------------------------------------------------------------


def test_appends_extend_the_windows_after_them_and_rewrite_no_other_row(t, pool, org):
    """GIVEN a thread A, B
    WHEN C (holding a unique word) is appended, then D, E and F
    THEN the word finds nothing before C, then C, then also D, then E, and still not F (a
    window reads only the two turns before it); and no append writes another row: every
    earlier row keeps the version it was written with."""
    w = word()
    t.append("th-1", "first turn about the garden shed", msg_id="A")
    t.append("th-1", "second turn about paint colours", msg_id="B", role="assistant")
    assert hits(t, w, "lexical") == []
    expected = {
        "C": {"C"},
        "D": {"C", "D"},
        "E": {"C", "D", "E"},
        "F": {"C", "D", "E"},
    }

    def versions() -> dict[str, str]:
        with pool.connection() as conn:
            rows = conn.execute(
                "SELECT msg_id, xmin::text FROM loom.conversation_embeddings"
                " WHERE org = %s AND thread_id = 'th-1'",
                (org,),
            ).fetchall()
        return dict(rows)

    for name, found in expected.items():
        before = versions()
        text = f"we picked {w} in the end" if name == "C" else f"turn {name.lower()} moves on"
        t.append("th-1", text, msg_id=name)
        assert set(ids(hits(t, w, "lexical"))) == found, name
        after = versions()
        assert {m: after[m] for m in before} == before, name


def test_hybrid_ranks_the_turn_before_a_lexical_hit_within_the_callers_scope(t):
    """GIVEN a question turn by user u-1 and the answer after it (holding a unique word), and
    the same shape where the question was asked by another user, u-2
    WHEN hybrid search asks for the word, as everyone and filtered to u-1's turns
    THEN the question turn before each answer is ranked with it (a window holds a turn and the
    two before it, so the turn it answers comes before); filtered, u-2's question is not."""
    w = word()
    t.append("th-1", "which paint did we choose for the shed", msg_id="q1", user_id="u-1")
    t.append("th-1", f"you chose {w} in the end", msg_id="a1", role="assistant", user_id="u-1")
    t.append("th-2", "which paint for the fence then", msg_id="q2", user_id="u-2")
    t.append("th-2", f"also {w} for the fence", msg_id="a2", role="assistant", user_id="u-1")
    assert set(ids(hits(t, w, "lexical"))) == {"a1", "a2"}
    assert {"q1", "q2", "a1", "a2"} <= set(ids(hits(t, w, "hybrid")))
    mine = set(ids(hits(t, w, "hybrid", user_id="u-1")))
    assert {"q1", "a1", "a2"} <= mine and "q2" not in mine


# ---- scopes --------------------------------------------------------------------------------

WORDS = "invoice reminder quarterly"
SPEC = {
    "T1": dict(thread_id="th-1", run_id="r-1", role="user", user_id="u-1", agent="a1"),
    "T2": dict(thread_id="th-2", run_id="r-2", role="assistant", user_id="u-2", agent="a2"),
    "T3": dict(thread_id="th-1", run_id="r-2", role="assistant", user_id="u-1", agent="a1"),
    "T4": dict(thread_id="th-2", run_id="r-1", role="user", user_id="u-2", agent="a2"),
}
FILTERS = [
    ({"thread_id": "th-1"}, {"T1", "T3"}),
    ({"run_id": "r-1"}, {"T1", "T4"}),
    ({"role": "user"}, {"T1", "T4"}),
    ({"user_id": "u-1"}, {"T1", "T3"}),
    ({"user_id": "u-2"}, {"T2", "T4"}),
    ({"agent": "a2"}, {"T2", "T4"}),
    ({"agent": "a3"}, set()),
    ({"thread_id": "th-1", "role": "assistant"}, {"T3"}),
    ({"run_id": "r-2", "user_id": "u-2"}, {"T2"}),
]


def _write(tenant: Tenant, prefix: str, namespace: str = NS) -> None:
    for name, fields in SPEC.items():
        fields = dict(fields)
        thread = fields.pop("thread_id")
        text = f"{WORDS} {name.lower()}"
        tenant.append(thread, text, msg_id=f"{prefix}{name}", namespace=namespace, **fields)


@pytest.fixture(params=["exact", "index"])
def scope_path(request, tune):
    """How a scope is read: "exact" as a small one is (every row ranked, BM25's statistics
    counted whole), "index" as a large one is (the HNSW indexes, BM25's sampled statistics)."""
    if request.param == "index":
        tune(exact_scan_max_rows=0, sample_rows=2)
    return request.param


@pytest.mark.parametrize("mode", MODES)
def test_every_leg_keeps_to_the_callers_org_namespaces_and_filters(api, deps, t, mode, scope_path):
    """GIVEN four turns in NS that differ in thread, run, role, user and agent, the same
    turns in a sibling namespace, and another org holding them in NS and the sibling
    WHEN lexical or hybrid search asks for their shared words, with each scope read as a small
    one and as a large one (the HNSW indexes)
    THEN namespace_scope this reads NS's four only; all_mine (the default) adds the sibling's
    and nothing of the other org; a token bound to NS reads NS only; each filter keeps exactly
    the turns matching it; a word only the other org's thread (same thread id) or the sibling's
    holds finds no turn of NS's thread.
    """
    sib = "ns-sib"
    t.set_logging(sib, True)
    _write(t, "m")
    _write(t, "s", sib)
    other = Tenant.open(api, deps, f"org-{uuid.uuid4().hex[:10]}", logging_on=(NS, sib))
    _write(other, "o")
    _write(other, "o", sib)
    w_other, w_sib = word(), word()
    other.append("th-1", f"{WORDS} {w_other}", msg_id="o-late")
    t.append("th-1", f"{WORDS} {w_sib}", msg_id="s-late", namespace=sib)
    mine = {f"m{n}" for n in SPEC}

    def found(query: str = WORDS, **kw) -> list[tuple[str, str]]:
        return [(h["namespace"], h["msg_id"]) for h in hits(t, query, mode, **kw)]

    assert sorted(found()) == sorted((NS, m) for m in mine)
    fanned = found(namespace_scope="all_mine")
    assert {m for _, m in fanned} == mine | {f"s{n}" for n in SPEC} | {"s-late"}
    assert {ns for ns, m in fanned if m.startswith("s")} == {sib}
    bound = t.token("viewer", namespace=NS)
    out = t.ok(
        "conversation.search",
        token=bound,
        namespace=None,
        agent="*",
        query=WORDS,
        search_mode=mode,
        top_k=200,
    )
    assert {h["msg_id"] for h in out["hits"]} == mine

    for filters, expected in FILTERS:
        got = {m for _, m in found(**filters)}
        assert got == {f"m{n}" for n in expected}, filters

    for query in (w_other, w_sib):
        got = {m for _, m in found(query)}
        if mode == "lexical":
            assert got == set(), query
        elif scope_path == "exact":
            assert got == mine, query  # hybrid: vectors, no floor
        else:  # an HNSW scan may stop short of a few rows among the database's many
            assert got <= mine, query
    assert found(w_other, namespace_scope="all_mine", thread_id="th-1", role="system") == []


# ---- embedder failure ----------------------------------------------------------------------


class QueryDown(FakeEmbedder):
    """Embeds documents, but every query embedding fails; counts the attempts."""

    def __init__(self) -> None:
        super().__init__()
        self.queries = 0

    def embed_query(self, text: str) -> np.ndarray:
        self.queries += 1
        raise EmbedderError("query embeddings are down")


def test_without_the_embedder_hybrid_is_lexical_and_semantic_falls_back(t, deps):
    """GIVEN turns mentioning "pallet" once, twice and not at all, in two threads
    WHEN every query embedding fails
    THEN hybrid answers exactly the lexical hits (same order, scores and excerpts); semantic
    answers the substring fallback (the turns holding "pallet", newest first, no similarity
    or score); lexical never asks the embedder for a query vector, hybrid and semantic do.
    """
    t.append("th-1", "the pallet arrived on monday", msg_id="p1")
    t.append("th-1", "a plain reply in between", msg_id="p2", role="assistant")
    t.append("th-1", "three more turns and nothing else", msg_id="p3")
    t.append("th-2", "a pallet, then another pallet, both damaged", msg_id="p4")
    t.append("th-2", "sorry to hear that", msg_id="p5", role="assistant")
    expected_lexical = hits(t, "pallet damaged", "lexical")
    assert len(expected_lexical) >= 4

    down = QueryDown()
    deps._embedder = down
    lexical = hits(t, "pallet damaged", "lexical")
    assert down.queries == 0
    assert lexical == expected_lexical
    assert hits(t, "pallet damaged", "hybrid") == lexical
    assert down.queries == 1
    # Even with lexical_weight 0, which leaves BM25 out beside the vectors.
    assert hits(t, "pallet damaged", "hybrid", lexical_weight=0) == lexical
    assert down.queries == 2

    fallback = hits(t, "pallet", "semantic")
    assert ids(fallback) == ["p4", "p1"]
    assert all(h["similarity"] is None and h["score"] is None for h in fallback)
    assert down.queries == 3


# ---- lexical_weight ------------------------------------------------------------------------


def _vectors(pool, org: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """msg_id -> (the turn's vector, its context vector) of every live embedded row."""
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT msg_id, embedding::text, context_embedding::text"
            " FROM loom.conversation_embeddings"
            " WHERE org = %s AND tombstoned_at IS NULL AND embedding IS NOT NULL",
            (org,),
        ).fetchall()
    return {m: (np.asarray(json.loads(v)), np.asarray(json.loads(c))) for m, v, c in rows}


def _ranked(sims: dict[str, float]) -> list[str]:
    return sorted(sims, key=lambda m: (-round(sims[m], 6), m))


def _fused(legs: list[tuple[list[str], float]]) -> list[tuple[str, float]]:
    scores: dict[str, float] = {}
    for ranked, weight in legs:
        if weight <= 0:
            continue
        for rank, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (RRF_K + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])


def _hybrid(pool, org: str, query: str, lexical: list[str], weight: float):
    """The hybrid ranking as decision 0013 states it: the VECTOR_LEG_DEPTH turns nearest by their
    own vector, with the BM25 hits (none at weight 0), ranked by each vector (weight 0.5 each)
    and fused with BM25's ranking (the weight) by reciprocal rank; [(msg_id, score)] best
    first."""
    q = FakeEmbedder().embed_query(query)
    vectors = _vectors(pool, org)

    def cos(v: np.ndarray) -> float:
        return float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q)))

    near = _ranked({m: cos(v) for m, (v, _) in vectors.items()})[:VECTOR_LEG_DEPTH]
    found = set(near) | (set(lexical) if weight else set())  # weight 0: no BM25 read
    own = _ranked({m: cos(vectors[m][0]) for m in found})
    in_context = _ranked({m: cos(vectors[m][1]) for m in found})
    return _fused([(own, 0.5), (in_context, 0.5), (lexical, weight)])


def test_lexical_weight_scales_the_bm25_leg_of_the_fusion(t, pool, org):
    """GIVEN a thread where Z0 holds a rare word, Z1 follows it and T (two turns later) holds
    it only in its window, beside six turns sharing only the stop word "the" with the query
    (a word the vectors weigh and BM25 drops)
    WHEN hybrid search asks for the word and "the" with lexical_weight 0, 0.5 and 1
    THEN each answer is the reciprocal-rank fusion of the turns' ranks by their two vectors
    (weight 0.5 each) and the lexical leg scaled by the weight (with 0, the vectors' rankings
    of their own leg's turns alone); with top_k 3,
    T (found only by its window) is missing at weight 0 and present at weight 1.
    """
    w = "zqvartok"  # fixed: the vector ranks this test relies on are then fixed too
    thread = [
        ("Z0", f"the {w} is back in stock"),
        ("Z1", "great, reserve one for me"),
        ("T", "and check the warehouse hours"),
    ]
    for name, text in thread:
        t.append("th-z", text, msg_id=name)
    others = ["gardening tips", "train delays", "budget review", "tax forms", "cat food", "jazz"]
    for n, text in enumerate(others):
        t.append(f"th-{n}", f"{'the ' * (n + 1)}note on {text}", msg_id=f"o{n}")  # no ties
    query = f"{w} the"

    lexical = ids(hits(t, query, "lexical"))
    assert set(lexical) == {"Z0", "Z1", "T"}
    for weight in (0, 0.5, 1):
        found = hits(t, query, "hybrid", lexical_weight=weight)
        got = [(h["msg_id"], h["score"]) for h in found]
        expected = _hybrid(pool, org, query, lexical, weight)
        assert [m for m, _ in got] == [m for m, _ in expected], weight
        assert [s for _, s in got] == pytest.approx([s for _, s in expected]), weight

    assert "T" not in ids(hits(t, query, "hybrid", lexical_weight=0, top_k=3))
    assert "T" in ids(hits(t, query, "hybrid", lexical_weight=1, top_k=3))


def test_a_turn_bm25_finds_beyond_the_vector_legs_depth_is_ranked_by_both_its_vectors(t, pool, org):
    """GIVEN a turn holding a rare word, and more turns than the vector leg reads
    (VECTOR_LEG_DEPTH) that are each nearer the query's vector (they repeat its stop word) but
    hold no query word BM25 counts
    WHEN hybrid search asks for the rare word and the stop word
    THEN the rare turn (outside the vector leg's reach, found by BM25 alone) still carries
    its own vector's similarity, and its score is its BM25 rank's plus its ranks by its own
    and its context vector among every turn either leg found.
    """
    w = word()
    t.append("th-rare", f"{w} shipment arrived", msg_id="rare")
    for n in range(VECTOR_LEG_DEPTH + 10):
        t.append(f"th-f{n % 7}", f"the the the filler {n}", msg_id=f"f{n:02d}")
    query = f"{w} the the"
    vectors = _vectors(pool, org)
    q = FakeEmbedder().embed_query(query)
    own = {m: float(v @ q / np.linalg.norm(v)) for m, (v, _) in vectors.items()}
    assert "rare" not in _ranked(own)[:VECTOR_LEG_DEPTH]  # beyond the vector leg's depth

    lexical = ids(hits(t, query, "lexical"))
    assert lexical == ["rare"]
    found = {h["msg_id"]: h for h in hits(t, query, "hybrid", top_k=10)}  # VECTOR_LEG_DEPTH
    assert found["rare"]["similarity"] == pytest.approx(float(vectors["rare"][0] @ q), abs=1e-5)
    expected = dict(_hybrid(pool, org, query, lexical, 1.0))
    # Every turn the vector leg read is nearer by both vectors: the rare one ranks after them.
    assert found["rare"]["score"] == pytest.approx(expected["rare"])
    beyond = 1 / (RRF_K + VECTOR_LEG_DEPTH + 1)  # ranked after every turn the vector leg read
    assert expected["rare"] == pytest.approx(1 / (RRF_K + 1) + beyond)
    assert found["rare"]["score"] > 1.0 / (RRF_K + 1)  # more than its BM25 rank alone


# ---- the large-scope BM25 path -------------------------------------------------------------

COMMON, HALF = "plinth", "gantry"  # in every turn; in the turns of threads 0-9 only
FLAVOURS = ["amber", "cobalt", "crimson", "ochre", "teal", "umber", "violet", "saffron"]


@pytest.fixture
def corpus(t, deps, org):
    """200 turns in 20 threads of 10; t07's fifth turn holds a rare word twice."""
    rare = word()
    for th in range(20):
        turns = []
        for i in range(10):
            extra = f" {HALF}" if th < 10 else ""
            text = f"turn {i} says {COMMON}{extra} and {FLAVOURS[(th + i) % 8]}"
            if (th, i) == (7, 4):
                text = f"{rare} {text} {rare}"
            turns.append(
                NewTurn(
                    org=org,
                    namespace=NS,
                    thread_id=f"t{th:02d}",
                    agent="a1",
                    msg_id=f"t{th:02d}-{i}",
                    role=("user", "assistant")[i % 2],
                    content=text,
                )
            )
        assert all(r.stored for r in record_turns(deps, turns))
    return rare


def test_the_large_scope_path_ranks_a_rare_word_as_the_exact_path_does(t, deps, corpus, tune):
    """GIVEN 200 indexed turns and a rare word t07-4 holds twice (so three windows hold it)
    WHEN lexical search asks for the rare word with a common one, first with exact
    statistics, then with sample_rows 30 and rare_df 8 (the large-scope path)
    THEN the large path answers the three windows holding the rare word, the same three the
    exact path ranks first, with the same top hit.
    """
    query = f"{corpus} {COMMON}"
    exact = ids(hits(t, query, "lexical"))
    assert deps.search_caches.stats == {}  # a scope within sample_rows: statistics are exact
    assert len(exact) == 200

    large_path = tune(**LARGE)
    large = ids(hits(t, query, "lexical"))
    assert large_path.search_caches.stats  # the large path counted the scope
    assert set(large) == {"t07-4", "t07-5", "t07-6"}
    assert set(exact[:3]) == set(large)
    assert large[0] == exact[0]
    assert ids(hits(t, query, "lexical")) == large  # again, with the scope's size known


def test_a_rare_word_the_sample_never_met_is_counted_and_found(t, deps, corpus, tune):
    """GIVEN 200 indexed turns in 20 threads and a rare word only t07-4 holds (so three windows
    hold it), on the large-scope path with a sample of the first 50 windows (threads 0-4)
    WHEN lexical search asks for the rare word with a common one
    THEN the sample never met the word, yet the answer is the three windows holding it: the
    word was counted through the index and gathered them.
    """
    served = tune(large_sample_rows=50, **LARGE)
    found = ids(hits(t, f"{corpus} {COMMON}", "lexical"))
    (sample,) = [value for _, value in served.search_caches.lexicons.values()]
    assert corpus not in sample[1]  # the sample's lexicon
    assert set(found) == {"t07-4", "t07-5", "t07-6"}


def test_the_large_scope_path_answers_common_words_from_windows_holding_all(t, corpus, tune):
    """GIVEN 200 indexed turns, every one naming "plinth" and those of threads 0-9 "gantry"
    WHEN lexical search asks for "plinth gantry" on the large-scope path (sample_rows 30,
    rare_df 8), and hybrid search does too
    THEN the lexical answer is the 100 windows holding both words (threads 0-9), and hybrid
    still answers.
    """
    large_path = tune(**LARGE)
    found = hits(t, f"{COMMON} {HALF}", "lexical")
    assert large_path.search_caches.stats
    assert len(found) == 100
    assert {h["thread_id"] for h in found} == {f"t{n:02d}" for n in range(10)}
    assert hits(t, f"{COMMON} {HALF}", "hybrid", top_k=10)


def test_a_word_no_window_holds_leaves_the_common_words_answer_alone(t, corpus, tune):
    """GIVEN 200 indexed turns, "plinth" in all and "gantry" in threads 0-9's
    WHEN lexical search asks for both and a word no turn holds, on the large-scope path
    THEN the answer is the 100 windows holding both common words, as without the word.
    """
    tune(**LARGE)
    found = hits(t, f"{COMMON} {HALF} {word()}", "lexical")
    assert len(found) == 100
    assert {h["thread_id"] for h in found} == {f"t{n:02d}" for n in range(10)}


def test_common_words_no_window_holds_together_fall_back_to_windows_holding_either(t, corpus, tune):
    """GIVEN 200 indexed turns whose flavour words follow one another in each thread, so no
    window (a turn and the two before it) names both "amber" and "teal"
    WHEN lexical search asks for both on the large-scope path, then with no fallback gather
    THEN the answer is windows naming one of them, best first; without the fallback, nothing.
    """
    tune(**LARGE)
    found = hits(t, "amber teal", "lexical", top_k=20)
    assert len(found) == 20

    def window_flavours(h: dict) -> set[str]:
        th, i = int(h["thread_id"][1:]), int(h["msg_id"].split("-")[1])
        return {FLAVOURS[(th + j) % 8] for j in range(max(i - 2, 0), i + 1)}

    assert all(window_flavours(h) & {"amber", "teal"} for h in found)
    assert all(not {"amber", "teal"} <= window_flavours(h) for h in found)
    tune(fallback_candidates=0, **LARGE)
    assert hits(t, "amber teal", "lexical", top_k=20) == []


def test_the_large_scope_path_ranks_common_words_as_the_exact_path_does(t, corpus, tune):
    """GIVEN 200 indexed turns, every one naming "plinth" (once in its own text)
    WHEN lexical search asks for "plinth", exactly and then on the large-scope path
    THEN both give positive BM25 scores (an estimated document frequency never exceeds the
    scope) and the same top hit.
    """
    exact = hits(t, COMMON, "lexical")
    tune(**LARGE)
    large = hits(t, COMMON, "lexical")
    assert all(h["score"] > 0 for h in exact)
    assert all(h["score"] > 0 for h in large)
    assert large[0]["msg_id"] == exact[0]["msg_id"]


def _estimated_df(served: Deps, stem: str) -> float:
    """The document frequency the large-scope path estimated for a lexeme."""
    stats = served.search_caches.stats
    (df,) = [value[0] for k, (_, value) in stats.items() if len(k) == 3 and k[2] == stem]
    return df


def test_a_large_scopes_new_words_are_counted_in_one_sample_a_minute(t, corpus, pool, tune):
    """GIVEN 200 indexed turns, "plinth" in all and "gantry" in the 100 of threads 0-9, on the
    large-scope path (sample_rows 30, rare_df 8; its sample holds all 200 windows)
    WHEN lexical search asks for "gantry", then for "plinth" (a word not yet counted), then
    again once the minute the sample is kept for has passed
    THEN the scope is sampled once for the first two queries, both words counted in it (100
    and 200 windows), and sampled again after the minute.
    """
    now = [0.0]
    served = tune(SearchCaches(clock=lambda: now[0]), **LARGE)
    assert len(hits(t, HALF, "lexical")) == 100
    assert len(hits(t, COMMON, "lexical")) == 200
    assert served.search_caches.samples_drawn == 1
    assert _estimated_df(served, "gantri") == 100 and _estimated_df(served, COMMON) == 200

    now[0] += served.search_tuning.stats_ttl_seconds + 1  # a minute later
    assert len(hits(t, HALF, "lexical")) == 100
    assert served.search_caches.samples_drawn == 2


# ---- the semantic floor --------------------------------------------------------------------


def test_the_semantic_floor_still_holds_and_hybrid_has_none(t, pool):
    """GIVEN turns unrelated to the query, and one weakly related
    WHEN semantic search asks (default floor, then a live floor of 0.99) and hybrid asks
    THEN semantic returns nothing for the unrelated query and drops the weak turn under the
    0.99 floor, while hybrid returns every turn either way.
    """
    t.append("th-1", "zulu yankee xray whiskey victor", msg_id="u1")
    t.append("th-1", "tango sierra romeo quebec papa", msg_id="u2")
    t.append("th-2", "alpha bravo foxtrot golf hotel india", msg_id="weak")

    assert hits(t, "alpha bravo charlie delta echo", "semantic") != []
    assert hits(t, "kilo lima mike november oscar", "semantic") == []
    assert set(ids(hits(t, "kilo lima mike november oscar", "hybrid"))) == {"u1", "u2", "weak"}
    with live_setting(pool, "conversation_search_min_similarity", "0.99"):
        assert hits(t, "alpha bravo charlie delta echo", "semantic") == []
        found = hits(t, "alpha bravo charlie delta echo", "hybrid")
    assert set(ids(found)) == {"u1", "u2", "weak"}
    assert ids(found)[0] == "weak"


# ---- erasure -------------------------------------------------------------------------------


def test_an_erased_users_words_leave_the_windows_of_the_turns_around_them(t, pool, org):
    """GIVEN a thread where user u-ann says a unique word, followed by two assistant turns
    for no user
    WHEN u-ann is erased (erasure.request kind user)
    THEN lexical search for the word finds nothing, no live window holds it, and the turn
    after hers no longer keeps a context vector read after her turn.
    """
    w = word()
    t.append("th-1", "hello, how can I help", msg_id="a0", role="assistant")
    t.append("th-1", f"my locker code word is {w}", msg_id="ann", user_id="u-ann")
    t.append("th-1", "understood, noted for later", msg_id="a1", role="assistant")
    t.append("th-1", "anything else today", msg_id="a2", role="assistant")
    assert set(ids(hits(t, w, "lexical"))) == {"ann", "a1", "a2"}

    t.ok("erasure.request", namespace=None, kind="user", user_id="u-ann")

    assert hits(t, w, "lexical") == []
    assert windows_holding(pool, w, org, live_only=True) == []
    assert context_state(pool, org, "th-1")["a1"] == (None, True)
