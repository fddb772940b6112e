"""LangGraph's `BaseStore` over Loom's memory ops: `LoomStore("acme", "support")`.

An item (namespace tuple, key, dict value) is one Loom memory of the store's org, namespace
and `user_id`:
- its key is `<key_prefix>/<label>/.../<label>/<key>`, each part percent-encoded (a `/` or a
  space in a label stays unambiguous), e.g. `langgraph/users/u-42/prefs/theme`;
- its value is JSON: the item's value, namespace and key, its created and updated times, and
  `scopes`, one word per prefix of its namespace (the whole store's too) that a lexical
  `memory.search` finds it by, so a search or a listing under a prefix reads that prefix's
  items only. A search with a query is `memory.search` (hybrid) for the query and the prefix's
  word, the hits of the prefix kept in rank order with their scores; one without a query lists
  the prefix's items, newest first. Either reads at most 100 items of the prefix (the most one
  `memory.search` answers), `filter` is applied to those, then `offset` and `limit`.

Writes go through memory.set (a new version each) and memory.delete; a put reads the item
first to keep its created time. `batch` runs the ops in order on the store's own event loop
(a thread), which `abatch` shares, so a store serves sync and async graphs alike. TTLs are not
supported; `index` is ignored (Loom embeds every value).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from loom.client import Agent

SEARCH_DEPTH = 100  # the most hits one memory.search answers
WRITTEN = ("created", "updated", "unchanged")


class LoomStoreError(RuntimeError):
    """Loom did not write an item (a locked memory, a blacklisted value)."""


class LoomStore(BaseStore):
    """A LangGraph store whose items are memories of one Loom org, namespace and user."""

    supports_ttl = False

    def __init__(
        self,
        org: str = "",
        namespace: str = "",
        agent: str = "langgraph",
        *,
        user_id: str = "-",
        key_prefix: str = "langgraph",
        base_url: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
    ):
        self.user_id, self.key_prefix = user_id, key_prefix
        self._bot = Agent(org, namespace, agent, base_url=base_url, token=token, timeout=timeout)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def __enter__(self) -> LoomStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP client and stop the store's event loop."""
        if self._loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self._bot.aclose(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return asyncio.run_coroutine_threadsafe(self._run(list(ops)), self._loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        done = asyncio.run_coroutine_threadsafe(self._run(list(ops)), self._loop)
        return await asyncio.wrap_future(done)

    async def _run(self, ops: list[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op.namespace, op.key))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, PutOp):
                results.append(await self._put(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store op {op!r}")
        return results

    async def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        out = await self._bot.memory.get(self.loom_key(namespace, key), user_id=self.user_id)
        return item_of(out["memory"]["value"]) if out.get("found") else None

    async def _put(self, op: PutOp) -> None:
        loom_key = self.loom_key(op.namespace, op.key)
        if op.value is None:
            await self._bot.memory.delete(loom_key, user_id=self.user_id)
            return None
        before = await self._get(op.namespace, op.key)
        now = datetime.now(UTC)
        envelope = {
            "value": dict(op.value),
            "namespace": list(op.namespace),
            "key": op.key,
            "created_at": (before.created_at if before else now).isoformat(),
            "updated_at": now.isoformat(),
            "scopes": " ".join(
                self.scope_word(op.namespace[:n]) for n in range(len(op.namespace) + 1)
            ),
        }
        out = await self._bot.memory.set(loom_key, json.dumps(envelope), user_id=self.user_id)
        verdict = out["written"][0]["conflict_verdict"]
        if verdict not in WRITTEN:
            raise LoomStoreError(f"Loom did not write {loom_key!r}: {verdict}")
        return None

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        word = self.scope_word(prefix)
        query, mode = (f"{op.query} {word}", "hybrid") if op.query else (word, "lexical")
        found: list[SearchItem] = []
        for item, score in await self._prefix_hits(prefix, query, mode):
            if op.filter and not matches(item.value, op.filter):
                continue
            found.append(SearchItem(item.namespace, item.key, item.value, item.created_at,
                                    item.updated_at, score if op.query else None))  # fmt: skip
        if not op.query:
            found.sort(key=lambda i: i.updated_at, reverse=True)
        return found[op.offset : op.offset + op.limit]

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        hits = await self._prefix_hits((), self.scope_word(()), "lexical")
        spaces = {item.namespace for item, _ in hits}
        conditions = op.match_conditions or ()
        spaces = {ns for ns in spaces if all(namespace_matches(c, ns) for c in conditions)}
        if op.max_depth is not None:
            spaces = {ns[: op.max_depth] for ns in spaces}
        return sorted(spaces)[op.offset : op.offset + op.limit]

    async def _prefix_hits(
        self, prefix: tuple[str, ...], query: str, mode: str
    ) -> list[tuple[Item, float]]:
        """The store's items under a namespace prefix among one memory.search's hits."""
        out = await self._bot.memory.search(
            query, user_id=self.user_id, top_k=SEARCH_DEPTH, search_mode=mode, include_chunks=False
        )
        hits = []
        for hit in out["hits"]:
            if hit["user_id"] != self.user_id or not hit["key"].startswith(self.key_prefix + "/"):
                continue  # a read for a user covers the namespace's shared rows too
            item = item_of(hit["value"])
            if item is not None and item.namespace[: len(prefix)] == prefix:
                hits.append((item, float(hit["score"])))
        return hits

    def loom_key(self, namespace: tuple[str, ...], key: str) -> str:
        """The memory key of an item: the prefix, then each label and the key, encoded."""
        return "/".join([self.key_prefix, *(quote(p, safe="") for p in (*namespace, key))])

    def scope_word(self, prefix: tuple[str, ...]) -> str:
        """The one word (letters only, which Loom's lexical search keeps whole) that every item
        under a namespace prefix of this store (its user and key prefix) holds."""
        named = json.dumps([self.user_id, self.key_prefix, *prefix])
        digest = hashlib.sha256(named.encode()).hexdigest()
        return "lgscope" + digest[:24].translate(str.maketrans("0123456789", "ghijklmnop"))


def item_of(text: str) -> Item | None:
    """The item a memory's value holds; None for a memory the store did not write."""
    try:
        env = json.loads(text)
        return Item(
            value=env["value"],
            key=env["key"],
            namespace=tuple(env["namespace"]),
            created_at=datetime.fromisoformat(env["created_at"]),
            updated_at=datetime.fromisoformat(env["updated_at"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A prefix or suffix condition, `*` matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p in ("*", n) for p, n in zip(path, part, strict=True)) if path else True


def matches(value: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    """LangGraph's filter: fields equal, nested dicts compared field by field, or an operator
    ($eq, $ne, $gt, $gte, $lt, $lte) per field."""
    return all(_compare(value.get(k), wanted) for k, wanted in flt.items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_apply(actual, op, v) for op, v in wanted.items())
        return isinstance(actual, Mapping) and matches(actual, wanted)
    return bool(actual == wanted)


def _apply(actual: Any, op: str, wanted: Any) -> bool:
    if op == "$eq":
        return bool(actual == wanted)
    if op == "$ne":
        return bool(actual != wanted)
    if actual is None or op not in ("$gt", "$gte", "$lt", "$lte"):
        if actual is None:
            return False
        raise ValueError(f"unsupported filter operator {op!r}")
    a, w = float(actual), float(wanted)
    return {"$gt": a > w, "$gte": a >= w, "$lt": a < w, "$lte": a <= w}[op]
