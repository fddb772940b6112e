"""conversation.search: floor, excerpts, filters, order, namespace fan-out and the fallback."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from chalicelib.providers.embedder import FakeEmbedder
from tests.integration.test_conversation_support import NS, Tenant, live_setting


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


def cosine(a: str, b: str) -> float:
    """The similarity the stock FakeEmbedder gives two texts."""
    fake = FakeEmbedder()
    return float(np.dot(fake.embed_query(a), fake.embed_query(b)))


QUERY = "alpha bravo charlie delta echo"
STRONG = "alpha bravo charlie delta echo"
WEAK = "alpha bravo foxtrot golf hotel india"
UNRELATED = "zulu yankee xray whiskey victor"


def test_hits_come_most_similar_first_and_the_default_floor_drops_unrelated_turns(t):
    """GIVEN a turn equal to the query, one sharing two of its words, and an unrelated one
    WHEN conversation.search runs with the default floor (0.30 for this embedder)
    THEN the equal turn comes first, the weak one second, and the unrelated one not at all.
    """
    assert 0.30 < cosine(QUERY, WEAK) < 0.9 and cosine(QUERY, UNRELATED) < 0.30
    weak = t.append("th-1", WEAK)
    unrelated = t.append("th-1", UNRELATED)
    strong = t.append("th-1", STRONG, role="assistant")

    hits = t.search(QUERY)["hits"]

    assert [h["msg_id"] for h in hits] == [strong["msg_id"], weak["msg_id"]]
    assert unrelated["msg_id"] not in [h["msg_id"] for h in hits]
    sims = [h["similarity"] for h in hits]
    assert sims == sorted(sims, reverse=True)
    assert sims[0] == pytest.approx(1.0, abs=1e-4)
    assert sims[1] == pytest.approx(cosine(QUERY, WEAK), abs=1e-4)


def test_a_live_floor_drops_weak_hits(t, pool):
    """GIVEN a strong and a weak match, and conversation_search_min_similarity set live to 0.9
    WHEN conversation.search runs
    THEN only the strong match is returned; removing the setting brings the weak one back.
    """
    weak = t.append("th-1", WEAK)
    strong = t.append("th-1", STRONG)
    assert set(t.hit_ids(QUERY)) == {weak["msg_id"], strong["msg_id"]}

    with live_setting(pool, "conversation_search_min_similarity", "0.9"):
        assert t.hit_ids(QUERY) == [strong["msg_id"]]
        t.append("th-1", "alpha bravo charlie")  # a fresh turn below 0.9 is dropped too
        assert t.hit_ids(QUERY) == [strong["msg_id"]]

    assert weak["msg_id"] in t.hit_ids(QUERY)


def test_excerpts_are_cut_at_the_live_excerpt_length(t, pool):
    """GIVEN a 300-character turn
    WHEN it is found with the default excerpt length, then with
    conversation_search_excerpt_chars set live to 10
    THEN the excerpt is its first 240 characters, then its first 10.
    """
    content = ("alpha bravo charlie " * 20)[:300]
    t.append("th-1", content)

    (hit,) = t.search(QUERY)["hits"]
    assert hit["excerpt"] == content[:240]

    with live_setting(pool, "conversation_search_excerpt_chars", "10"):
        (hit,) = t.search(QUERY)["hits"]
    assert hit["excerpt"] == content[:10]


@pytest.fixture
def four_turns(t):
    """Four matching turns that differ in thread, run, role, user and agent."""
    spec = {
        "T1": dict(thread_id="th-1", run_id="r-1", role="user", user_id="u-1", agent="a1"),
        "T2": dict(thread_id="th-2", run_id="r-2", role="assistant", user_id="u-2", agent="a2"),
        "T3": dict(thread_id="th-1", run_id="r-2", role="assistant", user_id="u-1", agent="a1"),
        "T4": dict(thread_id="th-2", run_id="r-1", role="user", user_id="u-2", agent="a2"),
    }
    ids = {}
    for name, fields in spec.items():
        fields = dict(fields)
        thread = fields.pop("thread_id")
        out = t.append(thread, f"invoice reminder for march {name.lower()}", **fields)
        ids[out["msg_id"]] = name
    return ids


def _names(t, ids, **filters):
    return sorted(ids[m] for m in t.hit_ids("invoice reminder march", **filters))


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["T1", "T2", "T3", "T4"]),
        ({"thread_id": "th-1"}, ["T1", "T3"]),
        ({"run_id": "r-1"}, ["T1", "T4"]),
        ({"run_id": "-"}, ["T1", "T2", "T3", "T4"]),
        ({"role": "user"}, ["T1", "T4"]),
        ({"user_id": "u-1"}, ["T1", "T3"]),
        ({"user_id": "-"}, ["T1", "T2", "T3", "T4"]),
        ({"thread_id": "th-1", "role": "assistant"}, ["T3"]),
        ({"run_id": "r-2", "user_id": "u-2"}, ["T2"]),
    ],
)
def test_thread_run_role_and_user_filters_narrow_the_hits(t, four_turns, filters, expected):
    """GIVEN four matching turns that differ in thread, run, role and user
    WHEN conversation.search is filtered by one or more of them
    THEN exactly the turns matching every filter are returned ("-" means every run or user).
    """
    assert _names(t, four_turns, **filters) == expected


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ("*", ["T1", "T2", "T3", "T4"]),
        ("-", ["T1", "T2", "T3", "T4"]),
        ("", ["T1", "T2", "T3", "T4"]),
        ("a1", ["T1", "T3"]),
        ("a2", ["T2", "T4"]),
        ("a3", []),
    ],
)
def test_the_agent_filter(t, four_turns, agent, expected):
    """GIVEN matching turns written by agents a1 and a2
    WHEN conversation.search runs with agent "*", "-" or "" and with one agent's name
    THEN the first three read every agent's turns, a name reads only that agent's.
    """
    assert _names(t, four_turns, agent=agent) == expected


def test_hits_name_the_turn(t):
    """GIVEN a turn with run, user and agent
    WHEN it is found
    THEN the hit carries its msg_id, thread, role, agent, user, run, ts and namespace.
    """
    out = t.append("th-9", STRONG, role="assistant", agent="a7", user_id="u-7", run_id="r-7")
    (hit,) = t.search(QUERY)["hits"]
    assert {k: hit[k] for k in ("msg_id", "thread_id", "role", "agent", "user_id", "run_id")} == {
        "msg_id": out["msg_id"],
        "thread_id": "th-9",
        "role": "assistant",
        "agent": "a7",
        "user_id": "u-7",
        "run_id": "r-7",
    }
    assert hit["namespace"] == NS and hit["ts"] == out["ts"]


# ---- namespaces ----------------------------------------------------------------------------


def test_all_mine_reads_the_orgs_other_namespaces_and_this_does_not(t):
    """GIVEN a matching turn in a sibling namespace of the same org
    WHEN an org-wide token searches from NS with namespace_scope all_mine (the default), then this
    THEN the first finds it (naming its namespace), the second does not.
    """
    t.set_logging("ns-sibling", True)
    there = t.append("th-1", STRONG, namespace="ns-sibling")
    here = t.append("th-1", WEAK)

    default = t.search(QUERY)["hits"]
    assert {(h["msg_id"], h["namespace"]) for h in default} == {
        (there["msg_id"], "ns-sibling"),
        (here["msg_id"], NS),
    }
    assert t.hit_ids(QUERY, namespace_scope="all_mine") == [there["msg_id"], here["msg_id"]]
    assert t.hit_ids(QUERY, namespace_scope="this") == [here["msg_id"]]


def test_the_fan_out_cap_names_the_namespaces_it_skipped(t, pool):
    """GIVEN four namespaces of the org holding matching turns, and
    memory_search_fanout_max_namespaces set live to 2
    WHEN an org-wide token searches from NS (all_mine)
    THEN NS and one other are read, the other two are listed in namespaces_skipped and none of
    their turns is returned; each skipped namespace can still be searched by name.
    """
    namespaces = [NS, "ns-b", "ns-c", "ns-d"]
    owner = {}
    for ns in namespaces:
        t.set_logging(ns, True)
        owner[t.append("th-1", f"{STRONG} {ns}", namespace=ns)["msg_id"]] = ns

    with live_setting(pool, "memory_search_fanout_max_namespaces", "2"):
        out = t.search(QUERY)
    read = {owner[h["msg_id"]] for h in out["hits"]}
    skipped = out["namespaces_skipped"]
    assert NS in read and len(read) == 2
    assert len(skipped) == 2 and sorted([*read, *skipped]) == sorted(namespaces)

    for ns in skipped:
        assert {owner[m] for m in t.hit_ids(QUERY, namespace=ns, namespace_scope="this")} == {ns}

    uncapped = t.search(QUERY)
    assert uncapped["namespaces_skipped"] == []
    assert {owner[h["msg_id"]] for h in uncapped["hits"]} == set(namespaces)


def test_every_namespace_past_the_cap_is_named_however_many(t, pool, org):
    """GIVEN an org with NS and 1,200 other namespaces, and the fan-out cap set live to 1
    WHEN an org-wide token searches from NS (all_mine)
    THEN namespaces_skipped names all 1,200 others, each once."""
    with pool.connection() as conn:
        conn.execute(
            "INSERT INTO loom.namespaces (org, namespace)"
            " SELECT %s, 'ns-many-' || n FROM generate_series(1, 1200) AS n",
            (org,),
        )
    with live_setting(pool, "memory_search_fanout_max_namespaces", "1"):
        skipped = t.search(QUERY)["namespaces_skipped"]
    assert sorted(skipped) == sorted(f"ns-many-{n}" for n in range(1, 1201))


def test_an_org_wide_token_never_sees_another_orgs_namespaces(api, deps, t, pool):
    """GIVEN another org with matching turns in NS and in a namespace only it has
    WHEN this org's org-wide token searches (all_mine, also with the fan-out cap at 1)
    THEN no hit comes from the other org and its namespace is never listed as skipped.
    """
    other = Tenant.open(api, deps, f"org-{uuid.uuid4().hex[:10]}", logging_on=(NS, "ns-y-only"))
    other.append("th-1", f"{STRONG} from the other org")
    other.append("th-1", f"{STRONG} from the other org", namespace="ns-y-only")
    t.set_logging("ns-x-two", True)
    mine = {
        t.append("th-1", STRONG)["msg_id"],
        t.append("th-1", WEAK, namespace="ns-x-two")["msg_id"],
    }

    out = t.search(QUERY)
    assert {h["msg_id"] for h in out["hits"]} == mine
    assert all("other org" not in h["excerpt"] for h in out["hits"])

    with live_setting(pool, "memory_search_fanout_max_namespaces", "1"):
        capped = t.search(QUERY)
    assert capped["namespaces_skipped"] == ["ns-x-two"]


def test_a_namespace_bound_token_searches_only_its_namespace(t):
    """GIVEN matching turns in NS and in a sibling namespace
    WHEN a viewer token bound to NS searches (namespace left out, scope all_mine by default)
    THEN only NS's turn is returned and nothing is listed as skipped.
    """
    t.set_logging("ns-sibling", True)
    t.append("th-1", STRONG, namespace="ns-sibling")
    here = t.append("th-1", WEAK)
    bound = t.token("viewer", namespace=NS)

    out = t.ok("conversation.search", token=bound, namespace=None, agent="*", query=QUERY)

    assert [h["msg_id"] for h in out["hits"]] == [here["msg_id"]]
    assert {h["namespace"] for h in out["hits"]} == {NS}
    assert out["namespaces_skipped"] == []


# ---- substring fallback --------------------------------------------------------------------


def test_the_substring_fallback_answers_newest_first_without_a_floor(t, pool, embedder):
    """GIVEN three turns mentioning "parcel" (one shouting it), and a floor set live to 0.99
    WHEN the embedder is down and conversation.search asks for "Parcel"
    THEN the op still answers 200, with every matching turn, newest first, case-blind, each
    with similarity null.
    """
    first = t.append("th-1", "the parcel left the depot this morning with other boxes")
    second = t.append("th-1", "A PARCEL NOTICE CAME", role="assistant")
    third = t.append("th-2", "where is my parcel now")
    t.append("th-2", "nothing to see here")

    embedder.failing = True
    with live_setting(pool, "conversation_search_min_similarity", "0.99"):
        hits = t.search("Parcel")["hits"]

    assert [h["msg_id"] for h in hits] == [third["msg_id"], second["msg_id"], first["msg_id"]]
    assert all(h["similarity"] is None for h in hits)
    assert hits[1]["excerpt"] == "A PARCEL NOTICE CAME"


def test_the_substring_fallback_takes_percent_and_underscore_literally(t, embedder):
    """GIVEN turns "50% off ..." and "50 boxes ...", "tracking_id ..." and "trackingXid ..."
    WHEN the embedder is down and search asks for "50%" and for "tracking_id"
    THEN each query matches only the turn holding it literally (no LIKE wildcards).
    """
    pct = t.append("th-1", "we got 50% off the shipping")
    t.append("th-1", "we got 50 boxes in the shipping")
    under = t.append("th-1", "send the tracking_id please")
    t.append("th-1", "send the trackingXid please")

    embedder.failing = True
    assert t.hit_ids("50%") == [pct["msg_id"]]
    assert t.hit_ids("tracking_id") == [under["msg_id"]]
    assert t.hit_ids("%") == [pct["msg_id"]]


def test_the_substring_fallback_finds_unembedded_tool_turns_and_keeps_filters(t, embedder):
    """GIVEN a tool turn and a user turn mentioning "courier", in two threads
    WHEN the embedder is down and search asks for "courier" by role, by thread and top_k=1
    THEN the tool turn (never embedded) is found, and filters and top_k still apply.
    """
    tool = t.append("th-1", '{"courier": "DHL", "eta": "tomorrow"}', role="tool")
    user = t.append("th-2", "which courier is it")

    embedder.failing = True
    assert t.hit_ids("courier", role="tool") == [tool["msg_id"]]
    assert t.hit_ids("courier", thread_id="th-2") == [user["msg_id"]]
    assert t.hit_ids("courier", top_k=1) == [user["msg_id"]]
    assert t.hit_ids("courier", namespace_scope="this") == [user["msg_id"], tool["msg_id"]]
