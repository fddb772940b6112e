"""conversation.compact: the oldest turns before the last keep_recent become one embedded
system summary listing them in metadata.compacted_from; the originals and their embeddings
are tombstoned, and saved or high turns are never summarised."""

from __future__ import annotations

from collections import deque
from datetime import datetime

import pytest
from psycopg.types.json import Jsonb

from chalicelib.auth import local_caller
from chalicelib.ops.compaction import SUMMARIZER_SYSTEM, summary_msg_id
from chalicelib.providers.llm import LLMError, LLMResult, ScriptedLLM
from chalicelib.registry import call
from tests.integration.test_conversation_support import NS, snapshot
from tests.integration.test_saved_support import (
    SUMMARY,
    content,
    execute,
    hit_ids,
    open_tenant,
    save,
    search_saved,
    transcript,
    vectors,
)

HIGH = "fine, the vault password=hunter22 works"


@pytest.fixture
def t(api, deps, org):
    return open_tenant(api, deps, org)


def _said(i: int) -> str:
    """Turn i's text: a topic turn, then (past the topics) a plain one."""
    return content(i) if i < 24 else f"turn {i} about the barge timetable"


def build(t, n: int, *, start: int = 0, thread: str = "th", agent: str = "a1") -> list[str]:
    """Turns m{start}..m{start+n-1}, alternating user and assistant."""
    ids = []
    for i in range(start, start + n):
        role = ("user", "assistant")[i % 2]
        ids.append(t.append(thread, _said(i), msg_id=f"m{i:02d}", role=role, agent=agent)["msg_id"])
    return ids


def scripted(deps, *replies) -> ScriptedLLM:
    deps._llm = llm = ScriptedLLM(replies=deque(replies))
    return llm


def compact(t, *, thread="th", agent="a1", keep_recent=10, min_to_compact=4):
    return t.post(
        "conversation.compact",
        agent=agent,
        thread_id=thread,
        keep_recent=keep_recent,
        min_to_compact=min_to_compact,
        as_="writer",
    )


def compacted(t, **kw) -> dict:
    status, body = compact(t, **kw)
    assert status == 200, body
    return body


def listed(t, thread="th", agent="") -> list[dict]:
    return t.ok("conversation.list", agent=agent, thread_id=thread, limit=1000)["rows"]


def ts_of(pool, org, msg: str) -> datetime:
    return next(r["ts"] for r in transcript(pool, org, msg) if r["agent"] == "a1")


# ---- a compaction --------------------------------------------------------------------------


def test_the_oldest_turns_become_one_summary_and_the_originals_retire(t, deps, pool, org):
    """GIVEN a thread of 20 turns and a summarizer answering a summary
    WHEN a writer compacts it with keep_recent 10, min_to_compact 4
    THEN compacted is true with messages_summarized 10 and the call's token counts; the
    thread lists one system turn (at the first summarised turn's time) whose
    metadata.compacted_from lists m00..m09, then m10..m19; the originals and their embeddings
    are tombstoned; search finds the summary and no original; the model saw m00..m09 only.
    """
    ids = build(t, 20)
    llm = scripted(deps, SUMMARY)
    out = compacted(t)

    assert (out["compacted"], out["messages_summarized"], out["reason"]) == (True, 10, "")
    ((system, prompt),) = llm.prompts
    assert system == SUMMARIZER_SYSTEM
    assert out["tokens_in"] == len(system + prompt) // 4 and out["tokens_in"] > 0
    assert out["tokens_out"] == len(SUMMARY) // 4 and out["tokens_out"] > 0
    assert all(content(i) in prompt for i in range(10))
    assert not any(content(i) in prompt for i in range(10, 20))

    rows = listed(t)
    assert [r["msg_id"] for r in rows] == [out["summary_msg_id"], *ids[10:]]
    summary = rows[0]
    assert (summary["role"], summary["content"]) == ("system", SUMMARY)
    assert summary["metadata"]["compacted_from"] == ids[:10]
    first_ts = ts_of(pool, org, "m00")
    assert datetime.fromisoformat(summary["ts"].replace("Z", "+00:00")) == first_ts

    gone = {r["msg_id"] for r in transcript(pool, org) if r["tombstoned_at"] is not None}
    assert gone == set(ids[:10])
    vecs = {v["msg_id"]: v for v in vectors(pool, org)}
    assert {m for m, v in vecs.items() if v["tombstoned_at"] is not None} == set(ids[:10])
    assert vecs[out["summary_msg_id"]]["has_vector"]
    assert vecs[out["summary_msg_id"]]["tombstoned_at"] is None

    assert (
        t.hit_ids("the crew agreed to relocate the orchard and fire the kiln")[0]
        == (out["summary_msg_id"])
    )
    assert not set(t.hit_ids(content(0))) & set(ids[:10])


