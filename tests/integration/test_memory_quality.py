"""Fact quality over HTTP: every memory's confidence, memory.search's quality_filter, and
memory.apply's demote, label and restore by key (decision 0024)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_memory_support import NS, NS2, Mem, audit_rows

JUNK = {
    "tea/ran": "Ran the tea tests",
    "tea/narration": "The user asked me to make tea",
    "tea/hint": "Use grep to find tea in files",
    "tea/code": "brew_tea is defined in kitchen/tea.py",
    "tea/status": "The tea kettle is boiling right now",
}


@pytest.fixture
def m(api, deps, org):
    return Mem.open(api, deps, org)


def quality(pool: Any, org: str, namespace: str = NS) -> dict[str, tuple[float, list[str], int]]:
    """{key: (confidence, tags, version)} of the namespace's live rows."""
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT key, confidence, tags, version FROM loom.memories WHERE org = %s"
            " AND namespace = %s AND retired_at IS NULL",
            (org, namespace),
        ).fetchall()
    return {k: (c, t, v) for k, c, t, v in rows}


def apply(m: Mem, *actions: dict[str, Any], as_: str = "admin", **body: Any):
    return m.post("memory.apply", as_=as_, actions=list(actions), **body)


def apply_ok(m: Mem, *actions: dict[str, Any], **body: Any) -> dict[str, Any]:
    status, data = apply(m, *actions, **body)
    assert status == 200, data
    return data


# ---- confidence ------------------------------------------------------------------------------


def test_every_memory_written_has_confidence_one_on_every_read(m):
    """GIVEN a fact written by memory.set and one by memory.bulk_set
    WHEN each is read by memory.get and found by memory.search
    THEN each carries confidence 1.0.
    """
    m.set("user/drink", "The user drinks green tea.")
    m.ok("memory.bulk_set", entries=[{"key": "user/food", "value": "The user eats tea cake."}])

    for key in ("user/drink", "user/food"):
        assert m.get(key)["memory"]["confidence"] == 1.0
    assert [h["confidence"] for h in m.search("tea")] == [1.0, 1.0]


def test_a_new_value_is_judged_afresh_and_the_same_value_keeps_its_demotion(m, pool):
    """GIVEN a demoted fact
    WHEN memory.set writes the same value again, then a new value
    THEN the first write leaves it demoted; the new version has confidence 1.0.
    """
    m.set("user/drink", "The user drinks tea.")
    apply_ok(m, {"action": "demote", "key": "user/drink"})

    m.set("user/drink", "The user drinks tea.")
    assert m.get("user/drink")["memory"]["confidence"] == 0.25
    m.set("user/drink", "The user drinks coffee.")
    assert m.get("user/drink")["memory"]["confidence"] == 1.0


# ---- quality_filter --------------------------------------------------------------------------


def test_quality_filter_leaves_junk_out_and_counts_it_by_class(m, pool):
    """GIVEN two durable facts about tea, junk about tea of five classes, a probe and a
    restatement of a durable fact (its words reordered: cosine 1.0 under the bag-of-words
    embedder) and one in other case (same normalised text)
    WHEN memory.search runs for "tea test" without and with quality_filter
    THEN without, every row is a hit and filtered is empty; with, the two durable facts are
    the hits (one of three restatements), and filtered counts what was left out by class.
    """
    m.set("user/drink", "The user drinks green tea every morning")
    m.set("user/shop", "The user buys tea from a shop in Porto")
    for key, value in JUNK.items():
        m.set(key, value)
    m.set("tea/probe", "test")
    m.set("tea/again", "every morning the user drinks green tea")
    m.set("tea/again2", "THE USER DRINKS GREEN TEA EVERY MORNING.")
    before = quality(pool, m.org)

    query = "tea test"
    plain = m.ok("memory.search", as_="viewer", query=query, top_k=20)
    filtered = m.ok("memory.search", as_="viewer", query=query, top_k=20, quality_filter=True)

    assert len(plain["hits"]) == 10 and plain["filtered"] == {}
    # whichever of the three restatements ranks first is kept
    (drink, shop) = sorted(h["key"] for h in filtered["hits"])
    assert drink in ("tea/again", "tea/again2", "user/drink") and shop == "user/shop"
    assert filtered["filtered"] == {
        "code_location": 1,
        "narration": 1,
        "probe": 1,
        "restatement": 2,
        "status": 1,
        "tool_hint": 1,
        "trajectory": 1,
    }
    assert quality(pool, m.org) == before  # nothing deleted or changed


