"""Shared helpers for the session-brief tests: a tenant with tokens, events, fake models, rows.

This module holds no tests; the test_session_*.py modules import from it.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chalicelib.auth import mint_token
from chalicelib.providers.llm import LLMError, LLMResult, ScriptedLLM
from tests.conftest import live_setting  # noqa: F401  (used by the suites)

NS = "ns-briefs"
POLICY = "Never store credentials."


@dataclass
class Briefs:
    """One org seen over HTTP with a namespace-wide token per role; calls default to NS, a1."""

    api: Any
    deps: Any
    org: str
    tokens: dict[str, str] = field(default_factory=dict)

    @classmethod
    def open(cls, api: Any, deps: Any, org: str) -> Briefs:
        b = cls(api=api, deps=deps, org=org)
        for role in ("viewer", "writer", "admin"):
            b.tokens[role] = mint_token(deps, org=org, role=role, subject=f"{role}-bot")
        return b

    def token(self, role: str = "writer", **kw: Any) -> str:
        return mint_token(self.deps, org=self.org, role=role, **kw)

    def post(self, op: str, *, as_: str = "writer", token: str | None = None, **body: Any):
        body.setdefault("namespace", NS)
        body.setdefault("agent", "a1")
        return self.api.post(op, token=token or self.tokens[as_], **body)

    def ok(self, op: str, **kw: Any) -> dict[str, Any]:
        status, data = self.post(op, **kw)
        assert status == 200, (op, status, data)
        return data

    def save(self, **kw: Any) -> dict[str, Any]:
        return self.ok("session.brief_save", **kw)

    def get(self, **kw: Any) -> dict[str, Any]:
        kw.setdefault("as_", "viewer")
        return self.ok("session.brief_get", **kw)

    def list(self, **kw: Any) -> dict[str, Any]:
        kw.setdefault("as_", "viewer")
        return self.ok("session.brief_list", **kw)

    def delete(self, **kw: Any) -> dict[str, Any]:
        return self.ok("session.brief_delete", **kw)

    def set_logging(self, enabled: bool, ns: str = NS) -> None:
        status, data = self.api.post(
            "conversation.set_logging", token=self.tokens["admin"], namespace=ns, enabled=enabled
        )
        assert status == 200, data


def ev(kind: str, text: str = "", **kw: Any) -> dict[str, Any]:
    """One BriefEvent as a client sends it."""
    return {"kind": kind, "text": text, **kw}


def sections_json(**kw: Any) -> str:
    """A model reply: a JSON sections object."""
    return json.dumps(kw)


def scripted(*replies: str | Exception) -> ScriptedLLM:
    return ScriptedLLM(replies=deque(replies))


def failing() -> LLMError:
    return LLMError("model call failed: upstream 500")


class RecordingLLM:
    """A model that records the model name and json flag it was called with."""

    name = "deployment-llm"
    answers = True

    def __init__(
        self,
        reply: str | Callable[[str], str] | None = None,
        barrier: threading.Barrier | None = None,
    ):
        self.reply = reply or sections_json(status="revised by the recording model")
        self.barrier = barrier
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def complete(
        self, system: str, user: str, json_output: bool = False, model: str | None = None
    ) -> LLMResult:
        with self._lock:
            self.calls.append({"model": model, "json_output": json_output, "user": user})
            reply = self.reply(user) if callable(self.reply) else self.reply
        if self.barrier is not None:
            self.barrier.wait(timeout=20)
        return LLMResult(reply, json.loads(reply), 10, 5, model or self.name)


def brief_rows(pool: Any, org: str) -> list[dict[str, Any]]:
    """The org's rows in loom.session_briefs (live and deleted), by key."""
    with pool.connection() as conn:
        cur = conn.execute(
            "SELECT namespace, brief_key, revision, author, rendered, deleted_at"
            " FROM loom.session_briefs WHERE org = %s ORDER BY brief_key",
            (org,),
        )
        names = [d.name for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def revision_rows(pool: Any, org: str, key: str | None = None) -> list[dict[str, Any]]:
    """The org's rows in loom.session_brief_revisions, by key and revision."""
    with pool.connection() as conn:
        cur = conn.execute(
            "SELECT brief_key, revision, author, rendered FROM loom.session_brief_revisions"
            " WHERE org = %s AND (%s::text IS NULL OR brief_key = %s)"
            " ORDER BY brief_key, revision",
            (org, key, key),
        )
        names = [d.name for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