@pytest.mark.parametrize(
    ("role", "msg_id", "compacted_from"),
    [
        ("user", "m03", ["m00", "m01"]),  # a user turn naming turns of the window
        ("user", "m03", 5),  # not a list at all
        ("user", "m03", [["m00"]]),  # a list of lists
        ("system", "m03", ["m00", "m01"]),  # a client's system turn, not under a summary id
        # A summary id (a row from before such ids were refused), but not a list of msg_ids.
        ("system", "summary-x", [1, 2]),
    ],
)
def test_a_clients_metadata_naming_compacted_from_makes_no_summary(
    t, deps, pool, org, role, msg_id, compacted_from
):
    """GIVEN a thread of 20 turns where one turn of the window (m03) was appended by the client
    with metadata naming `compacted_from`, but is not a summary compaction wrote
    WHEN a writer compacts it (keep_recent 10)
    THEN it answers compacted: m03 is summarised like any turn (its text reaches the
    summarizer and it is listed in the new summary's compacted_from), never retired unread,
    and no other turn is either.
    """
    ids = []
    for i in range(20):
        kw = {}
        if i == 3:
            kw = {"msg_id": "m03", "metadata": {"compacted_from": compacted_from}}
        turn_role = role if i == 3 else ("user", "assistant")[i % 2]
        ids.append(t.append("th", content(i), role=turn_role, **kw)["msg_id"])
    if msg_id != "m03":  # an append refuses a summary id: the row as an earlier build wrote it
        execute(
            pool,
            "UPDATE loom.conversations SET msg_id = %s WHERE org = %s AND msg_id = 'm03'",
            (msg_id, org),
        )
        ids[3] = msg_id
    llm = scripted(deps, SUMMARY)
    out = compacted(t)

    assert (out["compacted"], out["messages_summarized"]) == (True, 10), out
    ((_, prompt),) = llm.prompts
    assert all(content(i) in prompt for i in range(10))
    summary = listed(t)[0]
    assert summary["metadata"]["compacted_from"] == ids[:10]


def test_an_any_agent_compaction_retires_every_agents_copy_of_the_turns_it_summarises(t, deps):
    """GIVEN agents a1 and a2 that each logged m00..m19
    WHEN the thread is compacted for any agent ("*", keep_recent 10)
    THEN the summary replaces m00..m09 in every read: no agent's copy of them is listed or
    found by search, and a second compaction finds nothing new to summarise.
    """
    build(t, 20, agent="a1")
    build(t, 20, agent="a2")
    scripted(deps, SUMMARY, SUMMARY)
    out = compacted(t, agent="*")
    assert (out["compacted"], out["messages_summarized"]) == (True, 10), out
    rows = [r["msg_id"] for r in listed(t, agent="*")]
    assert rows[0] == out["summary_msg_id"]
    assert not {f"m{i:02d}" for i in range(10)} & set(rows), rows
    assert "m00" not in t.hit_ids(content(0), agent="*")
    again = compacted(t, agent="*")
    assert again["compacted"] is False, again


