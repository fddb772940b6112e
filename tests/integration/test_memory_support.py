"""Shared helpers for the memory-plane and extraction tests: a tenant with tokens, scripted
extraction replies, live settings and row snapshots.

This module holds no tests; the test_memory_*.py and test_extraction_*.py modules import from it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chalicelib.auth import mint_token
from chalicelib.providers.llm import ScriptedLLM
from tests.conftest import live_setting  # noqa: F401  (used by the suites)

# A pasted API key: text that reads as high (chalicelib.sensitivity).
OPENAI_KEY = "sk-proj-" + "Ab3dEf9hIjKlMnOpQrStUvWx12"
HIGH_KEY_TURN = f"My OpenAI API key is {OPENAI_KEY}, keep it handy."

NS = "ns-mem"
NS2 = "ns-other"
AGENT = "a1"

# The default pipeline, in the spec's order ("What a call does").
SPEC_STEPS = (
    "loom.fetch_namespace_categories",
    "loom.fetch_existing_memories",
    "loom.llm_extract",
    "loom.drop_recall_echoes",
    "loom.drop_session_echoes",
    "loom.drop_activity_narration",
    "loom.drop_non_durable",
    "loom.verify_durable",
    "loom.hash_dedup",
    "loom.bulk_write",
)


@dataclass
class Mem:
    """One org seen over HTTP with an org-wide token per role; calls default to NS and AGENT."""

    api: Any
    deps: Any
    org: str
    tokens: dict[str, str] = field(default_factory=dict)

    @classmethod
    def open(cls, api: Any, deps: Any, org: str) -> Mem:
        m = cls(api=api, deps=deps, org=org)
        for role in ("viewer", "writer", "admin", "org_admin"):
            m.tokens[role] = mint_token(deps, org=org, role=role, subject=f"{role}-{org}")
        return m

    def token(self, role: str = "writer", **kw: Any) -> str:
        """A fresh token of this org (namespace-bound or read-scoped when asked)."""
        return mint_token(self.deps, org=self.org, role=role, **kw)

    def post(self, op: str, *, as_: str = "writer", token: str | None = None, **body: Any):
        """(status, body) of POST /v1/<op>, with namespace and agent defaulted."""
        body.setdefault("namespace", NS)
        body.setdefault("agent", AGENT)
        return self.api.post(op, token=token or self.tokens[as_], **body)

    def ok(self, op: str, **kw: Any) -> dict[str, Any]:
        status, data = self.post(op, **kw)
        assert status == 200, (op, status, data)
        return data

    def admin(self, op: str, *, as_: str = "org_admin", token: str | None = None, **body: Any):
        """(status, body) of an op that takes no namespace or agent defaults (policies)."""
        return self.api.post(op, token=token or self.tokens[as_], **body)

    # memory plane

    def set(self, key: str, value: str, **kw: Any) -> dict[str, Any]:
        """The one written row of memory.set."""
        (row,) = self.ok("memory.set", key=key, value=value, **kw)["written"]
        return row

    def get(self, key: str, **kw: Any) -> dict[str, Any]:
        kw.setdefault("as_", "viewer")
        return self.ok("memory.get", key=key, **kw)

    def search(self, query: str, **kw: Any) -> list[dict[str, Any]]:
        kw.setdefault("as_", "viewer")
        return self.ok("memory.search", query=query, **kw)["hits"]

    def hit_keys(self, query: str, **kw: Any) -> list[str]:
        return [h["key"] for h in self.search(query, **kw)]

    def blacklist(self, pattern: str, namespace: str = NS, **kw: Any) -> dict[str, Any]:
        status, data = self.api.post(
            "memory.blacklist",
            token=self.tokens["admin"],
            namespace=namespace,
            pattern=pattern,
            **kw,
        )
        assert status == 200, data
        return data

    # extraction

    def extract(self, messages: Sequence[dict[str, Any]], **kw: Any) -> tuple[int, dict]:
        return self.post("memory.set_from_messages", messages=list(messages), **kw)

    def extract_ok(self, messages: Sequence[dict[str, Any]], **kw: Any) -> dict[str, Any]:
        status, data = self.extract(messages, **kw)
        assert status == 200, (status, data)
        return data


def turns(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    """Messages from (role, content) pairs."""
    return [{"role": role, "content": content} for role, content in pairs]


def fact(
    subject: str,
    attribute: str,
    value: str,
    *,
    indices: Sequence[int] = (0,),
    span: str = "",
    tags: Sequence[str] = (),
    about: str = "user",
) -> dict[str, Any]:
    """One fact as the extraction reply carries it."""
    return {
        "subject": subject,
        "attribute": attribute,
        "value": value,
        "tags": list(tags),
        "source_message_indices": list(indices),
        "span": span,
        "about": about,
    }


def reply(*facts: dict[str, Any], forget: Sequence[dict[str, str]] = (), digest: str = "") -> str:
    """An extraction reply: the JSON object the extraction prompt asks for."""
    return json.dumps({"facts": list(facts), "forget": list(forget), "digest": digest})


def scripted(deps: Any, *replies: str | Exception) -> ScriptedLLM:
    """Give the ops a model answering from a queue. Its name is unique, so the extraction
    response cache (keyed on org, model and prompt) never answers for it from another test's
    call."""
    llm = ScriptedLLM(replies=deque(replies), name=f"scripted-{uuid.uuid4().hex[:8]}")
    deps._llm = llm
    return llm


def keys(data: dict[str, Any]) -> list[str]:
    return [w["key"] for w in data["written"]]


def verdicts(data: dict[str, Any]) -> dict[str, str]:
    return {w["key"]: w["conflict_verdict"] for w in data["written"]}


def canonical_sha(value: str) -> str:
    """The content hash two restatements share (case, spacing and a final period folded)."""
    folded = " ".join(value.lower().split()).rstrip(".")
    return hashlib.sha256(folded.encode()).hexdigest()


def _rows(pool: Any, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    with pool.connection() as conn:
        cur = conn.execute(sql, params)
        names = [d.name for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def memory_rows(pool: Any, org: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """The org's rows in loom.memories (live and retired), by namespace, user and key."""
    return _rows(
        pool,
        "SELECT namespace, user_id, key, kind, value, tags, version, pinned, locked,"
        " observation_date, embedding IS NULL AS unembedded, retired_at FROM loom.memories"
        " WHERE org = %s AND (%s::text IS NULL OR namespace = %s)"
        " ORDER BY namespace, user_id, key",
        (org, namespace, namespace),
    )


