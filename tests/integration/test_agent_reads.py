"""The agents' reads over HTTP: context.pack, memory.stack, search and memory.ask serve every
plane in one call, within the caller's tenant and scope, knowledge by the agent-tag rule, and
never text that reads as high."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import pytest

from chalicelib.context_budget import estimate_tokens
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.providers.llm import LLMError, ScriptedLLM
from tests.integration.test_memory_support import NS, NS2, Mem

CARD = "4111 1111 1111 1111"


@pytest.fixture
def m(api, deps, org):
    mem = Mem.open(api, deps, org)
    mem.ok("conversation.set_logging", as_="admin", enabled=True)
    return mem


def publish(m: Mem, uri: str, text: str, tags: list[str] | None = None, **kw: Any) -> dict:
    return m.ok("knowledge.publish", uri=uri, title=uri.split("//")[-1], text=text,
                tags=tags or [], **kw)  # fmt: skip


def pack(m: Mem, **kw: Any) -> dict[str, Any]:
    kw.setdefault("as_", "viewer")
    return m.ok("context.pack", **kw)


def items(packed: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return next((s["items"] for s in packed["sections"] if s["name"] == name), [])


def append(m: Mem, thread: str, role: str, content: str, **kw: Any) -> None:
    m.ok("conversation.append", thread_id=thread, role=role, content=content, **kw)


# ---- context.pack --------------------------------------------------------------------------


def test_a_pack_holds_each_plane_with_its_source_within_the_budget(m):
    """GIVEN memories, a knowledge document, a session brief and a thread
    WHEN context.pack asks with a query, the brief's key and the thread's last turns
    THEN its Markdown holds one section per source, each item names where it came from, and
    its stated estimate (one token per four bytes) is the text's and within the budget."""
    m.set("user/drink", "The user drinks oat milk flat whites every morning.")
    m.set("user/pet", "The user has a grey cat called Miso.")
    publish(m, "doc://coffee", "Oat milk is stocked on the third shelf of the office kitchen.")
    brief = m.ok("session.brief_save", brief_key="work", sections={"goal": "ship the coffee app"})
    for i, (role, text) in enumerate([("user", "hello"), ("assistant", "hi"), ("user", "oat?")]):
        append(m, "th-1", role, text, msg_id=f"m{i}")

    packed = pack(m, query="oat milk", brief_key="work", thread_id="th-1", recent_turns=2)

    assert [i["key"] for i in items(packed, "memories")][:1] == ["user/drink"]
    assert items(packed, "memories")[0]["version"] == 1
    assert [(i["uri"], i["chunk"]) for i in items(packed, "knowledge")] == [("doc://coffee", 0)]
    assert items(packed, "brief")[0]["revision"] == brief["revision"]
    assert [i["msg_id"] for i in items(packed, "recent")] == ["m1", "m2"]
    for title in ("## Memories", "## Knowledge", "## Session brief", "## Recent turns"):
        assert title in packed["text"]
    assert packed["tokens"] == estimate_tokens(packed["text"]) <= 2000
    assert packed["truncated"] is False


def test_a_small_budget_is_never_exceeded_and_says_it_cut(m):
    for i in range(30):
        m.set(f"fact/{i}", f"The user keeps fact number {i} about oat milk and long walks.")
    packed = pack(m, query="oat milk", budget_tokens=100)
    assert packed["truncated"] is True
    assert packed["tokens"] == estimate_tokens(packed["text"]) <= 100


def test_a_share_left_unused_passes_to_the_memories(m):
    """GIVEN only memories (no knowledge, brief or transcript asked for)
    WHEN the pack's budget is small
    THEN the memories take more than their half of it."""
    for i in range(30):
        m.set(f"fact/{i}", f"The user keeps fact number {i} about oat milk and long walks.")
    packed = pack(m, query="oat milk", budget_tokens=400)
    assert packed["tokens"] > 200 and items(packed, "memories")


def test_without_a_query_pinned_memories_come_first(m):
    m.set("user/a", "The user likes tea.")
    m.set("user/pinned", "The user is allergic to peanuts.", pin=True)
    m.set("user/b", "The user likes jazz.")
    keys = [i["key"] for i in items(pack(m), "memories")]
    assert keys[0] == "user/pinned" and set(keys) == {"user/a", "user/b", "user/pinned"}


