"""A message a user saved where the transcript does not record it (a saved-only row) is that
user's alone: the saved-message ops serve it to its owner, and erasure.export to its subject;
no transcript read returns it or counts it (conversation.search in every mode, its BM25
windows and context vectors, threads, get, list, the titler, compaction, MCP), until the
client appends the same message where the namespace records."""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import psycopg
import pytest

from chalicelib.auth import mint_token
from chalicelib.providers.llm import ScriptedLLM
from chalicelib.store.migrate import migrate
from tests.integration.test_mcp_protocol import Session
from tests.integration.test_saved_support import (
    NS,
    OFF_NS,
    SUMMARY,
    list_saved,
    open_tenant,
    save,
    saved_status,
    search_saved,
    transcript,
    unsave,
)
from tests.integration.test_store_foundation import migrated_to

SECRET = "the quillwort ledger code is zanthoxylum"
ALSO = "a zanthoxylum reminder about the quillwort ledger"
QUERY = "quillwort ledger code zanthoxylum"
WORDS = ("quillwort", "zanthoxylum")
SAVED = ("saved-mixed", "saved-alone", "saved-off")  # the saved-only messages' ids
FIRST, SECOND = "the harbour crane lifts at noon", "the crane crew breaks at three"


@pytest.fixture
def t(api, deps, org):
    return open_tenant(api, deps, org)


@pytest.fixture
def saved_only(t):
    """u1's saved-only messages beside recorded turns: in NS, thread c-mixed recorded two
    turns, then, with recording off, u1 saved one message there and one in c-alone (a thread
    nothing recorded) before recording came back on; in OFF_NS (never recording) u1 saved one
    in c-off."""
    t.append("c-mixed", FIRST, msg_id="m1")
    t.append("c-mixed", SECOND, msg_id="m2", role="assistant")
    t.set_logging(NS, False)
    assert save(t, "c-mixed", "saved-mixed", SECRET)["indexed"]
    assert save(t, "c-alone", "saved-alone", ALSO)["indexed"]
    t.set_logging(NS, True)
    assert save(t, "c-off", "saved-off", SECRET, namespace=OFF_NS)["indexed"]
    return t


def leaked(answer: Any) -> bool:
    """True when an answer carries a saved-only message: its words or its id."""
    text = json.dumps(answer, default=str)
    return any(word in text for word in (*WORDS, *SAVED))


def _ids(rows: list[dict[str, Any]]) -> list[str]:
    return [r["msg_id"] for r in rows]


# ---- conversation.search --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["semantic", "lexical", "hybrid", "substring"])
def test_search_in_every_mode_never_returns_a_saved_only_message(saved_only, embedder, mode):
    """GIVEN u1's saved-only messages beside recorded turns, in a namespace that records now
    and in one that never did
    WHEN another reader searches for their words (semantic, lexical over BM25 windows, hybrid,
    and the substring fallback while the embedder fails), across the caller's namespaces, in
    one, in the thread, and filtered to u1
    THEN no hit is one of them, and no hit shows their words (a recorded neighbour's BM25
    window does not hold them), while the recorded turns are still found."""
    t = saved_only
    body = {} if mode == "substring" else {"search_mode": mode}
    embedder.failing = mode == "substring"
    try:
        for query in (QUERY, "quillwort"):
            for scope in ({}, {"namespace_scope": "this"}, {"thread_id": "c-mixed"},
                          {"user_id": "u1"}):  # fmt: skip
                out = t.search(query, **body, **scope)
                assert not leaked(out), (query, scope, out)
        found = t.hit_ids("harbour crane" if mode == "substring" else "harbour crane noon", **body)
    finally:
        embedder.failing = False
    assert "m1" in found


