"""The framework adapters (loom.adapters) against the real server, with each framework's own
package: the OpenAI Agents SDK's Session and LangGraph's BaseStore."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import pytest
from agents import Agent as OpenAIAgent
from agents import OpenAIChatCompletionsModel, RunConfig, Runner
from agents.memory import Session as AgentsSession
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from loom import Agent
from loom.adapters.langgraph_store import LoomStore
from loom.adapters.openai_agents import LoomSession, RecordingOffError
from openai import AsyncOpenAI
from typing_extensions import TypedDict

from tests.live_server import live_server
from tests.openai_stub import OpenAIStub

# Responses API input items as a run adds them: a user message, the model's message, a tool
# call and its output, a reasoning item.
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Lisbon?"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Ask."}]},
    {"type": "function_call", "call_id": "call_1", "name": "weather",
     "arguments": '{"city": "Lisbon"}', "id": "fc_1", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "22 C, sunny"},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "It is 22 C and sunny.", "annotations": []}]},
]  # fmt: skip


@pytest.fixture(scope="module")
def server(database_url):
    with live_server(database_url) as base:
        yield base


def _run(coro, *args):
    return anyio.run(coro, *args)


async def _recording_bot(server: str) -> Agent:
    bot = Agent("dev", f"agents-{uuid.uuid4().hex[:8]}", "assistant", base_url=server)
    await bot.conversations.set_logging(True)
    return bot


# ---- the OpenAI Agents SDK's Session -------------------------------------------------------


def test_a_session_gives_back_the_items_it_was_given_in_order(server):
    """GIVEN a Loom session WHEN a run's items are added in two calls THEN get_items gives them
    back equal and in order, a limit gives the latest, and another session object on the same
    thread reads the same; the transcript holds one turn per item, its role mapped."""

    async def flow():
        async with await _recording_bot(server) as bot:
            session = LoomSession("chat-1", bot, user_id="u-1")
            await session.add_items(ITEMS[:2])
            await session.add_items(ITEMS[2:])
            again = LoomSession("chat-1", bot, user_id="u-1")
            thread = await bot.conversations.get("chat-1", include_messages=True)
            return (
                isinstance(session, AgentsSession),
                await session.get_items(),
                await session.get_items(limit=2),
                await again.get_items(),
                [(t["role"], t["content"], t["user_id"]) for t in thread["messages"]],
            )

    is_session, items, latest, again, turns = _run(flow)
    assert is_session
    assert items == ITEMS
    assert latest == ITEMS[-2:]
    assert again == ITEMS
    assert turns == [
        ("user", "What is the weather in Lisbon?", "u-1"),
        ("assistant", "reasoning", "u-1"),
        ("assistant", 'weather({"city": "Lisbon"})', "u-1"),
        ("tool", "22 C, sunny", "u-1"),
        ("assistant", "It is 22 C and sunny.", "u-1"),
    ]


def test_pop_item_removes_the_latest_and_clear_session_empties_the_thread(server):
    """GIVEN a session of three items WHEN pop_item runs THEN it returns the latest and the
    session holds the other two, in order; WHEN clear_session runs THEN the session is empty,
    pop_item returns None, and items added afterwards are kept."""

    async def flow():
        async with await _recording_bot(server) as bot:
            session = LoomSession("chat-2", bot)
            await session.add_items(ITEMS[:3])
            popped = await session.pop_item()
            after_pop = await session.get_items()
            await session.clear_session()
            cleared, nothing = await session.get_items(), await session.pop_item()
            await session.add_items([ITEMS[0]])
            return popped, after_pop, cleared, nothing, await session.get_items()

    popped, after_pop, cleared, nothing, fresh = _run(flow)
    assert popped == ITEMS[2]
    assert after_pop == ITEMS[:2]
    assert (cleared, nothing) == ([], None)
    assert fresh == [ITEMS[0]]


def test_an_item_larger_than_metadata_holds_or_without_text_comes_back_whole(server):
    """GIVEN a tool output of 100,000 characters and a message of an image only WHEN they are
    added THEN get_items gives them back equal (the large one kept as the turn's content, past
    the 64 KiB metadata bound)."""
    big = {"type": "function_call_output", "call_id": "call_9", "output": "x" * 100_000}
    image = {"role": "user", "content": [{"type": "input_image", "image_url": "https://x/a.png"}]}

    async def flow():
        async with await _recording_bot(server) as bot:
            session = LoomSession("chat-3", bot)
            await session.add_items([ITEMS[0], big, image])
            return await session.get_items()

    assert _run(flow) == [ITEMS[0], big, image]


def test_a_namespace_that_does_not_record_refuses_the_items(server):
    """GIVEN a namespace whose recording is off WHEN items are added THEN the session says so
    instead of losing them silently."""

    async def flow():
        async with Agent("dev", f"quiet-{uuid.uuid4().hex[:8]}", base_url=server) as bot:
            await LoomSession("chat-4", bot).add_items([ITEMS[0]])

    with pytest.raises(RecordingOffError, match="does not record"):
        _run(flow)


def test_a_runner_keeps_its_conversation_in_loom(server):
    """GIVEN the Agents SDK's Runner with a chat model (a local OpenAI-compatible stub) and a
    Loom session WHEN two runs share the session THEN the second run's model call reads the
    first exchange, and the session holds both exchanges."""
    replies = iter(["Noted: Lisbon.", "You live in Lisbon."])

    async def flow(stub: OpenAIStub):
        client = AsyncOpenAI(base_url=stub.base_url, api_key="stub")
        model = OpenAIChatCompletionsModel(model="stub-model", openai_client=client)
        helper = OpenAIAgent(name="helper", instructions="Be brief.", model=model)
        config = RunConfig(tracing_disabled=True)
        async with await _recording_bot(server) as bot:
            session = LoomSession("run-1", bot, user_id="u-7")
            await Runner.run(helper, "I live in Lisbon.", session=session, run_config=config)
            second = await Runner.run(
                helper, "Where do I live?", session=session, run_config=config
            )
            return second.final_output, await session.get_items()

    with OpenAIStub(chat_reply=lambda req: next(replies)) as stub:
        answer, items = _run(flow, stub)
        last_call = [body for path, body in stub.requests if path.endswith("/chat/completions")][-1]
    assert answer == "You live in Lisbon."
    said = [(m["role"], m["content"]) for m in last_call["messages"]]
    assert said[1:] == [
        ("user", "I live in Lisbon."),
        ("assistant", "Noted: Lisbon."),
        ("user", "Where do I live?"),
    ]
    texts = [json.dumps(item) for item in items]
    assert len(items) == 4 and "Where do I live?" in texts[2] and "You live in Lisbon." in texts[3]


# ---- LangGraph's BaseStore -----------------------------------------------------------------


@pytest.fixture
def store(server):
    with LoomStore("dev", f"graph-{uuid.uuid4().hex[:8]}", base_url=server) as s:
        yield s


def test_put_get_and_delete_round_trip_through_loom_memories(store, server):
    """GIVEN a LangGraph store on Loom WHEN an item is put under a namespace whose labels hold a
    slash and a space THEN get gives back its value, an update keeps created_at and moves
    updated_at, the Loom memory is under the documented key, and delete removes it."""
    ns = ("users", "u/42", "my prefs")
    store.put(ns, "theme", {"color": "dark", "size": 14})
    first = store.get(ns, "theme")
    store.put(ns, "theme", {"color": "light", "size": 14})
    second = store.get(ns, "theme")
    key = "langgraph/users/u%2F42/my%20prefs/theme"
    memory = _run(_memory_get, server, store, key)
    store.delete(ns, "theme")

    assert first is not None and second is not None
    assert (first.namespace, first.key, first.value) == (ns, "theme", {"color": "dark", "size": 14})
    assert second.value == {"color": "light", "size": 14}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert memory["found"] and json.loads(memory["memory"]["value"])["value"]["color"] == "light"
    assert store.get(ns, "theme") is None
    assert store.get(("users", "u/42"), "theme") is None


async def _memory_get(server: str, store: LoomStore, key: str) -> dict[str, Any]:
    async with Agent("dev", store._bot.namespace, base_url=server) as bot:
        return await bot.memory.get(key)


def test_search_reads_only_the_prefix_filters_and_pages(store):
    """GIVEN items under two users WHEN one user's prefix is listed THEN only that user's items
    come back, newest first; a filter and offset/limit apply; a query ranks the prefix's items
    with scores and leaves the other user's out."""
    store.put(("users", "a", "notes"), "n1", {"text": "likes green tea", "stars": 3})
    store.put(("users", "a", "notes"), "n2", {"text": "prefers window seats", "stars": 5})
    store.put(("users", "a"), "profile", {"text": "lives in Porto", "stars": 1})
    store.put(("users", "b", "notes"), "n1", {"text": "likes green tea", "stars": 4})

    listed = store.search(("users", "a"))
    assert [i.key for i in listed] == ["profile", "n2", "n1"]
    assert all(i.score is None for i in listed)
    assert [i.key for i in store.search(("users", "a"), filter={"stars": {"$gte": 3}})] == [
        "n2",
        "n1",
    ]
    assert [i.key for i in store.search(("users", "a"), limit=1, offset=1)] == ["n2"]
    assert [i.key for i in store.search(("users", "a", "notes"), filter={"stars": 5})] == ["n2"]
    found = store.search(("users", "a"), query="green tea")
    assert found[0].key == "n1" and found[0].namespace == ("users", "a", "notes")
    assert {i.namespace[:2] for i in found} == {("users", "a")}
    assert all(i.score is not None and i.score > 0 for i in found)
    assert len(store.search(())) == 4