def test_junk_memories_are_left_out_of_the_pack(m):
    m.set("step/1", "ran the tests")
    m.set("user/tool", "The user prefers pytest over unittest.")
    keys = [i["key"] for i in items(pack(m, query="pytest tests"), "memories")]
    assert keys == ["user/tool"]


def test_text_that_reads_as_high_is_never_packed(m):
    """GIVEN a card number planted in a memory, a document and a recent turn
    THEN no pack holds it."""
    m.set("user/card", f"The user's card is {CARD}.")
    m.set("user/milk", "The user drinks oat milk.")
    publish(m, "doc://cards", f"Oat milk receipts. The card on file is {CARD}.")
    append(m, "th-h", "user", f"my card is {CARD}, oat milk please")
    packed = pack(m, query="oat milk card", thread_id="th-h", recent_turns=5,
                  include_conversation=True)  # fmt: skip
    assert "4111" not in packed["text"]
    assert all("4111" not in str(s) for s in packed["sections"])


def test_knowledge_is_served_by_the_agent_tag_rule(m):
    """GIVEN a document tagged for bot-a, one for bot-b and one untagged
    THEN bot-a's pack holds its own and the untagged, '*' holds all three, '-' only the
    untagged."""
    publish(m, "doc://a", "Refund rule for the harbour ferry: bot a.", ["agent:bot-a"])
    publish(m, "doc://b", "Refund rule for the harbour ferry: bot b.", ["agent:bot-b"])
    publish(m, "doc://all", "Refund rule for the harbour ferry: everyone.")

    def served(agent: str) -> set[str]:
        packed = pack(m, agent=agent, query="harbour ferry refund", include_memories=False)
        return {i["uri"] for i in items(packed, "knowledge")}

    assert served("bot-a") == {"doc://a", "doc://all"}
    assert served("*") == {"doc://a", "doc://b", "doc://all"}
    assert served("-") == {"doc://all"}


def test_a_user_bounded_token_packs_only_its_users_memories(m):
    m.set("user/home", "User one lives in Lisbon by the river.", user_id="u1")
    m.set("user/home", "User two lives in Porto by the river.", user_id="u2")
    token = m.token("viewer", read_scope="own_user", read_user_id="u1")
    packed = m.ok("context.pack", token=token, query="lives by the river")
    assert "Lisbon" in packed["text"] and "Porto" not in packed["text"]
    status, _ = m.post("context.pack", token=token, thread_id="th", recent_turns=3)
    assert status == 403  # no namespace-wide transcript for a user-bounded token


def test_another_tenants_rows_never_reach_a_pack(m, api, deps):
    other = Mem.open(api, deps, m.org + "x")
    other.set("user/secret", "The other org's user drinks oat milk in Oslo.")
    publish(other, "doc://other", "Oat milk policy of the other org, Oslo office.")
    m.set("user/milk", "The user drinks oat milk.", namespace=NS2)
    packed = pack(m, query="oat milk Oslo")
    assert "Oslo" not in packed["text"] and "user/milk" not in packed["text"]
    bound = m.token("viewer", namespace=NS2)
    assert m.post("context.pack", token=bound, query="oat")[0] == 403


def test_a_pack_reports_pending_extraction(m):
    m.extract_ok([{"role": "user", "content": "I moved to Lisbon."}], defer=True)
    assert pack(m, query="where do I live")["pending_extraction"] is True


class MeetingEmbedder(FakeEmbedder):
    """Answers a query only once two queries are in at once: legs run one after another would
    never meet, and the read would fail."""

    def __init__(self) -> None:
        super().__init__()
        self.meet = threading.Barrier(2, timeout=5)

    def embed_query(self, text: str):
        self.meet.wait()
        return super().embed_query(text)


def test_the_packs_legs_run_concurrently(m, deps):
    """GIVEN an embedder whose query calls wait for a second one to arrive
    WHEN a pack searches memories and knowledge for a query
    THEN it answers: the two legs asked at once."""
    m.set("user/drink", "The user drinks oat milk.")
    publish(m, "doc://coffee", "Oat milk is on the third shelf.")
    deps._embedder = MeetingEmbedder()
    packed = pack(m, query="oat milk")
    assert items(packed, "memories") and items(packed, "knowledge")