def test_a_turn_recorded_after_a_saved_only_message_is_not_read_after_it(saved_only, pool, org):
    """GIVEN u1's saved-only message after the recorded turns of c-mixed
    WHEN the client records a third turn there
    THEN the new turn's context vector is read after the last recorded turn, not after the
    saved message, and a lexical search for the saved words finds nothing, while one for the
    new turn's words finds it; hybrid ranks the recorded turn before it beside it."""
    t = saved_only
    t.append("c-mixed", "the kiln fires at dawn", msg_id="m3")
    with pool.connection() as conn:
        (context_of,) = conn.execute(
            "SELECT context_of FROM loom.conversation_embeddings WHERE org = %s AND msg_id = 'm3'",
            (org,),
        ).fetchone()
    assert context_of == "m2"
    assert not leaked(t.search("quillwort zanthoxylum", search_mode="lexical"))
    assert t.hit_ids("kiln dawn", search_mode="lexical") == ["m3"]
    assert {"m2", "m3"} <= set(t.hit_ids("kiln dawn", search_mode="hybrid"))


# ---- threads, get, list --------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["*", "a1"])
def test_threads_never_list_or_count_a_saved_only_message(saved_only, agent):
    """GIVEN u1's saved-only messages: the newest message of c-mixed, the only one of c-alone,
    and the only one of c-off in a namespace that never recorded
    WHEN another reader lists threads (every agent's, and the saving agent's)
    THEN c-mixed is listed with its two recorded turns and its last recorded turn as the
    excerpt; c-alone and c-off are not listed."""
    t = saved_only
    threads = t.ok("conversation.threads", agent=agent, as_="viewer")["threads"]
    assert [r["thread_id"] for r in threads] == ["c-mixed"]
    assert (threads[0]["msg_count"], threads[0]["last_excerpt"]) == (2, SECOND)
    off = t.ok("conversation.threads", agent=agent, namespace=OFF_NS, as_="viewer")
    assert off["threads"] == []


@pytest.mark.parametrize("agent", ["", "a1"])
def test_get_and_list_serve_no_saved_only_message(saved_only, agent):
    """GIVEN u1's saved-only messages
    WHEN another reader gets and lists the threads (every agent's, and the saving agent's),
    both ends first
    THEN c-mixed holds its two recorded turns and counts two; c-alone and c-off are not found,
    count nothing and list nothing."""
    t = saved_only

    def get(thread: str, namespace: str = NS, **kw: Any) -> dict[str, Any]:
        return t.ok("conversation.get", agent=agent, thread_id=thread, namespace=namespace,
                    include_messages=True, as_="viewer", **kw)  # fmt: skip

    def listed(thread: str, namespace: str = NS) -> list[str]:
        out = t.ok("conversation.list", agent=agent, thread_id=thread, namespace=namespace,
                   as_="viewer")  # fmt: skip
        return _ids(out["rows"])

    mixed = get("c-mixed")
    assert (_ids(mixed["messages"]), mixed["msg_count"]) == (["m1", "m2"], 2)
    assert mixed["next_cursor"] is None
    assert _ids(get("c-mixed", order="desc")["messages"]) == ["m2", "m1"]
    assert listed("c-mixed") == ["m1", "m2"]
    for thread, namespace in (("c-alone", NS), ("c-off", OFF_NS)):
        alone = get(thread, namespace)
        assert (alone["found"], alone["msg_count"], alone["messages"]) == (False, 0, [])
        assert listed(thread, namespace) == []


# ---- what still serves it -------------------------------------------------------------------


def test_its_owner_still_reads_it_through_the_saved_message_ops_and_the_export(saved_only):
    """GIVEN u1's saved-only messages
    WHEN u1 lists, searches and checks them, another user does the same, and u1's data is
    exported
    THEN u1 is served each one, the other user none, and the export holds all three."""
    t = saved_only
    assert {r["message_id"] for r in list_saved(t)["rows"]} == {"saved-mixed", "saved-alone"}
    assert {h["message_id"] for h in search_saved(t, "quillwort")} == {
        "saved-mixed", "saved-alone"}  # fmt: skip
    assert [h["message_id"] for h in search_saved(t, "quillwort", namespace=OFF_NS)] == [
        "saved-off"]  # fmt: skip
    assert saved_status(t, "c-mixed", ["m1", "saved-mixed"]) == ["saved-mixed"]
    assert list_saved(t, user="u2")["rows"] == [] and search_saved(t, "quillwort", user="u2") == []
    export = t.ok("erasure.export", kind="user", user_id="u1", namespace=None)["tables"]
    assert {r["msg_id"] for r in export["loom.conversations"]} == set(SAVED)


