"""Races on one thread pinned down: a compaction whose window changes while its summarizer
runs (a delete, another compaction, a save), a save racing an append or an unsave of the same
message, and a saved embedding passed on to another agent's copy by a per-agent delete.

Each racing write runs at a fixed point: inside the summarizer (the compaction has read its
window and not yet taken the lease), or while an embed is held by an event.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import numpy as np
import pytest
from psycopg.types.json import Jsonb

from chalicelib.auth import local_caller
from chalicelib.ops.compaction import summary_msg_id
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.providers.llm import LLMResult
from chalicelib.registry import call
from chalicelib.store import compaction_rows, thread_leases, turn_writes
from tests.integration.test_conversation_support import NS
from tests.integration.test_saved_support import (
    OFF_NS,
    SUMMARY,
    content,
    execute,
    hit_ids,
    open_tenant,
    save,
    saved_status,
    search_saved,
    transcript,
    vectors,
)


@pytest.fixture
def t(api, deps, org):
    return open_tenant(api, deps, org)


def build(t, n: int, *, thread: str = "th") -> None:
    for i in range(n):
        t.append(thread, content(i), msg_id=f"m{i:02d}", role=("user", "assistant")[i % 2])


def op(deps, org: str, name: str, **body) -> dict:
    body.setdefault("org", org)
    body.setdefault("namespace", NS)
    return call(name, body, local_caller(org), deps).body


def save_op(deps, org: str, content: str, **body) -> dict:
    """conversation.save_message of user u1's turn m1 in c1 (agent a1), called directly."""
    fields = {"agent": "a1", "conversation_id": "c1", "message_id": "m1", "role": "user"}
    return op(deps, org, "conversation.save_message", **{**fields, **body}, content=content,
              user_id="u1")  # fmt: skip


class RacingLLM:
    """A summarizer that, on its first call, runs `meanwhile` (another writer that commits
    while the compaction's summarizer is out) before answering; later calls just answer."""

    name, answers = "racing", True

    def __init__(self, meanwhile: Callable[[], object]):
        self.meanwhile = meanwhile
        self.calls = 0
        self.outcome: object = None

    def complete(self, system, user, *, json_output=False, model=None):
        self.calls += 1
        if self.calls == 1:
            self.outcome = self.meanwhile()
        return LLMResult(text=SUMMARY, tokens_in=10, tokens_out=5)


def compact(deps, org: str, *, keep_recent: int, min_to_compact: int = 2) -> dict:
    return op(
        deps,
        org,
        "conversation.compact",
        agent="a1",
        thread_id="th",
        keep_recent=keep_recent,
        min_to_compact=min_to_compact,
    )


def live_turns(pool, org: str, thread: str = "th") -> list[dict]:
    return [
        r for r in transcript(pool, org) if r["thread_id"] == thread and r["tombstoned_at"] is None
    ]


def live_summaries(pool, org: str) -> list[dict]:
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT msg_id, metadata FROM loom.conversations WHERE org = %s AND thread_id = 'th'"
            " AND tombstoned_at IS NULL AND metadata ? 'compacted_from' ORDER BY ts, msg_id",
            (org,),
        ).fetchall()
    return [{"msg_id": m, "compacted_from": md["compacted_from"]} for m, md in rows]


# ---- compaction against a delete -----------------------------------------------------------


def test_a_compaction_racing_a_delete_does_not_bring_the_thread_back(t, deps, pool, org):
    """GIVEN a thread of 8 turns, and an admin who deletes it while the summarizer of a
    compaction (keep_recent 2) is writing
    WHEN the compaction takes the lease to retire its window
    THEN it finds its turns gone and writes nothing: it answers compacted false,
    nothing-to-compact; the thread holds no live turn and no live embedding; search, get and
    threads do not return the summary.
    """
    build(t, 8)
    body = {"agent": "", "thread_id": "th", "confirm_thread_id": "th"}
    deps._llm = llm = RacingLLM(lambda: op(deps, org, "conversation.delete", **body))
    out = compact(deps, org, keep_recent=2)

    assert llm.outcome is not None and llm.outcome["total"] > 0  # the delete answered first
    assert (out["compacted"], out["reason"], out["summary_msg_id"]) == (
        False,
        "nothing-to-compact",
        "",
    )
    assert out["messages_summarized"] == 0
    assert live_turns(pool, org) == []
    assert [v for v in vectors(pool, org) if v["tombstoned_at"] is None] == []
    assert t.hit_ids("the crew agreed to relocate the orchard and fire the kiln") == []
    got = t.ok("conversation.get", agent="", thread_id="th", include_messages=True, as_="viewer")
    assert got["found"] is False
    threads = t.ok("conversation.threads", agent="*", as_="viewer")
    assert "th" not in [r["thread_id"] for r in threads["threads"]]