def facts_of(pool: Any, org: str, namespace: str | None = None) -> dict[str, str]:
    """Live fact and record rows: {key: value}."""
    return {
        r["key"]: r["value"]
        for r in memory_rows(pool, org, namespace)
        if r["kind"] in ("fact", "record") and r["retired_at"] is None
    }


def version_rows(pool: Any, org: str, key: str) -> list[tuple[int, str, str]]:
    """(version, value, verdict) of a key's history in loom.memory_versions."""
    rows = _rows(
        pool,
        "SELECT version, value, verdict FROM loom.memory_versions WHERE org = %s AND key = %s"
        " ORDER BY version",
        (org, key),
    )
    return [(r["version"], r["value"], r["verdict"]) for r in rows]


def audit_rows(pool: Any, org: str, op: str | None = None) -> list[dict[str, Any]]:
    return _rows(
        pool,
        "SELECT namespace, op, principal, body_sha256 FROM loom.audit_log"
        " WHERE org = %s AND (%s::text IS NULL OR op = %s) ORDER BY id",
        (org, op, op),
    )


def drop_rows(pool: Any, org: str) -> list[dict[str, Any]]:
    return _rows(
        pool,
        "SELECT namespace, stage, reason, count, detail FROM loom.memory_drops WHERE org = %s"
        " ORDER BY id",
        (org,),
    )


def evidence_rows(pool: Any, org: str) -> list[dict[str, Any]]:
    return _rows(
        pool,
        "SELECT namespace, user_id, session_id, idx, role, content FROM loom.memory_evidence"
        " WHERE org = %s ORDER BY id",
        (org,),
    )
