"""Erasure and export of knowledge: a document is the namespace's; the user who published it
is named only as its author."""

from __future__ import annotations

import pytest

from tests.integration.test_knowledge_support import NS, NS2, Kb, document_rows


@pytest.fixture
def kb(api, deps, org):
    return Kb.open(api, deps, org)


def _publish_as(kb: Kb, subject: str, uri: str, text: str, namespace: str = NS) -> None:
    token = kb.token("writer", subject=subject)
    kb.ok("knowledge.publish", token=token, uri=uri, text=text, namespace=namespace)


def test_a_user_erasure_blanks_the_author_and_keeps_the_document(kb):
    """GIVEN documents published by ann and by bob
    WHEN ann is exported, then erased
    THEN the export lists ann's document (and not bob's); after the erasure her document is
    still served with a blank author, bob's keeps his, and her export lists none.
    """
    _publish_as(kb, "ann", "doc://by-ann", "Ann wrote the returns runbook.")
    _publish_as(kb, "bob", "doc://by-bob", "Bob wrote the billing runbook.")

    before = kb.ok("erasure.export", as_="org_admin", kind="user", user_id="ann", namespace=None)
    kb.ok("erasure.request", as_="org_admin", kind="user", user_id="ann", namespace=None)
    after = kb.ok("erasure.export", as_="org_admin", kind="user", user_id="ann", namespace=None)

    listed = before["tables"]["loom.knowledge_documents"]
    assert [d["uri"] for d in listed] == ["doc://by-ann"] and listed[0]["author"] == "token:ann"
    ann_doc = kb.ok("knowledge.get", uri="doc://by-ann")["document"]
    assert ann_doc["author"] == "" and ann_doc["text"] == "Ann wrote the returns runbook."
    assert kb.ok("knowledge.get", uri="doc://by-bob")["document"]["author"] == "token:bob"
    assert after["tables"].get("loom.knowledge_documents", []) == []
    assert [h["uri"] for h in kb.search("returns runbook")][0] == "doc://by-ann"


def test_a_namespace_erasure_removes_its_documents_and_chunks_only(kb, pool):
    """GIVEN documents in two namespaces
    WHEN one namespace is erased
    THEN its documents and chunks are gone and the other namespace's are as they were.
    """
    kb.publish("doc://a", "Namespace one's document.")
    kb.publish("doc://b", "Namespace two's document.", namespace=NS2)
    kept = [r for r in document_rows(pool, kb.org) if r[0] == NS2]

    kb.ok("erasure.request", as_="org_admin", kind="namespace_list", namespaces=[NS],
          namespace=None)  # fmt: skip

    assert document_rows(pool, kb.org) == kept