def test_a_summary_row_tombstoned_by_a_delete_is_never_brought_back(t, deps, pool, org):
    """GIVEN a thread compacted once (summary S over m00..m05), then deleted
    WHEN the summary S is written again (insert_summary, as a compaction that read the window
    before both would) under a retirement of its own at another time
    THEN nothing is written: S stays tombstoned with its deleted content.
    """
    build(t, 8)
    deps._llm = RacingLLM(lambda: None)
    first = compact(deps, org, keep_recent=2)
    assert first["compacted"], first
    op(deps, org, "conversation.delete", agent="", thread_id="th", confirm_thread_id="th")
    (row,) = [r for r in transcript(pool, org) if r["msg_id"] == first["summary_msg_id"]]
    assert row["tombstoned_at"] is not None

    turn = turn_writes.NewTurn(
        org=org,
        namespace=NS,
        thread_id="th",
        agent="a1",
        msg_id=first["summary_msg_id"],
        role="system",
        content="a late summary of the deleted turns",
        metadata={"compacted_from": [f"m{i:02d}" for i in range(6)]},
    )
    with pool.connection() as conn:
        thread_leases.take_thread_lease(conn, org, NS, "th")
        written = compaction_rows.insert_summary(conn, turn, row["ts"], datetime.now(UTC))
    assert written is False
    (after,) = [r for r in transcript(pool, org) if r["msg_id"] == first["summary_msg_id"]]
    assert after["tombstoned_at"] == row["tombstoned_at"]
    assert after["content"] == SUMMARY
    assert live_turns(pool, org) == []


# ---- two compactions -----------------------------------------------------------------------


def test_two_compactions_at_once_leave_one_summary(t, deps, pool, org):
    """GIVEN a thread of 8 turns, and a compaction (keep_recent 2, window m00..m05) whose
    summarizer is writing while a second compaction (keep_recent 3, window m00..m04) runs to
    the end
    WHEN the first takes the lease to retire its window
    THEN it finds part of it retired by the second and writes nothing: it answers compacted
    false, already-compacted; the thread holds one live summary (over m00..m04), then
    m05..m07; no turn is listed by two summaries, and search returns one summary.
    """
    build(t, 8)
    deps._llm = llm = RacingLLM(lambda: compact(deps, org, keep_recent=3))
    out = compact(deps, org, keep_recent=2)

    inner = llm.outcome
    assert isinstance(inner, dict) and inner["compacted"] is True, inner
    assert inner["messages_summarized"] == 5
    assert (out["compacted"], out["reason"], out["summary_msg_id"]) == (
        False,
        "already-compacted",
        "",
    )
    (summary,) = live_summaries(pool, org)
    assert summary["msg_id"] == inner["summary_msg_id"]
    assert summary["compacted_from"] == [f"m{i:02d}" for i in range(5)]
    assert [r["msg_id"] for r in live_turns(pool, org)] == [
        inner["summary_msg_id"],
        "m05",
        "m06",
        "m07",
    ]
    hits = t.hit_ids("the crew agreed to relocate the orchard and fire the kiln")
    assert [h for h in hits if h.startswith("summary-")] == [inner["summary_msg_id"]]


# ---- compaction against a save -------------------------------------------------------------


def saving(deps, org: str, msg: str, i: int) -> Callable[[], dict]:
    def save_it() -> dict:
        role = ("user", "assistant")[i % 2]
        return save_op(deps, org, content(i), conversation_id="th", message_id=msg, role=role)

    return save_it


