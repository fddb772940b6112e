"""The guard sweep: indexed text an earlier, weaker guard let in leaves every index once
today's guard reads it as high; the turn itself stays as written."""

from __future__ import annotations

import pytest

from chalicelib.search.store_upkeep import rewrite_thread_windows
from chalicelib.sensitivity import guard_fingerprint, is_sensitive
from chalicelib.workers import guard_sweep
from tests.integration.test_conversation_search_modes import (
    context_state,
    hits,
    ids,
    windows_holding,
    word,
)
from tests.integration.test_conversation_support import NS, Tenant, embedding_rows, turn_rows


@pytest.fixture
def t(api, deps, org):
    return Tenant.open(api, deps, org)


@pytest.fixture(autouse=True)
def fresh_sweep(pool):
    """Each test starts the sweep over (the database is shared by the suite)."""
    with pool.connection() as conn:
        conn.execute("DELETE FROM loom.guard_sweeps")


def _let_in(pool, org, thread_id, msg_id, text):
    """What an earlier build left: the row's indexed text reads as high, and the windows
    around it (rebuilt as migration 0009 rebuilt every window) read it."""
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversation_embeddings SET text = %s WHERE org = %s AND msg_id = %s",
            (text, org, msg_id),
        )
        rewrite_thread_windows(conn, org, NS, thread_id)


def test_a_row_an_earlier_guard_let_in_leaves_every_window_and_context(t, deps, pool, org):
    """GIVEN a thread P0, old, N0, N1 whose row `old` now holds a password assignment and a
    unique word, read by the windows after it (as an earlier build indexed it)
    WHEN the guard sweep runs
    THEN `old`'s embedding row is tombstoned while its turn stays as written; no live window
    holds the word, lexical search finds nothing by it, N0's context vector is its own
    vector; the sweep is done, and a second pass reads nothing."""
    w = word()
    for name, text in [("P0", "we set up the vpn today"), ("old", "the vpn login works"),
                       ("N0", "thanks, connected fine"), ("N1", "see you tomorrow")]:  # fmt: skip
        t.append("th-s", text, msg_id=name)
    secret = f"the vpn login {w}, password: Tr0ub4dor&3xyz"
    assert is_sensitive(secret)
    _let_in(pool, org, "th-s", "old", secret)
    assert {m for _, _, m in windows_holding(pool, w, org, live_only=True)} == {
        "old", "N0", "N1"}  # fmt: skip
    assert context_state(pool, org, "th-s")["N0"] == ("old", False)

    out = guard_sweep.sweep_indexed_text(deps)
    assert out["withdrawn"] >= 1 and out["done"] == 1
    rows = {r["msg_id"]: r for r in embedding_rows(pool, org, "th-s")}
    assert rows["old"]["tombstoned_at"] is not None
    assert all(rows[m]["tombstoned_at"] is None for m in ("P0", "N0", "N1"))
    assert [r["msg_id"] for r in turn_rows(pool, org, "th-s") if r["tombstoned_at"] is None] == [
        "P0", "old", "N0", "N1"]  # fmt: skip
    assert windows_holding(pool, w, org, live_only=True) == []
    assert hits(t, w, "lexical") == []
    assert context_state(pool, org, "th-s")["N0"] == (None, True)
    assert guard_sweep.sweep_indexed_text(deps) == {
        "checked": 0,
        "withdrawn": 0,
        "contexts": 0,
        "done": 1,
    }


def _sweep_to_the_end(deps, guard: str | None = None) -> int:
    checked = 0
    while True:
        out = guard_sweep.sweep_indexed_text(deps, guard=guard)
        checked += out["checked"]
        if out["done"]:
            return checked


def test_a_context_an_earlier_guard_read_across_two_turns_gives_way(t, deps, pool, org):
    """GIVEN turns p1 "...the card PIN is" and p2 "7392", p2's context vector standing after p1
    (as an earlier build wrote it, embedding the pair's text)
    WHEN the guard sweep runs with today's guard, which reads the pair as high
    THEN p2's context vector is its own vector; both turns keep their rows and vectors."""
    from chalicelib.services import turn_writer

    t.append("th-p", "we set up the new debit card", msg_id="p0")
    t.append("th-p", "ok, and the card PIN is", msg_id="p1")
    t.append("th-p", "7392", msg_id="p2")
    assert is_sensitive(turn_writer.context_text("ok, and the card PIN is", "7392"))
    assert context_state(pool, org, "th-p")["p2"] == ("p1", False)

    out = guard_sweep.sweep_indexed_text(deps)
    assert (out["contexts"], out["withdrawn"]) == (1, 0)
    state = context_state(pool, org, "th-p")
    assert state["p2"] == (None, True) and set(state) == {"p0", "p1", "p2"}