def test_quality_filter_still_fills_top_k(m):
    """GIVEN 30 junk rows that match the query better than three durable facts
    WHEN memory.search asks for top_k=3 with quality_filter
    THEN the three durable facts are the hits, and 30 rows were left out.
    """
    for i in range(30):
        m.set(f"junk/{i}", f"Ran the deploy script deploy deploy run {i}")
    for key in ("a", "b", "c"):
        m.set(f"ops/{key}", f"Deploys of service {key} need a deploy ticket")

    data = m.ok(
        "memory.search",
        as_="viewer",
        query="deploy deploy run",
        top_k=3,
        quality_filter=True,
        search_mode="lexical",
    )

    assert sorted(h["key"] for h in data["hits"]) == ["ops/a", "ops/b", "ops/c"]
    assert data["filtered"] == {"trajectory": 30}


# ---- memory.apply ----------------------------------------------------------------------------


def test_demote_label_and_restore_change_only_confidence_and_the_quality_tag(m, pool):
    """GIVEN a fact with a tag of its own
    WHEN an admin demotes it twice (0.25, then 0.5) and labels it, then restores it
    THEN confidence is 0.125 with tag quality:probe beside its own, the value and version
    unchanged; after the restore, confidence is 1.0 and only its own tag is left.
    """
    m.set("user/x", "asdf", tags=["mine"])

    data = apply_ok(
        m,
        {"action": "demote", "key": "user/x"},
        {"action": "demote", "key": "user/x", "factor": 0.5},
        {"action": "label", "key": "user/x", "quality_class": "probe"},
    )

    assert [a["confidence_after"] for a in data["applied"]] == [0.25, 0.125, 0.125]
    assert data["applied"][-1]["tags_after"] == ["mine", "quality:probe"]
    assert quality(pool, m.org)["user/x"] == (0.125, ["mine", "quality:probe"], 1)
    got = m.get("user/x")["memory"]
    assert (got["value"], got["confidence"]) == ("asdf", 0.125)

    data = apply_ok(m, {"action": "restore", "key": "user/x"})

    assert data["applied"][0]["changed"] is True
    assert quality(pool, m.org)["user/x"] == (1.0, ["mine"], 1)


def test_a_dry_run_answers_what_would_change_and_changes_nothing(m, pool):
    m.set("user/x", "asdf")
    before = quality(pool, m.org)

    data = apply_ok(
        m,
        {"action": "demote", "key": "user/x"},
        {"action": "label", "key": "user/x", "quality_class": "probe"},
        dry_run=True,
    )

    assert data["dry_run"] is True
    assert [(a["changed"], a["confidence_after"]) for a in data["applied"]] == [
        (True, 0.25),
        (True, 0.25),
    ]
    assert quality(pool, m.org) == before


def test_unknown_keys_are_reported_and_the_rest_applied(m, pool):
    """GIVEN one fact of the shared rows and one of user u1
    WHEN memory.apply names them, a key no row holds, and u1's key under the shared rows
    THEN the two rows are demoted and the other two come back in unknown (200, not 500).
    """
    m.set("user/x", "asdf")
    m.set("user/y", "qwerty", user_id="u1")

    data = apply_ok(
        m,
        {"action": "demote", "key": "user/x"},
        {"action": "demote", "key": "user/y", "user_id": "u1"},
        {"action": "demote", "key": "nobody/here"},
        {"action": "demote", "key": "user/y"},
    )

    assert data["unknown"] == [
        {"key": "nobody/here", "user_id": "-"},
        {"key": "user/y", "user_id": "-"},
    ]
    assert {k: c for k, (c, _, _) in quality(pool, m.org).items()} == {
        "user/x": 0.25,
        "user/y": 0.25,
    }