# ---- MCP ------------------------------------------------------------------------------------


def test_no_mcp_tool_returns_a_saved_only_message(saved_only, client, deps, org):
    """GIVEN u1's saved-only messages
    WHEN another reader's MCP session lists threads, gets and lists each thread through
    loom_op, and asks for conversation.search (hidden from MCP)
    THEN only the recorded turns come back and the search is refused."""
    s = Session(client, mint_token(deps, org=org, role="viewer"), f"?namespace={NS}")
    threads = s.tool("loom_conversation_threads")["threads"]
    assert [(r["thread_id"], r["msg_count"]) for r in threads] == [("c-mixed", 2)]
    got = s.op("conversation.get", thread_id="c-mixed", agent="", include_messages=True)
    assert _ids(got["messages"]) == ["m1", "m2"]
    assert s.op("conversation.list", thread_id="c-alone", agent="")["rows"] == []
    assert s.op("conversation.get", thread_id="c-alone", agent="")["found"] is False
    refused = s.op("conversation.search", query=QUERY)
    assert refused["error"]["code"] == "forbidden"
    assert not leaked([threads, got])


# ---- the titler and compaction --------------------------------------------------------------


def _run_titler(client) -> None:
    event = client.events.generate_cw_event(
        source="aws.events", detail_type="Scheduled Event", detail={}, resources=[]
    )
    client.lambda_.invoke("conversation_titler", event)


def _asked(llm: ScriptedLLM, word: str) -> list[str]:
    return [user for _, user in llm.prompts if word in user]


def test_the_titler_neither_counts_nor_reads_a_saved_only_message(t, deps, client):
    """GIVEN a thread of three recorded turns and a saved-only message, and a thread of four
    saved-only messages, in a namespace that records
    WHEN the scheduled titler runs; then a fourth turn is recorded and it runs again
    THEN neither thread is a candidate at first (three turns, and none); once the first has
    four recorded turns it is asked about once, with no word of the saved message."""
    deps._llm = llm = ScriptedLLM(replies=deque())
    for i in range(3):
        t.append("th-titled", f"zzmarkone turn {i} about the orchard", msg_id=f"m{i}")
    t.set_logging(NS, False)
    save(t, "th-titled", "saved-x", f"zzmarkone {SECRET}")
    for i in range(4):
        save(t, "th-saved", f"saved-{i}", f"zzmarktwo {ALSO} {i}")
    t.set_logging(NS, True)
    _run_titler(client)
    assert _asked(llm, "zzmarkone") == [] and _asked(llm, "zzmarktwo") == []

    t.append("th-titled", "zzmarkone turn 3 about the orchard", msg_id="m3")
    _run_titler(client)
    (prompt,) = _asked(llm, "zzmarkone")
    assert all(f"turn {i}" in prompt for i in range(4)) and not leaked(prompt)
    assert _asked(llm, "zzmarktwo") == []


def test_compaction_neither_summarises_nor_keeps_count_of_a_saved_only_message(t, deps):
    """GIVEN a thread of 14 recorded turns with a saved-only message after the sixth
    WHEN a writer compacts it, keeping the 10 most recent
    THEN the four oldest turns are summarised, the saved words never reach the summarizer,
    and the thread then lists the summary and the ten most recent recorded turns."""
    ids = [f"m{i:02d}" for i in range(14)]
    for i, msg in enumerate(ids[:6]):
        t.append("th", f"turn {i} about the barge timetable", msg_id=msg)
    t.set_logging(NS, False)
    save(t, "th", "saved-c", SECRET)
    t.set_logging(NS, True)
    for i, msg in enumerate(ids[6:], start=6):
        t.append("th", f"turn {i} about the barge timetable", msg_id=msg)
    deps._llm = llm = ScriptedLLM(replies=deque([SUMMARY]))
    out = t.ok("conversation.compact", agent="a1", thread_id="th", keep_recent=10,
               as_="writer")  # fmt: skip
    assert (out["compacted"], out["messages_summarized"]) == (True, 4), out
    assert len(llm.prompts) == 1 and not leaked(llm.prompts)
    rows = t.ok("conversation.list", agent="", thread_id="th", as_="viewer")["rows"]
    assert _ids(rows) == [out["summary_msg_id"], *ids[4:]]