def test_another_agents_summary_further_into_the_window_is_read_not_replaced_unread(
    t, deps, pool, org
):
    """GIVEN a1 and a2 that logged m00..m13, a2's compaction of its own copies (a summary placed
    at a2's first copy, after a1's m13), then a1's m14..m30
    WHEN the thread is compacted for any agent
    THEN a2's summary, which no failed run left (it is not at its first turn's time), takes
    prompt budget like any turn: its text reaches the summarizer before it is replaced.
    """
    build(t, 14, agent="a1")
    build(t, 14, agent="a2")
    build(t, 17, start=14, agent="a1")
    llm = scripted(deps, "A2 SUMMARY: the orchard and kiln plans.", SUMMARY)
    s2 = compacted(t, agent="a2")
    assert s2["compacted"], s2
    assert s2["summary_msg_id"] in [r["msg_id"] for r in listed(t, agent="*")]

    out = compacted(t, agent="*")

    assert out["compacted"], out
    (s2_row,) = [r for r in transcript(pool, org) if r["msg_id"] == s2["summary_msg_id"]]
    assert s2_row["tombstoned_at"] is not None
    assert "A2 SUMMARY" in llm.prompts[1][1]


def test_two_agents_summaries_of_their_own_copies_are_each_indexed(t, deps, pool, org):
    """GIVEN agents a1 and a2 that each logged the same 14 turns
    WHEN each compacts its own copies (keep_recent 10)
    THEN each gets a summary of its own id, each with a live embedding row holding its own
    text, and a2's summary is found by search once a1's copies are deleted."""
    for agent in ("a1", "a2"):
        build(t, 14, agent=agent)
    scripted(deps, SUMMARY, "A second summary: the orchard and the kiln, by the other agent.")
    first = compacted(t, agent="a1")
    second = compacted(t, agent="a2")
    assert first["compacted"] and second["compacted"]
    assert first["summary_msg_id"] != second["summary_msg_id"]
    vecs = {v["msg_id"]: v for v in vectors(pool, org)}
    for out in (first, second):
        row = vecs[out["summary_msg_id"]]
        assert row["tombstoned_at"] is None and row["has_vector"], row
    t.ok("conversation.delete", agent="a1", thread_id="th", confirm_thread_id="th", as_="admin")
    found = t.hit_ids("the other agent orchard kiln", search_mode="lexical", agent="*")
    assert second["summary_msg_id"] in found


def test_fewer_new_turns_than_min_to_compact_are_left_alone(t, deps, pool, org):
    """GIVEN a thread of 13 turns (3 before the last 10)
    WHEN a writer compacts it with min_to_compact 4
    THEN it answers compacted false, below-min-to-compact, without asking the model, and
    nothing changes.
    """
    build(t, 13)
    llm = scripted(deps, SUMMARY)
    before = snapshot(pool, org)
    out = compacted(t)
    assert (out["compacted"], out["reason"], out["messages_summarized"]) == (
        False,
        "below-min-to-compact",
        0,
    )
    assert (out["tokens_in"], out["tokens_out"], out["summary_msg_id"]) == (0, 0, "")
    assert llm.prompts == []
    assert snapshot(pool, org) == before


def test_min_to_compact_counts_the_new_turns_past_the_prompt_budget_too(t, deps, pool, org):
    """GIVEN a thread of 16 turns of 10,000 characters: 6 before the last 10, of which only 3
    fit the summarizer's 32,000-character prompt
    WHEN a writer compacts it with min_to_compact 4
    THEN the 3 that fit are summarised (6 new turns precede the last 10); the 3 after them
    stay live for the next compaction.
    """
    for i in range(16):
        text = f"turn {i} " + ("about the quarry barge schedule " * 400)[:9_990]
        t.append("th", text, msg_id=f"m{i:02d}", role=("user", "assistant")[i % 2])
    llm = scripted(deps, SUMMARY)

    out = compacted(t)

    assert (out["compacted"], out["messages_summarized"]) == (True, 3), out
    assert len(llm.prompts) == 1
    live = [r["msg_id"] for r in listed(t) if r["msg_id"].startswith("m")]
    assert live == [f"m{i:02d}" for i in range(3, 16)]


