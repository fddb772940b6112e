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


HIGH = "password=hunter22"


@pytest.mark.parametrize("listing", ["knowledge.list", "memory.stack"])
def test_a_listing_blanks_a_high_title_leaves_out_high_tags_and_omits_a_high_uri(kb, listing):
    """GIVEN a document whose title and one tag read as high, and one whose uri does
    WHEN knowledge.list and memory.stack's served documents list the namespace
    THEN both show the first with its title blank and only its plain tag, and omit the second
    (a uri names the document: blanking it would leave nothing to show)."""
    kb.publish("doc://vault", "Where the vault procedure lives.", title=f"Vault {HIGH}",
               tags=["ops", f"secret:{HIGH}"])  # fmt: skip
    kb.publish(f"doc://{HIGH}", "Nothing high in the text.", title="plain")
    if listing == "knowledge.list":
        docs = kb.ok("knowledge.list", as_="viewer", limit=200)["documents"]
    else:
        docs = kb.ok("memory.stack", as_="viewer", agent="*")["documents"]

    shown = {d["uri"]: (d["title"], d["tags"]) for d in docs}
    assert shown["doc://vault"] == ("", ["ops"])
    assert f"doc://{HIGH}" not in shown
    assert HIGH not in str(docs)


def test_a_chunk_that_reads_as_high_today_is_passed_over_and_top_k_still_filled(kb, pool):
    """GIVEN three documents about the lighthouse, one of whose chunks an earlier build
    indexed although it now reads as high
    WHEN knowledge.search asks for the top 2 in each mode
    THEN that chunk is never a hit and two others are."""
    for name in ("a", "b", "c"):
        kb.publish(f"doc://{name}", f"The lighthouse keeper log {name}.")
    with pool.connection() as conn:
        conn.execute(
            "UPDATE loom.knowledge_chunks SET text = text || %s WHERE org = %s AND uri = %s",
            (f" {HIGH}", kb.org, "doc://b"),
        )
    for mode in ("hybrid", "semantic", "lexical"):
        hits = kb.search("lighthouse keeper log", top_k=2, search_mode=mode)
        assert len(hits) == 2 and "doc://b" not in {h["uri"] for h in hits}, mode