@pytest.mark.parametrize(
    "body",
    [
        {"actions": []},
        {"actions": [{"action": "demote", "key": "k"}] * 501},
        {"actions": [{"action": "label", "key": "k"}]},  # no quality_class
        {"actions": [{"action": "label", "key": "k", "quality_class": "boring"}]},
        {"actions": [{"action": "demote", "key": "k", "factor": 0}]},
        {"actions": [{"action": "demote", "key": "k", "factor": 1.5}]},
        {"actions": [{"action": "delete", "key": "k"}]},
    ],
)
def test_bad_action_lists_are_refused_with_422(m, body):
    status, data = m.post("memory.apply", as_="admin", **body)

    assert status == 422, data


@pytest.mark.parametrize("role", ["viewer", "writer"])
def test_a_viewer_or_writer_is_refused(m, pool, role):
    m.set("user/x", "asdf")
    before = quality(pool, m.org)

    status, _ = apply(m, {"action": "demote", "key": "user/x"}, as_=role)

    assert status == 403
    assert quality(pool, m.org) == before


def test_another_tenants_keys_are_never_changed(m, api, deps, pool, org):
    """GIVEN a fact in NS of org A, and the same key in NS2
    WHEN org B's admin names org A; org B's admin names the key in its own org; A's admin
    names the key in NS2 (where A's NS2 row is); a token bound to NS2 names NS
    THEN B naming A is refused (403), B's own call finds no such row (unknown), the NS2 call
    changes only NS2's row, the bound token is refused (403), and NS's row is unchanged.
    """
    m.set("user/x", "asdf")
    m.set("user/x", "asdf", namespace=NS2)
    other = Mem.open(api, deps, org + "-b")
    demote = {"action": "demote", "key": "user/x"}

    status, _ = other.post("memory.apply", as_="admin", org=m.org, actions=[demote])
    assert status == 403
    data = other.ok("memory.apply", as_="admin", actions=[demote])
    assert data["unknown"] == [{"key": "user/x", "user_id": "-"}]
    apply_ok(m, demote, namespace=NS2)
    bound = m.token("admin", namespace=NS2)
    status, _ = m.post("memory.apply", token=bound, namespace=NS, actions=[demote])
    assert status == 403

    assert quality(pool, m.org)["user/x"][0] == 1.0
    assert quality(pool, m.org, NS2)["user/x"][0] == 0.25


def test_every_call_is_audited_dry_runs_too(m, pool):
    m.set("user/x", "asdf")

    apply_ok(m, {"action": "demote", "key": "user/x"}, dry_run=True)
    apply_ok(m, {"action": "restore", "key": "user/x"})

    rows = audit_rows(pool, m.org, "memory.apply")
    assert [(r["namespace"], r["principal"]) for r in rows] == [(NS, f"token:admin-{m.org}")] * 2


def test_only_facts_are_classified_and_every_kind_is_read_for_restatement(m, pool):
    """GIVEN a typed record whose text reads as a step, and a fact that restates it
    WHEN memory.search runs with quality_filter
    THEN the record is the hit (a record is structured, never junk) and the fact is left out.
    """
    m.set("tea/record", "Ran the tea tests")
    m.set("tea/copy", "ran the tea tests.")
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.memories SET kind = 'record' WHERE org = %s AND key = 'tea/record'",
            (m.org,),
        )

    data = m.ok("memory.search", as_="viewer", query="tea tests", quality_filter=True)

    assert [h["key"] for h in data["hits"]] == ["tea/record"]
    # ranked above the record the fact is a step; ranked below it, a restatement
    assert data["filtered"] in ({"restatement": 1}, {"trajectory": 1})


def test_a_token_bounded_to_one_user_is_refused(m, pool):
    m.set("user/x", "asdf", user_id="u1")
    token = m.token("admin", read_scope="own_user", read_user_id="u1")

    status, _ = m.post("memory.apply", token=token, actions=[{"action": "demote", "key": "user/x"}])

    assert status == 403
    assert quality(pool, m.org)["user/x"][0] == 1.0
