"""The SDK's client against a mock transport: what each call sends, and what a Session keeps."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import pytest
from loom import Agent, LoomError

APPENDED = {"msg_id": "m", "ts": "2026-01-01T00:00:00Z", "stored": True, "reason": ""}
UNAVAILABLE = {"error": {"code": "unavailable", "message": "the database is unavailable"}}

Handler = Callable[[str, dict[str, Any]], Awaitable[httpx2.Response | None]]


class Server:
    """Records every (op, body); `extract` answers memory.set_from_messages (default: a queue
    id naming the turns, `q:a,b`), everything else answers 200 with an empty result."""

    def __init__(self, extract: Handler | None = None):
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.extract = extract

    async def __call__(self, request: httpx2.Request) -> httpx2.Response:
        op = request.url.path.rsplit("/", 1)[-1]
        body = json.loads(request.content)
        self.sent.append((op, body))
        if op == "conversation.append":
            return httpx2.Response(200, json={**APPENDED, "ignored_args": []})
        if op == "memory.set_from_messages":
            answer = await self.extract(op, body) if self.extract else None
            queue_id = "q:" + ",".join(m["content"] for m in body["messages"])
            return answer or httpx2.Response(200, json={"deferred": True, "queue_id": queue_id})
        return httpx2.Response(200, json={"ignored_args": []})

    def extractions(self) -> list[list[str]]:
        """The turns' contents of every memory.set_from_messages call, in order."""
        return [
            [m["content"] for m in body["messages"]]
            for op, body in self.sent
            if op == "memory.set_from_messages"
        ]

    def body(self, op: str) -> dict[str, Any]:
        return next(body for sent_op, body in reversed(self.sent) if sent_op == op)


def agent(server: Server) -> Agent:
    transport = httpx2.MockTransport(server)
    return Agent("acme", "support", "bot", base_url="http://loom.test", transport=transport)


def turn(content: str) -> dict[str, str]:
    return {"role": "user", "content": content}


def test_a_failed_flush_keeps_the_turns_and_close_sends_them():
    """GIVEN flush_every=2 and one 503 from memory.set_from_messages (a write: not retried)
    WHEN the second turn's flush fails THEN append raises, the turns stay buffered, and
    close() hands both to extraction."""
    failed: list[bool] = []

    async def fail_once(op: str, body: dict[str, Any]) -> httpx2.Response | None:
        if failed:
            return None
        failed.append(True)
        return httpx2.Response(503, json=UNAVAILABLE)

    server = Server(fail_once)

    async def flow():
        async with agent(server) as bot:
            s = bot.session("thread-1", user_id="u1", flush_every=2)
            with pytest.raises(LoomError) as exc:
                await s.append(turn("I moved to Lisbon."), turn("Noted."))
            buffered = [t["content"] for t in s._buffer]
            await s.close()
            return exc.value, buffered, s

    error, buffered, s = asyncio.run(flow())
    assert (error.status, error.code) == (503, "unavailable")
    assert buffered == ["I moved to Lisbon.", "Noted."]
    assert server.extractions() == [["I moved to Lisbon.", "Noted."]] * 2
    assert s._buffer == [] and s.queue_ids == ["q:I moved to Lisbon.,Noted."]


def test_turns_appended_while_a_flush_fails_stay_after_its_turns():
    """GIVEN a flush in flight WHEN a turn is appended meanwhile and the flush then fails
    THEN the next flush sends the failed batch first and the new turn after it, once each."""
    gate = asyncio.Event()  # binds to a loop on first use: asyncio.run's
    calls: list[int] = []

    async def slow_then_fail(op: str, body: dict[str, Any]) -> httpx2.Response | None:
        calls.append(1)
        if len(calls) > 1:
            return None
        await gate.wait()
        return httpx2.Response(503, json=UNAVAILABLE)

    server = Server(slow_then_fail)

    async def flow():
        async with agent(server) as bot:
            s = bot.session("thread-1", user_id="u1", flush_every=100)
            await s.append(turn("a"), turn("b"))
            flushing = asyncio.create_task(s.flush())
            while not calls:
                await asyncio.sleep(0)
            await s.append(turn("c"))
            gate.set()
            with pytest.raises(LoomError):
                await flushing
            await s.close()
            return s

    s = asyncio.run(flow())
    assert server.extractions() == [["a", "b"], ["a", "b", "c"]]
    assert s._buffer == [] and s.queue_ids == ["q:a,b,c"]