# ---- memory.stack --------------------------------------------------------------------------


def test_the_stack_lists_served_documents_then_memories_pinned_then_by_confidence(m):
    publish(m, "doc://a", "For bot a.", ["agent:bot-a"])
    publish(m, "doc://all", "For everyone.")
    m.set("user/low", "The user likes tea.")
    m.set("user/high", "The user likes jazz.")
    m.set("user/pin", "The user is allergic to peanuts.", pin=True)
    m.set("step/x", "ran the tests")
    m.admin("memory.apply", as_="admin", namespace=NS,
            actions=[{"action": "demote", "key": "user/low"}])  # fmt: skip
    out = m.ok("memory.stack", as_="viewer", agent="bot-b")
    assert [d["uri"] for d in out["documents"]] == ["doc://all"]
    assert [r["key"] for r in out["memories"]] == ["user/pin", "user/high", "user/low"]
    assert out["filtered"] == {"trajectory": 1}


def test_the_stack_pages_by_cursor_without_skipping_or_repeating(m):
    for i in range(7):
        m.set(f"user/k{i}", f"The user keeps item {i}.")
    seen, cursor = [], None
    while True:
        body: dict[str, Any] = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        out = m.ok("memory.stack", as_="viewer", **body)
        seen += [r["key"] for r in out["memories"]]
        cursor = out["next_cursor"]
        if not cursor:
            break
    assert sorted(seen) == [f"user/k{i}" for i in range(7)]


# ---- search --------------------------------------------------------------------------------


def test_search_answers_every_plane_in_sections(m):
    m.set("user/drink", "The user drinks oat milk.")
    publish(m, "doc://coffee", "Oat milk is on the third shelf.")
    append(m, "th-s", "user", "do we have oat milk in the kitchen")
    out = m.ok("search", as_="viewer", query="oat milk")
    assert out["memory"][0]["key"] == "user/drink"
    assert out["knowledge"][0]["uri"] == "doc://coffee"
    assert out["conversation"][0]["thread_id"] == "th-s"
    only = m.ok("search", as_="viewer", query="oat milk", sections=["knowledge"])
    assert only["memory"] == [] and only["conversation"] == [] and only["knowledge"]


def test_search_defaults_to_no_agent_so_bot_rules_stay_with_their_bot(m):
    publish(m, "doc://a", "Harbour ferry refunds for bot a.", ["agent:bot-a"])
    out = m.ok("search", as_="viewer", query="harbour ferry refunds", agent="-")
    assert out["knowledge"] == []
    mine = m.ok("search", as_="viewer", query="harbour ferry refunds", agent="bot-a")
    assert [h["uri"] for h in mine["knowledge"]] == ["doc://a"]


def test_search_for_a_user_bounded_token_leaves_the_transcript_out(m):
    m.set("user/home", "User one lives in Lisbon.", user_id="u1")
    append(m, "th-u", "user", "Lisbon is lovely")
    token = m.token("viewer", read_scope="own_user", read_user_id="u1")
    out = m.ok("search", token=token, query="Lisbon")
    assert out["conversation"] == [] and out["memory"]
    status, _ = m.post("search", token=token, query="Lisbon", sections=["conversation"])
    assert status == 403


# ---- memory.ask ----------------------------------------------------------------------------


def test_ask_returns_passages_from_every_plane(m):
    m.set("user/drink", "The user drinks oat milk.")
    publish(m, "doc://coffee", "Oat milk is on the third shelf. " * 200)  # too long to be whole
    out = m.ok("memory.ask", as_="viewer", question="where is the oat milk")
    sources = {p["source"] for p in out["passages"]}
    assert {"memory", "knowledge"} <= sources
    assert not any(p["whole_document"] for p in out["passages"])


def test_ask_takes_a_short_best_document_or_a_named_one_whole(m):
    publish(m, "doc://short", "Refunds take five days.\n\nThey go to the card used.")
    out = m.ok("memory.ask", as_="viewer", question="how long do refunds take")
    assert out["passages"][0]["whole_document"] is True
    assert out["passages"][0]["text"].endswith("They go to the card used.")
    long_text = "Shipping notes. " * 400
    publish(m, "doc://long", long_text)
    named = m.ok("memory.ask", as_="viewer", question="summarise doc://long please")
    assert named["passages"][0]["uri"] == "doc://long" and named["passages"][0]["whole_document"]


