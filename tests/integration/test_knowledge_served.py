"""Which knowledge an agent's read is served (services.knowledge_reads.served_chunks): the
agent-tag rule of extraction.txt and knowledge-and-agent-reads.md."""

from __future__ import annotations

import pytest

from chalicelib.auth import Caller
from chalicelib.services.knowledge_reads import served_chunks
from tests.integration.test_knowledge_support import NS, NS2, Kb

DOCS = {
    "learning://a": ("Always greet the customer by first name.", ["agent:bot-a"]),
    "learning://b": ("Always greet the customer with a formal title.", ["agent:bot-b"]),
    "doc://all": ("Greet the customer before anything else.", ["policy"]),
}


@pytest.fixture
def kb(api, deps, org):
    kb = Kb.open(api, deps, org)
    for uri, (text, tags) in DOCS.items():
        kb.publish(uri, text, tags=tags)
    return kb


def _served(kb: Kb, agent: str, *, namespace: str = NS, caller: Caller | None = None) -> set[str]:
    who = caller or Caller(org=kb.org, role="viewer")
    hits = served_chunks(kb.deps, who, kb.org, namespace, agent, "greet the customer", 10)
    return {h["uri"] for h in hits}


@pytest.mark.parametrize(
    ("agent", "served"),
    [
        ("bot-a", {"learning://a", "doc://all"}),
        ("bot-b", {"learning://b", "doc://all"}),
        ("bot-c", {"doc://all"}),
        ("*", {"learning://a", "learning://b", "doc://all"}),
        ("-", {"doc://all"}),
    ],
)
def test_a_document_tagged_for_a_bot_is_served_to_that_bot_only(kb, agent, served):
    """GIVEN documents tagged agent:bot-a, agent:bot-b, and one with no agent tag
    WHEN an agent's read is served knowledge for a query all three match
    THEN a bot gets its own and the untagged one, '*' every bot's, '-' and another bot only
    the untagged one.
    """
    assert _served(kb, agent) == served


def test_knowledge_search_is_not_filtered_by_agent(kb):
    """GIVEN the same documents
    WHEN knowledge.search reads them
    THEN all three come back."""
    assert {h["uri"] for h in kb.search("greet the customer")} == set(DOCS)


def test_served_knowledge_stays_in_its_org_and_namespace(kb):
    """GIVEN the documents in NS of one org
    WHEN they are served for NS2, to a caller of another org, and to a caller bound to NS2
    THEN none is served."""
    assert _served(kb, "*", namespace=NS2) == set()
    assert _served(kb, "*", caller=Caller(org="another-org", role="viewer")) == set()
    assert _served(kb, "*", caller=Caller(org=kb.org, role="viewer", namespace=NS2)) == set()