def test_a_second_compaction_with_no_new_turns_is_already_compacted(t, deps, pool, org):
    """GIVEN a thread of 20 turns compacted once
    WHEN a writer compacts it again with no new turns
    THEN it answers already-compacted without asking the model, and nothing changes.
    """
    build(t, 20)
    llm = scripted(deps, SUMMARY, "a second summary")
    assert compacted(t)["compacted"]
    before = snapshot(pool, org)
    out = compacted(t)
    assert (out["compacted"], out["reason"]) == (False, "already-compacted")
    assert len(llm.prompts) == 1
    assert snapshot(pool, org) == before


def test_a_window_of_only_saved_or_high_turns_has_nothing_to_compact(t, deps, pool, org):
    """GIVEN a thread of 14 turns whose 4 oldest are two saved turns and two that read as high
    WHEN a writer compacts it (keep_recent 10)
    THEN it answers nothing-to-compact without asking the model, and nothing changes.
    """
    t.append("th", HIGH, msg_id="h0")
    save(t, "th", "s0", "a saved note about the orchard")
    t.append("th", HIGH + " again", msg_id="h1")
    save(t, "th", "s1", "a saved note about the kiln")
    build(t, 10, start=4)
    llm = scripted(deps, SUMMARY)
    before = snapshot(pool, org)
    out = compacted(t)
    assert (out["compacted"], out["reason"]) == (False, "nothing-to-compact")
    assert llm.prompts == []
    assert snapshot(pool, org) == before


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("   ", "summarizer-empty"),
        ("The user shared the vault password=hunter22 for later.", "summary-high-sensitivity"),
    ],
)
def test_an_empty_or_high_summary_changes_nothing(t, deps, pool, org, embedder, reply, reason):
    """GIVEN a thread of 20 turns
    WHEN the summarizer answers blank, or a summary that reads as high
    THEN the compaction answers compacted false with that reason and the call's token counts,
    nothing changes, and the high summary is never sent to the embedder.
    """
    build(t, 20)
    llm = scripted(deps, reply)
    before = snapshot(pool, org)
    embedder.seen.clear()
    out = compacted(t)
    assert (out["compacted"], out["reason"], out["summary_msg_id"]) == (False, reason, "")
    assert out["tokens_in"] == len(SUMMARIZER_SYSTEM + llm.prompts[0][1]) // 4
    assert snapshot(pool, org) == before
    assert not any("hunter22" in s for s in embedder.seen)


def test_a_summary_that_cannot_be_embedded_changes_nothing(t, deps, pool, org, embedder):
    """GIVEN a thread of 20 turns and an embedder that fails
    WHEN a writer compacts it
    THEN it answers embed-failed, nothing changes, and a retry once the embedder answers
    compacts.
    """
    build(t, 20)
    scripted(deps, SUMMARY, SUMMARY)
    before = snapshot(pool, org)
    embedder.failing = True
    out = compacted(t)
    assert (out["compacted"], out["reason"]) == (False, "embed-failed")
    assert snapshot(pool, org) == before
    embedder.failing = False
    assert compacted(t)["compacted"] is True


# ---- what the window holds -----------------------------------------------------------------