# ---- becoming a turn, and going back --------------------------------------------------------


@pytest.mark.parametrize("saved_while", ["not-recording", "recording"])
def test_the_clients_append_where_the_namespace_records_makes_it_a_turn(t, saved_while):
    """GIVEN a message u1 saved after a recorded turn, while the namespace did not record
    (switched on since) or while it recorded but before the client appended it
    WHEN another reader looks for it, then the client appends the same message (same id)
    THEN it is no turn until then (recording alone does not make it one); afterwards the
    append answers duplicate, and get, threads and search serve it as an ordinary turn (the
    recorded turn before it reads it in its BM25 window)."""
    t.append("c1", FIRST, msg_id="m1")
    if saved_while == "not-recording":
        t.set_logging(NS, False)
    save(t, "c1", "saved-mixed", SECRET)
    t.set_logging(NS, True)
    got = t.ok("conversation.get", agent="", thread_id="c1", include_messages=True, as_="viewer")
    assert _ids(got["messages"]) == ["m1"] and not leaked(t.search(QUERY))

    out = t.append("c1", SECRET, msg_id="saved-mixed")
    assert (out["stored"], out["reason"]) == (True, "duplicate")
    got = t.ok("conversation.get", agent="", thread_id="c1", include_messages=True, as_="viewer")
    assert _ids(got["messages"]) == ["m1", "saved-mixed"]
    (thread,) = t.ok("conversation.threads", as_="viewer")["threads"]
    assert (thread["msg_count"], thread["last_excerpt"]) == (2, SECRET)
    assert t.hit_ids(QUERY)[0] == "saved-mixed"
    assert t.hit_ids("quillwort", search_mode="lexical") == ["saved-mixed"]
    assert {"m1", "saved-mixed"} <= set(t.hit_ids("quillwort", search_mode="hybrid"))


def test_another_agents_recorded_copy_is_a_turn_until_it_is_deleted(t):
    """GIVEN a message u1 saved through agent a1 while the namespace did not record
    WHEN agent a2 records the same message once the namespace records, and later a2's copies
    are deleted
    THEN the message is a searchable turn while a2's copy stands, and leaves every transcript
    read once it is gone, while u1's saved search still finds it."""
    t.set_logging(NS, False)
    save(t, "c1", "saved-mixed", SECRET, agent="a1")
    t.set_logging(NS, True)
    assert t.append("c1", SECRET, msg_id="saved-mixed", agent="a2")["stored"]
    assert t.hit_ids(QUERY) == ["saved-mixed"]
    assert t.hit_ids("quillwort", search_mode="lexical") == ["saved-mixed"]

    t.ok("conversation.delete", agent="a2", thread_id="c1", confirm_thread_id="c1", as_="admin")
    for mode in ("semantic", "lexical", "hybrid"):
        assert not leaked(t.search(QUERY, search_mode=mode)), mode
    assert t.ok("conversation.threads", as_="viewer")["threads"] == []
    assert [h["message_id"] for h in search_saved(t, "quillwort")] == ["saved-mixed"]