def test_stores_of_two_users_in_one_namespace_keep_apart(store, server):
    """GIVEN a store of the namespace's shared rows and one of user u-1 in the same Loom
    namespace WHEN each puts an item under the same namespace and key THEN each gets, lists and
    searches its own only."""
    with LoomStore("dev", store._bot.namespace, user_id="u-1", base_url=server) as mine:
        store.put(("notes",), "n1", {"text": "shared green tea"})
        mine.put(("notes",), "n1", {"text": "my green tea"})
        mine.put(("notes",), "n2", {"text": "my window seat"})
        got = (store.get(("notes",), "n1"), mine.get(("notes",), "n1"))
        listed = ([i.key for i in store.search(("notes",))], [i.key for i in mine.search(())])
        found = [i.value["text"] for i in mine.search(("notes",), query="green tea")]
        spaces = (store.list_namespaces(), mine.list_namespaces())
    assert [g.value["text"] for g in got if g] == ["shared green tea", "my green tea"]
    assert listed == (["n1"], ["n2", "n1"])
    assert "shared green tea" not in found and "my green tea" in found
    assert spaces == ([("notes",)], [("notes",)])


def test_list_namespaces_matches_prefixes_suffixes_and_depth(store):
    """GIVEN items in three namespaces WHEN namespaces are listed THEN prefix, suffix (with a
    wildcard) and max_depth select as LangGraph defines them."""
    for ns in [("docs", "u1", "draft"), ("docs", "u2", "final"), ("cache", "v1")]:
        store.put(ns, "k", {"n": 1})
    assert store.list_namespaces() == [("cache", "v1"), ("docs", "u1", "draft"),
                                       ("docs", "u2", "final")]  # fmt: skip
    assert store.list_namespaces(prefix=("docs",)) == [("docs", "u1", "draft"),
                                                       ("docs", "u2", "final")]  # fmt: skip
    assert store.list_namespaces(suffix=("*", "draft")) == [("docs", "u1", "draft")]
    assert store.list_namespaces(max_depth=1) == [("cache",), ("docs",)]


def test_the_async_api_and_a_compiled_graph_use_the_store(store):
    """GIVEN a graph compiled with the Loom store WHEN a node writes through the injected store
    and the async API reads THEN each sees the other's items."""

    class State(TypedDict):
        user: str
        count: int

    def remember(state: State, *, store: BaseStore) -> dict[str, int]:
        seen = store.get(("visits",), state["user"])
        count = (seen.value["count"] if seen else 0) + 1
        store.put(("visits",), state["user"], {"count": count})
        return {"count": count}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    graph = builder.compile(store=store)

    async def flow():
        first = await graph.ainvoke({"user": "u-1", "count": 0})
        await store.aput(("visits",), "u-2", {"count": 10})
        second = await graph.ainvoke({"user": "u-2", "count": 0})
        return first, second, await store.aget(("visits",), "u-1"), await store.asearch(("visits",))

    first, second, item, listed = _run(flow)
    assert (first["count"], second["count"]) == (1, 11)
    assert item is not None and item.value == {"count": 1}
    assert sorted(i.key for i in listed) == ["u-1", "u-2"]
    assert graph.invoke({"user": "u-1", "count": 0})["count"] == 2