def test_saved_and_high_turns_are_never_sent_or_retired(t, deps, pool, org):
    """GIVEN a thread of 20 turns where m02 is saved by u1 and m04 reads as high
    WHEN a writer compacts it (keep_recent 10)
    THEN the model never sees m02 or m04, the summary replaces the other 8, and m02 and m04
    stay live, in order between the summary and the recent turns; m02 is still found by u1's
    saved search.
    """
    for i in range(20):
        text = HIGH if i == 4 else content(i)
        t.append("th", text, msg_id=f"m{i:02d}", role=("user", "assistant")[i % 2])
    save(t, "th", "m02")
    llm = scripted(deps, SUMMARY)
    out = compacted(t)

    assert (out["compacted"], out["messages_summarized"]) == (True, 8)
    prompt = llm.prompts[0][1]
    assert content(2) not in prompt and "hunter22" not in prompt
    rows = listed(t)
    assert [r["msg_id"] for r in rows] == [
        out["summary_msg_id"],
        "m02",
        "m04",
        *[f"m{i}" for i in range(10, 20)],
    ]
    assert rows[0]["metadata"]["compacted_from"] == [
        f"m{i:02d}" for i in range(10) if i not in (2, 4)
    ]
    assert hit_ids(search_saved(t, content(2))) == ["m02"]
    (vec,) = vectors(pool, org, "m02")
    assert vec["tombstoned_at"] is None and vec["is_saved"]


def test_a_turn_saved_while_the_summarizer_runs_is_not_retired(t, deps, pool, org):
    """GIVEN a thread of 20 turns, and a user who saves m03 while the summarizer is writing
    WHEN the compaction retires the window
    THEN m03 stays live and saved, with its flagged embedding, and u1's saved search finds it.
    """
    build(t, 20)

    class SavingLLM:
        name, answers = "saving", True

        def complete(self, system, user, *, json_output=False, model=None):
            body = {
                "org": org,
                "namespace": NS,
                "agent": "a1",
                "conversation_id": "th",
                "message_id": "m03",
                "role": "assistant",
                "content": content(3),
                "user_id": "u1",
            }
            assert call("conversation.save_message", body, local_caller(org), deps).body["indexed"]
            return LLMResult(text=SUMMARY, tokens_in=10, tokens_out=5)

    deps._llm = SavingLLM()
    assert compacted(t)["compacted"]
    live = {r["msg_id"]: r for r in transcript(pool, org) if r["tombstoned_at"] is None}
    assert "m03" in live and live["m03"]["is_saved"]
    (vec,) = vectors(pool, org, "m03")
    assert vec["tombstoned_at"] is None and vec["is_saved"]
    assert hit_ids(search_saved(t, content(3))) == ["m03"]


def test_an_earlier_summary_is_folded_in_and_replaced_without_counting(t, deps, pool, org):
    """GIVEN a thread compacted once (summary S1 over m00..m09, m10..m19 live)
    WHEN 3 more turns arrive and a writer compacts, then a 4th arrives and it compacts again
    THEN the first answers below-min-to-compact (S1 does not count); the second summarises
    m10..m13 (messages_summarized 4), its prompt leads with S1's text, S1 is tombstoned and
    the new summary lists only m10..m13.
    """
    build(t, 20)
    llm = scripted(deps, SUMMARY, "Summary two: the barge and quarry were settled too.")
    first = compacted(t)
    build(t, 3, start=20)
    out = compacted(t)
    assert (out["compacted"], out["reason"]) == (False, "below-min-to-compact")
    assert len(llm.prompts) == 1

    build(t, 1, start=23)
    out = compacted(t)
    assert (out["compacted"], out["messages_summarized"]) == (True, 4)
    prompt = llm.prompts[1][1]
    assert prompt.index(SUMMARY) < prompt.index(content(10))
    assert all(content(i) in prompt for i in range(10, 14))
    rows = listed(t)
    assert [r["msg_id"] for r in rows][:2] == [out["summary_msg_id"], "m14"]
    assert rows[0]["metadata"]["compacted_from"] == [f"m{i}" for i in range(10, 14)]
    (s1,) = [r for r in transcript(pool, org) if r["msg_id"] == first["summary_msg_id"]]
    assert s1["tombstoned_at"] is not None
    (s1_vec,) = vectors(pool, org, first["summary_msg_id"])
    assert s1_vec["tombstoned_at"] is not None