def test_the_sweep_goes_on_where_it_stopped_and_starts_over_for_another_guard(t, deps, pool, org):
    """GIVEN three threads of two rows each, one row of each an earlier guard let in, a sweep
    standing just before this org's rows (the database is shared), batches of two rows and
    one batch a pass
    WHEN the sweep runs three passes
    THEN each reads on from where the last stopped: together they read the six rows once and
    withdraw the three, and no plain one; once the sweep is done a pass reads nothing, and
    under another guard it reads every live row again."""
    for n in range(3):
        t.append(f"th-{n}", f"plain turn {n}", msg_id="a")
        t.append(f"th-{n}", f"the key for {n}", msg_id="b")
        _let_in(pool, org, f"th-{n}", "b", f"api_key = sk-{n}live0123456789abcdefABCDEF")
    with pool.connection() as conn:
        conn.execute(
            "INSERT INTO loom.guard_sweeps (name, guard, position) VALUES (%s, %s, %s)",
            (guard_sweep.NAME, guard_fingerprint(), [org, "", "", "", ""]),
        )
    passes = [guard_sweep.sweep_indexed_text(deps, batch=2, batches_per_pass=1) for _ in range(3)]
    assert [(p["checked"], p["withdrawn"]) for p in passes] == [(2, 1)] * 3
    gone = {(r["thread_id"], r["msg_id"]) for r in embedding_rows(pool, org) if r["tombstoned_at"]}
    assert gone == {(f"th-{n}", "b") for n in range(3)}
    assert sorted(ids(hits(t, "plain turn", "lexical"))) == ["a", "a", "a"]

    _sweep_to_the_end(deps)
    assert guard_sweep.sweep_indexed_text(deps) == {
        "checked": 0,
        "withdrawn": 0,
        "contexts": 0,
        "done": 1,
    }
    assert _sweep_to_the_end(deps, guard="another guard") >= 3


def test_a_row_taken_over_while_the_sweep_reads_keeps_its_new_text_live(
    t, deps, pool, org, embedder
):
    """GIVEN agent A's turn m1 whose embed failed (a row with no vector), its text now one that
    reads as high
    WHEN the sweep has read it and, before it withdraws it, agent B logs m1 with plain text
    (B's vector takes the row over)
    THEN the sweep leaves the row live with B's text: it withdraws only a row still holding
    the text it read."""
    embedder.failing = True
    try:
        t.append("th-t", "agent one says hello", msg_id="m1", agent="A")
    finally:
        embedder.failing = False
    _let_in(pool, org, "th-t", "m1", "agent one, password: Tr0ub4dor&3xyz")
    with pool.connection() as conn:
        conn.execute(
            "INSERT INTO loom.guard_sweeps (name, guard, position) VALUES (%s, %s, %s)",
            (guard_sweep.NAME, guard_fingerprint(), [org, "", "", "", ""]),
        )

    def a_takeover(rows):
        t.append("th-t", "agent two says something plain", msg_id="m1", agent="B")

    deps.hooks.on("guard_sweep.read", a_takeover)
    assert guard_sweep.sweep_indexed_text(deps)["withdrawn"] == 0
    (row,) = embedding_rows(pool, org, "th-t")
    assert (row["agent"], row["text"], row["tombstoned_at"]) == (
        "B", "agent two says something plain", None)  # fmt: skip


def test_a_turn_whose_high_shape_lies_past_its_indexed_text_is_withdrawn(t, deps, pool, org):
    """GIVEN a turn of 2,100 characters indexed by its first 2,048, whose message holds a
    password assignment past them (an earlier guard read only the cut)
    WHEN the guard sweep runs
    THEN its embedding row is tombstoned and search no longer finds it, the turn itself as
    written; a long turn with nothing high past its cut stays indexed."""
    w = word()
    long_plain = f"{w} harbour timetable " + "the ferry leaves at nine " * 82
    assert len(long_plain) > 2048
    t.append("th-l", long_plain, msg_id="long-high")
    t.append("th-l", long_plain.replace(w, "other"), msg_id="long-plain")
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.conversations SET content = content || ' password: Tr0ub4dor&3xyz'"
            " WHERE org = %s AND msg_id = 'long-high'",
            (org,),
        )
    assert "long-high" in ids(hits(t, w, "lexical"))

    guard_sweep.sweep_indexed_text(deps)
    rows = {r["msg_id"]: r for r in embedding_rows(pool, org, "th-l")}
    assert rows["long-high"]["tombstoned_at"] is not None
    assert rows["long-plain"]["tombstoned_at"] is None
    assert "long-high" not in ids(hits(t, w, "lexical"))
    assert [r["msg_id"] for r in turn_rows(pool, org, "th-l") if r["tombstoned_at"] is None] == [
        "long-high", "long-plain"]  # fmt: skip
