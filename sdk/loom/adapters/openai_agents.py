"""An OpenAI Agents SDK session kept as a Loom thread: `Runner.run(agent, text, session=...)`.

Each item is one turn of the thread `session_id`: its role (a message's own, `developer` as
`system`; a tool's output as `tool`; any other item, a function call or reasoning, as
`assistant`), its text as the turn's content (what search and extraction read), and the item
itself, whole, in the turn's metadata, so `get_items` gives back what `add_items` was given. An
item too large for metadata (64 KiB of JSON) is kept as the turn's content instead. A turn the
session did not write (a compaction summary, an append of another client) reads back as a
message of its role and text.

The session implements the SDK's `Session` protocol and needs no import of `agents`. The
namespace must record its transcript (`conversation.set_logging`); `pop_item` and
`clear_session` use `conversation.delete` (an admin's op when tokens are on).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from loom.client import Agent

if TYPE_CHECKING:  # the SDK's types, for readers and type checkers only
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings
else:
    TResponseInputItem = dict
    SessionSettings = Any

ITEM_FIELD = "openai_agents_item"  # metadata: the item as added
IN_CONTENT_FIELD = "openai_agents_item_in_content"  # metadata: the item is the turn's content
METADATA_MAX_BYTES = 60 * 1024  # under the server's 64 KiB bound, room for the field name
PAGE = 1000  # turns one read asks for (the most conversation.get and list serve)


class RecordingOffError(RuntimeError):
    """The namespace does not record its transcript: items would not be kept."""


class LoomSession:
    """A Loom thread as an OpenAI Agents SDK session.

    `LoomSession("chat-1", bot)` keeps the items of session `chat-1` as turns of the thread
    `chat-1` of `bot`'s org, namespace and agent, under `user_id`."""

    def __init__(
        self,
        session_id: str,
        agent: Agent,
        *,
        user_id: str = "-",
        session_settings: SessionSettings | None = None,
    ):
        self.session_id = session_id
        self.session_settings = session_settings
        self._bot, self._user_id = agent, user_id

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first; with a limit (or the settings' one), the latest."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        turns = await (self._all_turns() if limit is None else self._latest_turns(limit))
        return [item_of(t) for t in turns]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append the items in order, one turn each; a retried append keeps its turn id."""
        stamp = f"{time.time_ns():016x}"  # ids sort as added, for turns of one timestamp
        tag = secrets.token_hex(4)
        for i, item in enumerate(items):
            turn = turn_of(cast(Mapping[str, Any], item))
            answer = await self._bot.conversations.append(
                self.session_id,
                turn["role"],
                turn["content"],
                msg_id=f"oa-{stamp}-{i:05d}-{tag}",
                metadata=turn["metadata"],
                user_id=self._user_id,
            )
            if answer.get("reason") == "logging_disabled":
                raise RecordingOffError(
                    f"namespace {self._bot.namespace!r} does not record its transcript:"
                    " turn it on with conversation.set_logging"
                )

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the latest item and return it (None when the session is empty).

        Loom deletes a thread, not one turn: the thread is deleted and the earlier items are
        appended again, in order (one call each)."""
        turns = await self._all_turns()
        if not turns:
            return None
        await self.clear_session()
        await self.add_items([item_of(t) for t in turns[:-1]])
        return item_of(turns[-1])

    async def clear_session(self) -> None:
        """Delete the thread: every item of the session."""
        await self._bot.call(
            "conversation.delete", thread_id=self.session_id, confirm_thread_id=self.session_id
        )

    async def _all_turns(self) -> list[dict[str, Any]]:
        turns: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = await self._bot.conversations.list(self.session_id, limit=PAGE, cursor=cursor)
            turns += page["rows"]
            cursor = page.get("next_cursor")
            if not cursor:
                return turns

    async def _latest_turns(self, limit: int) -> list[dict[str, Any]]:
        newest_first: list[dict[str, Any]] = []
        while len(newest_first) < limit:
            page = await self._bot.conversations.get(
                self.session_id,
                include_messages=True,
                order="desc",
                limit=min(PAGE, limit - len(newest_first)),
                offset=len(newest_first),  # a page cut by bytes goes on where it stopped
            )
            newest_first += page["messages"]
            if not page["messages"] or len(newest_first) >= page["msg_count"]:
                break
        return newest_first[::-1]


def turn_of(item: Mapping[str, Any]) -> dict[str, Any]:
    """The turn that keeps an item: role, text and the item in metadata (or as the content)."""
    whole = json.loads(json.dumps(item))  # a plain copy: what the server will store
    role = _role_of(item)
    if len(json.dumps(whole)) <= METADATA_MAX_BYTES:
        return {"role": role, "content": text_of(item), "metadata": {ITEM_FIELD: whole}}
    return {"role": role, "content": json.dumps(whole), "metadata": {IN_CONTENT_FIELD: True}}


def item_of(turn: Mapping[str, Any]) -> TResponseInputItem:
    """The item a turn keeps; a turn of another writer as a message."""
    metadata = turn.get("metadata") or {}
    if ITEM_FIELD in metadata:
        return cast(TResponseInputItem, metadata[ITEM_FIELD])
    if metadata.get(IN_CONTENT_FIELD):
        return cast(TResponseInputItem, json.loads(turn["content"]))
    return cast(TResponseInputItem, {"role": turn["role"], "content": turn["content"]})


def _role_of(item: Mapping[str, Any]) -> str:
    role = item.get("role")
    if role in ("user", "assistant", "system"):
        return str(role)
    if role == "developer":
        return "system"
    if str(item.get("type", "")).endswith("_output"):
        return "tool"
    return "assistant"


def text_of(item: Mapping[str, Any]) -> str:
    """What a reader of the transcript sees of an item: a message's text, a call's name and
    arguments, a tool's output; else the item's type."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") or p.get("refusal") or "" for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if p)
    if item.get("type") == "function_call":
        return f"{item.get('name', '')}({item.get('arguments', '')})"
    output = item.get("output")
    if output is not None:
        return output if isinstance(output, str) else json.dumps(output)
    return str(item.get("type", "item"))