def test_a_flush_asked_for_while_one_is_in_flight_sends_no_turn_twice():
    """GIVEN flush_every=2 and a slow extraction WHEN a second pair of turns reaches the
    threshold while the first pair is in flight THEN each turn is handed over exactly once,
    in order."""
    gate = asyncio.Event()

    async def slow_first(op: str, body: dict[str, Any]) -> httpx2.Response | None:
        if body["messages"][0]["content"] == "a":
            await gate.wait()
        return None

    server = Server(slow_first)

    async def flow():
        async with agent(server) as bot:
            s = bot.session("thread-1", user_id="u1", flush_every=2)
            first = asyncio.create_task(s.append(turn("a"), turn("b")))
            while len(server.extractions()) < 1:
                await asyncio.sleep(0)
            second = asyncio.create_task(s.append(turn("c"), turn("d")))
            for _ in range(50):
                await asyncio.sleep(0)
            gate.set()
            await asyncio.gather(first, second)
            await s.close()
            return s

    s = asyncio.run(flow())
    assert server.extractions() == [["a", "b"], ["c", "d"]]
    assert s._buffer == [] and s.queue_ids == ["q:a,b", "q:c,d"]


def test_ops_that_take_the_identity_get_all_of_it():
    server = Server()

    async def flow():
        async with agent(server) as bot:
            await bot.memory.set("user/city", "Lisbon", user_id="u1")
            await bot.call("erasure.request", kind="user", user_id="u1")
            await bot.call("memory.blacklist", pattern="secret*")
            await bot.call("some.future_op", x=1)

    asyncio.run(flow())
    identity = {"org": "acme", "namespace": "support"}
    assert server.body("memory.set") == {
        **identity, "agent": "bot", "key": "user/city", "value": "Lisbon", "user_id": "u1",
    }  # fmt: skip
    # Where namespace is optional the agent's own still applies unless the caller says None.
    assert server.body("erasure.request") == {**identity, "kind": "user", "user_id": "u1"}
    assert server.body("memory.blacklist") == {**identity, "pattern": "secret*"}
    assert server.body("some.future_op") == {**identity, "agent": "bot", "x": 1}


def test_namespace_none_asks_for_the_whole_org():
    """GIVEN an agent of namespace support WHEN erasure.request, erasure.export and
    memory.blacklist are called with namespace=None THEN no namespace is sent (the server's
    default: the whole org), and the org still is."""
    server = Server()

    async def flow():
        async with agent(server) as bot:
            await bot.call("erasure.request", kind="user", user_id="u1", namespace=None)
            await bot.call("erasure.export", kind="user", user_id="u1", namespace=None)
            await bot.call("memory.blacklist", pattern="secret*", namespace=None)
            await bot.call("extraction_policy.set", scope="org", namespace=None, rules=[])

    asyncio.run(flow())
    assert server.body("erasure.request") == {"org": "acme", "kind": "user", "user_id": "u1"}
    assert server.body("erasure.export") == {"org": "acme", "kind": "user", "user_id": "u1"}
    assert server.body("memory.blacklist") == {"org": "acme", "pattern": "secret*"}
    assert server.body("extraction_policy.set") == {"org": "acme", "scope": "org", "rules": []}


def test_identity_fields_an_op_does_not_take_are_not_sent():
    """GIVEN ops whose input has no agent (set_logging, erasure.status) or no identity at all
    (whoami) WHEN called THEN those fields are not sent, so ignored_args does not name them."""
    server = Server()

    async def flow():
        async with agent(server) as bot:
            await bot.conversations.set_logging(True)
            await bot.call("erasure.status", job_id="j1")
            await bot.call("system.whoami")

    asyncio.run(flow())
    assert server.body("conversation.set_logging") == {
        "org": "acme", "namespace": "support", "enabled": True,
    }  # fmt: skip
    assert server.body("erasure.status") == {"org": "acme", "job_id": "j1"}
    assert server.body("system.whoami") == {}