def test_a_turn_saved_while_the_summarizer_runs_is_left_out_of_the_summary(t, deps, pool, org):
    """GIVEN a thread of 8 turns, and a user who saves m03 while the summarizer of a
    compaction (keep_recent 2, window m00..m05) is writing
    WHEN the compaction retires its window
    THEN m03 is left out: the summary's compacted_from lists m00..m02 and m04..m05,
    messages_summarized is 5, m03 stays live and saved between the summary and the recent
    turns, and no live turn is listed by a live summary.
    """
    build(t, 8)
    deps._llm = llm = RacingLLM(saving(deps, org, "m03", 3))
    out = compact(deps, org, keep_recent=2)

    assert isinstance(llm.outcome, dict) and llm.outcome["indexed"] is True
    assert (out["compacted"], out["messages_summarized"]) == (True, 5), out
    (summary,) = live_summaries(pool, org)
    assert summary["compacted_from"] == ["m00", "m01", "m02", "m04", "m05"]
    live = live_turns(pool, org)
    assert [r["msg_id"] for r in live] == [out["summary_msg_id"], "m03", "m06", "m07"]
    assert {r["msg_id"] for r in live if r["is_saved"]} == {"m03"}
    assert not set(summary["compacted_from"]) & {r["msg_id"] for r in live}
    assert hit_ids(search_saved(t, content(3))) == ["m03"]


def test_a_save_that_leaves_too_few_turns_in_the_window_compacts_nothing(t, deps, pool, org):
    """GIVEN a thread of 6 turns, and a user who saves m01 while the summarizer of a
    compaction (keep_recent 2, min_to_compact 4, window m00..m03) is writing
    WHEN the compaction takes the lease
    THEN three new turns are left, fewer than min_to_compact: it answers compacted false,
    below-min-to-compact, writes no summary and retires nothing; m01 stays saved.
    """
    build(t, 6)
    deps._llm = RacingLLM(saving(deps, org, "m01", 1))
    out = compact(deps, org, keep_recent=2, min_to_compact=4)

    assert (out["compacted"], out["reason"]) == (False, "below-min-to-compact"), out
    assert (out["tokens_in"], out["tokens_out"]) == (10, 5)
    assert live_summaries(pool, org) == []
    live = live_turns(pool, org)
    assert [r["msg_id"] for r in live] == [f"m{i:02d}" for i in range(6)]
    assert {r["msg_id"] for r in live if r["is_saved"]} == {"m01"}


# ---- save against append and unsave --------------------------------------------------------


class HeldEmbedder(FakeEmbedder):
    """Holds any embed of a text holding `marker` until released; others answer at once."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.entered, self.release = threading.Event(), threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        if any(self.marker in text for text in texts):
            self.entered.set()
            assert self.release.wait(5)
        return super().embed_documents(texts)


def in_thread(fn: Callable[[], dict]) -> tuple[threading.Thread, dict]:
    result: dict = {}

    def target() -> None:
        try:
            result["out"] = fn()
        except Exception as exc:  # the assertion below shows it
            result["out"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    return thread, result


def save_racing_append(t, deps, org: str, stored: str, client: str) -> dict:
    """A save of new message m1 sent with `client` text reads it as new and embeds; while the
    embed is held, an append stores m1 with `stored` text (and its own vector); then the save
    goes on. Returns the save's answer."""
    t.append("c-warm", "the harbour log opens", msg_id="warm")
    deps._embedder = embedder = HeldEmbedder("client copy")
    saver, result = in_thread(lambda: save_op(deps, org, client))
    assert embedder.entered.wait(5)
    appended = op(
        deps,
        org,
        "conversation.append",
        agent="a1",
        thread_id="c1",
        msg_id="m1",
        role="user",
        content=stored,
    )
    assert appended["stored"] is True, appended
    embedder.release.set()
    saver.join(10)
    assert isinstance(result.get("out"), dict), result
    return result["out"]


def test_a_save_racing_an_append_indexes_the_stored_turn_not_the_clients_text(t, deps, pool, org):
    """GIVEN a save of new message m1 (client text "client copy: ...") whose embed is held
    WHEN an append stores m1 with other text meanwhile, and the save goes on
    THEN the save flags the stored turn: it answers indexed true; the transcript keeps the
    appended text, and the embedding row's text is that text, flagged saved for u1; u1's
    saved search shows the stored text, never the client's.
    """
    stored = "the transcript says the ferry leaves at nine"
    out = save_racing_append(t, deps, org, stored, "client copy: ferry office note")

    assert (out["indexed"], out["reason"]) == (True, ""), out
    (row,) = transcript(pool, org, "m1")
    assert (row["content"], row["is_saved"], row["user_id"]) == (stored, True, "u1")
    (vec,) = vectors(pool, org, "m1")
    assert (vec["text"], vec["is_saved"], vec["user_id"]) == (stored, True, "u1")
    assert vec["has_vector"] and vec["saved_at"] == row["saved_at"]
    deps._embedder = FakeEmbedder()
    hits = search_saved(t, "ferry leaves nine office note")
    assert [(h["message_id"], h["excerpt"]) for h in hits] == [("m1", stored)]