def test_ask_synthesizes_from_the_passages_and_fails_open(m, deps):
    m.set("user/drink", "The user drinks oat milk.")
    deps._llm = llm = ScriptedLLM(replies=deque(["Oat milk [1]."]))
    out = m.ok("memory.ask", as_="viewer", question="what does the user drink", synthesize=True)
    assert out["answer"] == "Oat milk [1]." and out["answer_error"] is None
    assert "The user drinks oat milk." in llm.prompts[0][1]
    deps._llm = ScriptedLLM(replies=deque([LLMError("down")]))
    failed = m.ok("memory.ask", as_="viewer", question="what does the user drink",
                  synthesize=True)  # fmt: skip
    assert failed["answer"] is None and failed["answer_error"] and failed["passages"]


def test_ask_never_returns_high_text(m):
    m.set("user/card", f"The user's card is {CARD}.")
    publish(m, "doc://c", f"Card on file {CARD}.")
    out = m.ok("memory.ask", as_="viewer", question="what card is on file")
    assert all("4111" not in p["text"] for p in out["passages"])


def test_ask_and_search_are_listed_over_mcp_as_the_spec_says():
    from chalicelib.mcp import list_tools

    core = {t["name"] for t in list_tools("core")}
    assert {"loom_search", "loom_context_pack"} <= core


def test_the_stack_refuses_a_cursor_it_did_not_issue_and_never_shows_high_text(m, api, deps):
    m.set("user/card", f"The user's card is {CARD}.")
    m.set("user/tea", "The user likes tea.")
    other = Mem.open(api, deps, m.org + "y")
    other.set("user/oslo", "The other org's user lives in Oslo.")
    out = m.ok("memory.stack", as_="viewer")
    assert [r["key"] for r in out["memories"]] == ["user/tea"]
    for bad in ("not-a-cursor", "WzEsMiwzXQ==", "W3RydWUsICJ4IiwgMSwgIi0iLCAiayJd"):
        status, body = m.post("memory.stack", as_="viewer", cursor=bad)
        assert status == 400 and body["error"]["code"] == "bad_request", (bad, body)


def test_ask_serves_a_bots_rule_to_that_bot_only_whole_or_in_part(m):
    """GIVEN a short document tagged for bot-a (the whole-document route's size)
    THEN ask under bot-a gets it whole, under bot-b and '-' not at all, even naming its uri."""
    publish(m, "learning://c1", "Always answer refund questions in French.", ["agent:bot-a"])

    def uris(agent: str, question: str) -> list[str]:
        out = m.ok("memory.ask", as_="viewer", agent=agent, question=question)
        return [p["uri"] for p in out["passages"] if p["source"] == "knowledge"]

    assert uris("bot-a", "refund questions French") == ["learning://c1"]
    assert uris("bot-b", "refund questions French") == []
    assert uris("-", "what does learning://c1 say") == []


def test_search_never_returns_high_text_from_any_plane(m):
    m.set("user/card", f"The user's card is {CARD} for oat milk.")
    publish(m, "doc://c", f"Oat milk card on file {CARD}.")
    append(m, "th-c", "user", f"oat milk on card {CARD}")
    out = m.ok("search", as_="viewer", query="oat milk card")
    assert "4111" not in str(out)


def test_the_stack_and_ask_read_only_a_user_bounded_tokens_user(m):
    m.set("user/home", "User one lives in Lisbon by the river.", user_id="u1")
    m.set("user/home", "User two lives in Porto by the river.", user_id="u2")
    token = m.token("viewer", read_scope="own_user", read_user_id="u1")
    stack = m.ok("memory.stack", token=token)
    assert [(r["user_id"], r["value"][:8]) for r in stack["memories"]] == [("u1", "User one")]
    asked = m.ok("memory.ask", token=token, question="who lives by the river")
    texts = " ".join(p["text"] for p in asked["passages"])
    assert "Lisbon" in texts and "Porto" not in texts
    status, body = m.post("memory.stack", token=token, user_id="u2")  # another user: refused
    assert status == 403 and body["error"]["code"] == "forbidden"
