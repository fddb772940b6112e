"""The Loom client: `Agent` binds an org, namespace and agent; every op is one POST."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, cast

import httpx2

from loom._generated import (
    IDENTITY,
    OPS,
    ConversationAppendResult,
    MemorySetFromMessagesResult,
    SessionBriefSaveResult,
)

RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0)  # seconds, for read and idempotent ops only
RETRIED_KINDS = ("read", "idempotent")


class LoomError(Exception):
    """An error answer: the server's code (e.g. `forbidden`), HTTP status and message."""

    def __init__(self, code: str, status: int, message: str):
        super().__init__(f"{status} {code}: {message}")
        self.code, self.status, self.message = code, status, message


class Agent:
    """One agent of one namespace: `async with Agent("acme", "support", "triage-bot") as bot`."""

    def __init__(
        self,
        org: str = "",
        namespace: str = "",
        agent: str = "-",
        *,
        base_url: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
        transport: httpx2.AsyncBaseTransport | None = None,
    ):
        self.org, self.namespace, self.agent = org, namespace, agent
        base = base_url or os.environ.get("LOOM_BASE_URL", "http://localhost:7777")
        token = token or os.environ.get("LOOM_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx2.AsyncClient(
            base_url=base.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )
        self.memory = Memory(self)
        self.conversations = Conversations(self)
        self.briefs = Briefs(self)
        self.knowledge = Knowledge(self)

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, op: str, **fields: Any) -> dict[str, Any]:
        """POST /v1/<op> with this agent's identity filled in where the op's input takes it;
        read and idempotent ops are retried on 503 and on connection errors. A field passed as
        None is left out, identity included: `namespace=None` asks erasure.request, erasure.export
        and memory.blacklist for the whole org."""
        identity = {"org": self.org, "namespace": self.namespace, "agent": self.agent}
        taken = IDENTITY.get(op, tuple(identity))  # an op newer than this SDK: all of them
        body = {k: v for k, v in identity.items() if v and k in taken and k not in fields}
        body |= {k: v for k, v in fields.items() if v is not None}
        retried = OPS.get(op, ("write", None))[0] in RETRIED_KINDS
        for attempt in range(len(RETRY_DELAYS) + 1):
            try:
                resp = await self._http.post(f"/v1/{op}", json=body)
            except httpx2.TransportError:
                if not retried or attempt == len(RETRY_DELAYS):
                    raise
            else:
                if resp.status_code != 503 or not retried or attempt == len(RETRY_DELAYS):
                    return _answer(resp)
            await asyncio.sleep(RETRY_DELAYS[attempt])
        raise AssertionError("unreachable")

    def session(self, thread_id: str, *, user_id: str = "-", flush_every: int = 20) -> Session:
        return Session(self, thread_id, user_id=user_id, flush_every=flush_every)

    async def context(self, query: str = "", **fields: Any) -> dict[str, Any]:
        """context.pack: what this agent should know before it answers (memories, knowledge,
        the session brief, recent turns) as Markdown within `budget_tokens`, in `text`."""
        return await self.call("context.pack", query=query, **fields)

    async def search(self, query: str, **fields: Any) -> dict[str, Any]:
        """One query over every plane, in sections: memory, knowledge, conversation."""
        return await self.call("search", query=query, **fields)

    async def ask(self, question: str, **fields: Any) -> dict[str, Any]:
        """memory.ask: passages from every plane, and with `synthesize=True` a cited answer."""
        return await self.call("memory.ask", question=question, **fields)


def _answer(resp: httpx2.Response) -> dict[str, Any]:
    try:
        data = resp.json()
    except ValueError:
        raise LoomError("bad_response", resp.status_code, resp.text[:200]) from None
    if resp.status_code >= 400:
        err = data.get("error", {}) if isinstance(data, dict) else {}
        raise LoomError(err.get("code", "error"), resp.status_code, err.get("message", ""))
    return cast(dict[str, Any], data)