def test_a_failed_runs_summary_is_replaced_unread(t, deps, pool, org):
    """GIVEN a thread of 20 turns (server-derived ids) beside a summary an interrupted run
    left: it lists the first four turns, all still live, and sits at the first one's time
    WHEN a writer compacts the thread (keep_recent 10)
    THEN the stale summary's text is not in the prompt, it is tombstoned, and the new
    summary replaces the ten oldest turns.
    """
    ids = []
    for i in range(20):
        ids.append(t.append("th", content(i), role=("user", "assistant")[i % 2])["msg_id"])
    stale_from = ids[:4]
    stale_id = summary_msg_id("a1", stale_from)
    execute(
        pool,
        "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role,"
        " content, metadata, ts) SELECT org, namespace, thread_id, agent, %s, 'system', %s,"
        " %s, ts FROM loom.conversations WHERE org = %s AND msg_id = %s",
        (stale_id, "STALE interrupted summary", Jsonb({"compacted_from": stale_from}), org, ids[0]),
    )
    llm = scripted(deps, SUMMARY)
    out = compacted(t)
    assert (out["compacted"], out["messages_summarized"]) == (True, 10)
    assert "STALE" not in llm.prompts[0][1]
    (stale,) = [r for r in transcript(pool, org) if r["msg_id"] == stale_id]
    assert stale["tombstoned_at"] is not None


def test_a_turn_another_agent_holds_keeps_its_shared_embedding(t, deps, pool, org):
    """GIVEN a thread of 20 turns by agent a1, where agent a2 also logged m00 with the same
    text (the two copies share one embedding row)
    WHEN a1's turns are compacted
    THEN m00's embedding stays live, now answering for a2, while m01..m09's are tombstoned;
    a2's search still finds m00.
    """
    build(t, 20)
    t.append("th", content(0), msg_id="m00", role="user", agent="a2")
    scripted(deps, SUMMARY)
    out = compacted(t, agent="a1")
    assert (out["compacted"], out["messages_summarized"]) == (True, 10)
    vecs = {v["msg_id"]: v for v in vectors(pool, org)}
    assert vecs["m00"]["tombstoned_at"] is None and vecs["m00"]["agent"] == "a2"
    assert all(vecs[f"m{i:02d}"]["tombstoned_at"] is not None for i in range(1, 10))
    assert "m00" in t.hit_ids(content(0), agent="a2")


# ---- the model -----------------------------------------------------------------------------


def test_without_an_llm_provider_compaction_is_a_503(t, pool, org):
    """GIVEN the stock fake LLM
    WHEN a writer compacts a thread of 20 turns
    THEN it answers 503 and nothing changes.
    """
    build(t, 20)
    before = snapshot(pool, org)
    status, body = compact(t)
    assert status == 503, body
    assert snapshot(pool, org) == before


def test_a_failing_summarizer_is_a_502(t, deps, pool, org):
    """GIVEN a summarizer that raises
    WHEN a writer compacts a thread of 20 turns
    THEN it answers 502 and nothing changes.
    """
    build(t, 20)
    scripted(deps, LLMError("model overloaded"))
    before = snapshot(pool, org)
    status, body = compact(t)
    assert status == 502, body
    assert snapshot(pool, org) == before


def test_compaction_needs_a_writer(t, deps, pool, org):
    """GIVEN a thread of 20 turns
    WHEN a viewer compacts it
    THEN it answers 403 and nothing changes.
    """
    build(t, 20)
    scripted(deps, SUMMARY)
    before = snapshot(pool, org)
    status, body = t.post("conversation.compact", agent="a1", thread_id="th", as_="viewer")
    assert status == 403, body
    assert snapshot(pool, org) == before