def test_a_save_racing_an_append_of_a_high_turn_is_refused(t, deps, pool, org):
    """GIVEN a save of new message m1 (plain client text) whose embed is held
    WHEN an append stores m1 with text that reads as high meanwhile, and the save goes on
    THEN the save answers indexed false, high_sensitivity; the turn is not saved, no
    embedding row is written for it, and u1's saved search finds nothing.
    """
    stored = "the vault password=hunter22 opens the ferry office"
    out = save_racing_append(t, deps, org, stored, "client copy: ferry office note")

    assert (out["indexed"], out["reason"]) == (False, "high_sensitivity"), out
    (row,) = transcript(pool, org, "m1")
    assert (row["content"], row["is_saved"], row["user_id"]) == (stored, False, "-")
    assert vectors(pool, org, "m1") == []
    deps._embedder = FakeEmbedder()
    assert search_saved(t, "ferry office note") == []


def test_a_retried_save_racing_an_unsave_stores_the_message_again(t, deps, pool, org, embedder):
    """GIVEN a message saved in a namespace that does not record while the embedder failed
    (embed_failed), and a retry of the save whose embed is held
    WHEN the user unsaves the message meanwhile (removing its row), and the retry goes on
    THEN the retry saves it anew, as the unsave then the save would: it answers indexed true
    with no reason (not "deleted"), one transcript row holds it, saved, and u1's saved status
    and search show it.
    """
    text = "the harbour ferry timetable changes in march"
    embedder.failing = True
    first = save(t, "c1", "m1", text, namespace=OFF_NS)
    assert first["reason"] == "embed_failed"
    deps._embedder = held = HeldEmbedder("harbour ferry timetable")
    saver, result = in_thread(lambda: save_op(deps, org, text, namespace=OFF_NS))
    assert held.entered.wait(5)
    body = {"namespace": OFF_NS, "agent": "a1", "conversation_id": "c1", "message_id": "m1"}
    unsaved = op(deps, org, "conversation.unsave_message", user_id="u1", **body)
    assert (unsaved["found"], unsaved["removed"]) == (True, True)
    held.release.set()
    saver.join(10)
    out = result.get("out")
    assert isinstance(out, dict), result
    assert (out["indexed"], out["reason"]) == (True, ""), out

    (row,) = transcript(pool, org, "m1")
    assert row["is_saved"] and row["user_id"] == "u1" and row["tombstoned_at"] is None
    (vec,) = vectors(pool, org, "m1")
    assert vec["is_saved"] and vec["has_vector"] and vec["tombstoned_at"] is None
    assert saved_status(t, "c1", ["m1"], namespace=OFF_NS) == ["m1"]
    deps._embedder = FakeEmbedder()
    assert hit_ids(search_saved(t, "ferry timetable march", namespace=OFF_NS)) == ["m1"]


# ---- a saved embedding passed on by a per-agent delete -------------------------------------


TEXT = "the harbour ferry timetable changes in march"


def test_a_saved_embedding_passed_to_an_unsaved_copy_is_not_saved_for_its_user(t, deps, pool, org):
    """GIVEN m1 logged by agent a1, and by agent a2 with user u2 (one shared embedding row),
    and saved by u1 through a1
    WHEN an admin deletes a1's copies of the thread
    THEN the embedding row passes to a2's copy with its user and its saved state (not saved):
    u2's saved search, saved status and list are all empty, and so are u1's.
    """
    t.append("c", TEXT, msg_id="m1", agent="a1")
    t.append("c", TEXT, msg_id="m1", agent="a2", user_id="u2")
    assert save(t, "c", "m1", TEXT, agent="a1")["indexed"]
    op(deps, org, "conversation.delete", agent="a1", thread_id="c", confirm_thread_id="c")

    (vec,) = vectors(pool, org, "m1")
    assert (vec["agent"], vec["user_id"], vec["tombstoned_at"]) == ("a2", "u2", None)
    assert (vec["is_saved"], vec["saved_at"]) == (False, None)
    for user in ("u1", "u2"):
        assert search_saved(t, "harbour ferry timetable", user=user) == []
        assert search_saved(t, "harbour ferry timetable", user=user, search_mode="semantic") == []
        assert saved_status(t, "c", ["m1"], user=user) == []
    assert "m1" in t.hit_ids("harbour ferry timetable", agent="a2")