class Memory:
    def __init__(self, agent: Agent):
        self._a = agent

    async def set(self, key: str, value: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("memory.set", key=key, value=value, **fields)

    async def bulk_set(self, entries: list[Mapping[str, Any]], **fields: Any) -> dict[str, Any]:
        return await self._a.call("memory.bulk_set", entries=list(entries), **fields)

    async def get(self, key: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("memory.get", key=key, **fields)

    async def search(self, query: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("memory.search", query=query, **fields)

    async def stack(self, **fields: Any) -> dict[str, Any]:
        """The scope's memories without a query: pinned first, then by confidence and recency."""
        return await self._a.call("memory.stack", **fields)

    async def apply(self, actions: list[Mapping[str, Any]], **fields: Any) -> dict[str, Any]:
        """memory.apply (admin): demote, label or restore memories by key."""
        return await self._a.call("memory.apply", actions=list(actions), **fields)

    async def delete(self, key: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("memory.delete", key=key, **fields)

    async def evidence(self, key: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("memory.evidence", key=key, **fields)

    async def recall(self, query: str = "", **fields: Any) -> dict[str, Any]:
        return await self._a.call("memory.recall", query=query, **fields)

    async def set_from_messages(
        self,
        messages: list[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        observation_date: str | None = None,
        last_messages: list[Mapping[str, Any]] | None = None,
        extra_tags: list[str] | None = None,
        extraction_instructions: str | None = None,
        record_schema: Mapping[str, Any] | None = None,
        memory_key: str | None = None,
        valid_at: str | None = None,
        defer: bool | None = None,
        agent_learnings: bool | None = None,
    ) -> MemorySetFromMessagesResult:
        """Extract durable facts from a transcript (recalled_keys, session_values and
        pipeline_steps are HTTP and MCP only)."""
        out = await self._a.call(
            "memory.set_from_messages",
            messages=list(messages),
            user_id=user_id,
            session_id=session_id,
            observation_date=observation_date,
            last_messages=last_messages,
            extra_tags=extra_tags,
            extraction_instructions=extraction_instructions,
            record_schema=record_schema,
            memory_key=memory_key,
            valid_at=valid_at,
            defer=defer,
            agent_learnings=agent_learnings,
        )
        return cast(MemorySetFromMessagesResult, out)

    async def extraction_status_mine(self, queue_ids: list[str]) -> dict[str, Any]:
        return await self._a.call("memory.extraction_status_mine", queue_ids=queue_ids)


class Conversations:
    def __init__(self, agent: Agent):
        self._a = agent

    async def set_logging(self, enabled: bool) -> dict[str, Any]:
        return await self._a.call("conversation.set_logging", enabled=enabled)

    async def append(
        self, thread_id: str, role: str, content: str, **fields: Any
    ) -> ConversationAppendResult:
        out = await self._a.call(
            "conversation.append", thread_id=thread_id, role=role, content=content, **fields
        )
        return cast(ConversationAppendResult, out)

    async def get(self, thread_id: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("conversation.get", thread_id=thread_id, **fields)

    async def list(self, thread_id: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("conversation.list", thread_id=thread_id, **fields)

    async def threads(self, **fields: Any) -> dict[str, Any]:
        return await self._a.call("conversation.threads", **fields)

    async def search(self, query: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("conversation.search", query=query, **fields)


class Knowledge:
    """The namespace's documents: published, read, searched and deleted by uri."""

    def __init__(self, agent: Agent):
        self._a = agent

    async def publish(self, uri: str, text: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("knowledge.publish", uri=uri, text=text, **fields)

    async def get(self, uri: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("knowledge.get", uri=uri, **fields)

    async def list(self, **fields: Any) -> dict[str, Any]:
        return await self._a.call("knowledge.list", **fields)

    async def search(self, query: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("knowledge.search", query=query, **fields)

    async def delete(self, uri: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("knowledge.delete", uri=uri, **fields)


class Briefs:
    def __init__(self, agent: Agent):
        self._a = agent

    async def save(self, **fields: Any) -> SessionBriefSaveResult:
        return cast(SessionBriefSaveResult, await self._a.call("session.brief_save", **fields))

    async def get(self, **fields: Any) -> dict[str, Any]:
        return await self._a.call("session.brief_get", **fields)

    async def list(self, **fields: Any) -> dict[str, Any]:
        return await self._a.call("session.brief_list", **fields)

    async def delete(self, brief_key: str, **fields: Any) -> dict[str, Any]:
        return await self._a.call("session.brief_delete", brief_key=brief_key, **fields)


_TURN_FIELDS = ("msg_id", "reasoning", "metadata", "tokens", "run_id")
# What one memory.set_from_messages call takes: turns, and characters a turn.
EXTRACTION_MESSAGES_MAX = 400
EXTRACTION_MESSAGE_CHARS = 200_000


class Session:
    """One (user, thread): turns go to the transcript and, every `flush_every`, to
    extraction; `close()` flushes the rest; `resume()` reads back where things stand."""

    def __init__(self, agent: Agent, thread_id: str, *, user_id: str, flush_every: int):
        self._a = agent
        self.thread_id, self.user_id, self.flush_every = thread_id, user_id, max(1, flush_every)
        self._buffer: list[dict[str, Any]] = []  # kept until extraction takes them
        self._flushing = asyncio.Lock()  # one flush at a time: no turn sent twice or out of order
        # False when the namespace does not record, as the latest append found.
        self.transcript_stored: bool | None = None
        self.queue_ids: list[str] = []

    async def append(self, *turns: Mapping[str, Any]) -> list[ConversationAppendResult]:
        """Each turn's role and content, with its msg_id, reasoning, metadata, tokens and run_id
        when it carries them (without a msg_id, a turn repeating an earlier one's role and text,
        a second "ok", would be answered duplicate)."""
        out = []
        for turn in turns:
            extra = {f: turn[f] for f in _TURN_FIELDS if turn.get(f) is not None}
            result = await self._a.conversations.append(
                self.thread_id, turn["role"], turn["content"], user_id=self.user_id, **extra
            )
            # Whether the namespace records, as the latest answer says (a duplicate was stored).
            self.transcript_stored = result.get("reason") != "logging_disabled"
            # A turn the transcript holds whole goes to extraction as far as a message holds.
            content = turn["content"][:EXTRACTION_MESSAGE_CHARS]
            self._buffer.append({"role": turn["role"], "content": content})
            out.append(result)
            if len(self._buffer) >= self.flush_every:
                await self._flush(self.flush_every)
        return out

    async def flush(self) -> None:
        """Hand the buffered turns to extraction (deferred: the hot path does not wait). When
        the call fails the turns stay buffered, ahead of any appended meanwhile, and the next
        flush or `close()` sends them again."""
        await self._flush(1)

    async def _flush(self, at_least: int) -> None:
        async with self._flushing:
            if len(self._buffer) < at_least:  # a flush that ran meanwhile took them
                return
            # The turns buffered now, in calls of as many as one takes, oldest first (turns
            # appended meanwhile wait for the next flush).
            left = len(self._buffer)
            while left:
                turns: list[Mapping[str, Any]] = self._buffer[: min(left, EXTRACTION_MESSAGES_MAX)]
                out = await self._a.memory.set_from_messages(
                    turns, user_id=self.user_id, session_id=self.thread_id, defer=True
                )
                del self._buffer[: len(turns)]
                left -= len(turns)
                if out.get("queue_id"):
                    self.queue_ids.append(out["queue_id"])

    async def resume(self, query: str = "", *, tail: int = 20, **fields: Any) -> dict[str, Any]:
        """Where things stand for this user and thread: context.pack for the session's scope
        (`context`: its `text` is ready for a prompt; `fields` go to it, e.g. `budget_tokens`,
        `brief_key`), the memories it packed, and the transcript's tail."""
        packed = await self._a.context(query, user_id=self.user_id, **fields)
        thread = await self._a.conversations.get(
            self.thread_id, agent="-", include_messages=True, order="desc", limit=tail
        )
        memories = next((s["items"] for s in packed["sections"] if s["name"] == "memories"), [])
        return {
            "context": packed,
            "memories": memories,
            "transcript": list(reversed(thread.get("messages", []))),
        }

    async def close(self) -> None:
        await self.flush()