def test_unsaving_removes_it_even_once_the_namespace_records(t, pool, org):
    """GIVEN a message u1 saved while the namespace did not record, recording switched on since
    and the message never appended
    WHEN u1 unsaves it
    THEN it is removed (it existed only because of the save): no transcript row is left, and no
    read or search finds it."""
    t.set_logging(NS, False)
    save(t, "c1", "saved-mixed", SECRET)
    t.set_logging(NS, True)
    out = unsave(t, "c1", "saved-mixed")
    assert (out["found"], out["removed"]) == (True, True)
    assert transcript(pool, org, "saved-mixed") == []
    assert t.ok("conversation.get", agent="", thread_id="c1", as_="viewer")["found"] is False
    assert not leaked(t.search(QUERY)) and search_saved(t, "quillwort") == []


# ---- rows an earlier build wrote ------------------------------------------------------------


def test_rows_an_earlier_build_wrote_are_marked_and_read_past(database_url):
    """GIVEN a database migrated to 0021: in a thread, a recorded turn, a saved-only copy
    (saved, never appended), a recorded turn whose context vector was read after it, and a
    saved-only copy an earlier unsave left in place; every window built over all four
    WHEN the later migrations run
    THEN the saved copy's embedding row is marked saved-only and has no window, no other
    window holds its words (the first turn's reads on to the turn after it), the turn read
    after it has its own vector for context, and the copy the unsave left reads as recorded."""
    rows = [  # msg_id, content, is_saved, saved_only
        ("r1", FIRST, False, False),
        ("s1", SECRET, True, True),
        ("r2", "the kiln fires at dawn", False, False),
        ("o1", "an unsaved note about the barge", False, True),
    ]
    with migrated_to(database_url, 21) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            for i, (msg, content, is_saved, only) in enumerate(rows):
                conn.execute(
                    "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id,"
                    " role, content, ts, is_saved, saved_only) VALUES ('o', 'ns', 't', 'a', %s,"
                    " 'user', %s, now() + make_interval(secs => %s), %s, %s)",
                    (msg, content, i, is_saved, only),
                )
                conn.execute(
                    "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id,"
                    " msg_id, model, agent, role, text, dim, embedding, context_embedding,"
                    " context_of, ts, is_saved) SELECT org, namespace, thread_id, msg_id, 'm',"
                    " agent, role, content, 3, '[1,0,0]', %s::vector, %s, ts, is_saved"
                    " FROM loom.conversations WHERE msg_id = %s",
                    ("[0,1,0]" if msg == "r2" else "[1,0,0]", "s1" if msg == "r2" else None, msg),
                )
            conn.execute(  # the windows as that build wrote them: over every row
                "WITH w AS (SELECT msg_id, loom.turn_window(ts, lag(text, 2) OVER t,"
                " lag(text, 1) OVER t, text, lead(text, 1) OVER t) AS doc"
                " FROM loom.conversation_embeddings WINDOW t AS (ORDER BY ts, msg_id))"
                " UPDATE loom.conversation_embeddings e SET window_tsv = w.doc,"
                " window_len = loom.tsv_tokens(w.doc) FROM w WHERE e.msg_id = w.msg_id"
            )
        assert "0022_saved_only_reads.sql" in migrate(url)
        with psycopg.connect(url) as conn:
            marks = dict(conn.execute("SELECT msg_id, saved_only FROM loom.conversations"))
            embedded = {
                r[0]: r[1:]
                for r in conn.execute(
                    "SELECT msg_id, saved_only, window_tsv IS NULL,"
                    " window_tsv @@ to_tsquery('english', 'quillwort'),"
                    " window_tsv @@ to_tsquery('english', 'kiln'), context_of,"
                    " context_embedding::text = embedding::text"
                    " FROM loom.conversation_embeddings"
                )
            }
    assert marks == {"r1": False, "s1": True, "r2": False, "o1": False}
    assert embedded["s1"][:2] == (True, True)  # marked, no window
    for msg in ("r1", "r2", "o1"):
        saved_only, no_window, holds_secret, _, _, _ = embedded[msg]
        assert (saved_only, no_window, holds_secret) == (False, False, False), msg
    assert embedded["r1"][3] is True  # reads on to the turn after the saved copy
    assert embedded["r2"][4:] == (None, True)
