"""Shared helpers for the knowledge tests: an org with tokens per role, and row snapshots.

This module holds no tests; the test_knowledge*.py modules import from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chalicelib.auth import mint_token

NS = "ns-kb"
NS2 = "ns-kb-other"
# Text that reads as high (chalicelib.sensitivity): a card number and an AWS access key.
CARD = "4111 1111 1111 1111"
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


@dataclass
class Kb:
    """One org seen over HTTP with an org-wide token per role; calls default to NS."""

    api: Any
    deps: Any
    org: str
    tokens: dict[str, str] = field(default_factory=dict)

    @classmethod
    def open(cls, api: Any, deps: Any, org: str) -> Kb:
        kb = cls(api=api, deps=deps, org=org)
        for role in ("viewer", "writer", "admin", "org_admin"):
            kb.tokens[role] = mint_token(deps, org=org, role=role, subject=f"{role}-{org}")
        return kb

    def token(self, role: str = "writer", **kw: Any) -> str:
        return mint_token(self.deps, org=self.org, role=role, **kw)

    def post(self, op: str, *, as_: str = "writer", token: str | None = None, **body: Any):
        body.setdefault("namespace", NS)
        return self.api.post(op, token=token or self.tokens[as_], **body)

    def ok(self, op: str, **kw: Any) -> dict[str, Any]:
        status, data = self.post(op, **kw)
        assert status == 200, (op, status, data)
        return data

    def publish(self, uri: str, text: str, **kw: Any) -> dict[str, Any]:
        return self.ok("knowledge.publish", uri=uri, text=text, **kw)

    def search(self, query: str, **kw: Any) -> list[dict[str, Any]]:
        kw.setdefault("as_", "viewer")
        return self.ok("knowledge.search", query=query, **kw)["hits"]


def document_rows(pool: Any, org: str) -> list[tuple[Any, ...]]:
    """Every document and chunk row of the org, for before/after comparisons."""
    with pool.connection() as conn:
        docs = conn.execute(
            "SELECT namespace, uri, title, text, tags, author, version, updated_at"
            " FROM loom.knowledge_documents WHERE org = %s ORDER BY namespace, uri",
            (org,),
        ).fetchall()
        chunks = conn.execute(
            "SELECT namespace, uri, ordinal, text, withheld, dim FROM loom.knowledge_chunks"
            " WHERE org = %s ORDER BY namespace, uri, ordinal",
            (org,),
        ).fetchall()
    return docs + chunks


def paragraphs(n: int, topic: str, size: int = 900) -> str:
    """n paragraphs of about `size` characters each, every one naming its topic and number."""
    out = []
    for i in range(n):
        words = f"Paragraph {i} about {topic} describes step {i} of the {topic} procedure. "
        out.append((words * (size // len(words) + 1))[:size].rstrip() + ".")
    return "\n\n".join(out)