def test_a_saved_embedding_passes_to_a_saved_copy_first(t, deps, pool, org):
    """GIVEN m1 logged by agents a1, a2 and a3 (one shared embedding row, a1's), and saved by
    u3 through a3's copy
    WHEN an admin deletes a1's copies of the thread
    THEN the embedding row passes to a3's saved copy (not a2's older unsaved one), flagged
    saved for u3 with a3's save time, and u3's saved search still finds m1.
    """
    t.append("c", TEXT, msg_id="m1", agent="a1")
    t.append("c", TEXT, msg_id="m1", agent="a2")
    t.append("c", TEXT, msg_id="m1", agent="a3")
    assert save(t, "c", "m1", TEXT, agent="a3", user="u3")["indexed"]
    op(deps, org, "conversation.delete", agent="a1", thread_id="c", confirm_thread_id="c")

    (a3,) = [r for r in transcript(pool, org, "m1") if r["agent"] == "a3"]
    (vec,) = vectors(pool, org, "m1")
    assert (vec["agent"], vec["user_id"], vec["tombstoned_at"]) == ("a3", "u3", None)
    assert vec["is_saved"] and vec["saved_at"] == a3["saved_at"]
    assert hit_ids(search_saved(t, "harbour ferry timetable", user="u3")) == ["m1"]
    semantic = search_saved(t, "harbour ferry timetable", user="u3", search_mode="semantic")
    assert hit_ids(semantic) == ["m1"]


def test_a_failed_runs_summary_of_the_same_turns_is_replaced_in_place(t, deps, pool, org):
    """GIVEN a thread of 8 turns beside a summary an interrupted run left of exactly the
    window a compaction (keep_recent 2) plans, m00..m05, so it has the new summary's id
    WHEN a writer compacts the thread
    THEN the stale summary is retired and the new one written in its place, live: the thread
    lists the new summary (its text) and m06, m07; the never-bring-back rule spares a row
    this compaction retired itself.
    """
    build(t, 8)
    sources = [f"m{i:02d}" for i in range(6)]
    stale_id = summary_msg_id("a1", sources)
    execute(
        pool,
        "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role,"
        " content, metadata, ts) SELECT org, namespace, thread_id, agent, %s, 'system', %s,"
        " %s, ts FROM loom.conversations WHERE org = %s AND msg_id = 'm00'",
        (stale_id, "STALE interrupted summary", Jsonb({"compacted_from": sources}), org),
    )
    deps._llm = RacingLLM(lambda: None)
    out = compact(deps, org, keep_recent=2)

    assert (out["compacted"], out["summary_msg_id"], out["messages_summarized"]) == (
        True,
        stale_id,
        6,
    )
    live = live_turns(pool, org)
    assert [r["msg_id"] for r in live] == [stale_id, "m06", "m07"]
    assert live[0]["content"] == SUMMARY
    (vec,) = vectors(pool, org, stale_id)
    assert vec["tombstoned_at"] is None and vec["has_vector"] and vec["text"] == SUMMARY


def test_an_erasure_passing_a_saved_embedding_on_passes_the_new_copys_saved_state(
    t, deps, pool, org
):
    """GIVEN m1 logged by agent a1 for user u1 and by agent a2 for user u2 (one shared
    embedding row, a1's), and saved by u1 through a1
    WHEN u1 is erased (without purge)
    THEN the embedding row passes to u2's copy with its saved state (not saved): u2's saved
    search and saved status are empty, while a2's turn is still found by search.
    """
    t.append("c", TEXT, msg_id="m1", agent="a1", user_id="u1")
    t.append("c", TEXT, msg_id="m1", agent="a2", user_id="u2")
    assert save(t, "c", "m1", TEXT, agent="a1")["indexed"]
    op(deps, org, "erasure.request", kind="user", user_id="u1")

    (vec,) = vectors(pool, org, "m1")
    assert (vec["agent"], vec["user_id"], vec["tombstoned_at"]) == ("a2", "u2", None)
    assert (vec["is_saved"], vec["saved_at"]) == (False, None)
    assert search_saved(t, "harbour ferry timetable", user="u2") == []
    assert saved_status(t, "c", ["m1"], user="u2") == []
    assert "m1" in t.hit_ids("harbour ferry timetable", agent="a2")
