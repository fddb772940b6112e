"""The knowledge plane over HTTP: publish, get, list, search and delete, as the spec's
"Knowledge" section says."""

from __future__ import annotations

import threading

import pytest

from chalicelib.services.chunking import chunk_text
from tests.conftest import live_setting
from tests.integration.test_knowledge_support import (
    AWS_KEY,
    CARD,
    NS,
    NS2,
    Kb,
    document_rows,
    paragraphs,
)

REFUNDS = "Refunds are paid within 14 days to the card the customer used."


@pytest.fixture
def kb(api, deps, org):
    return Kb.open(api, deps, org)


def test_a_publish_creates_then_replaces_the_document_and_bumps_its_version(kb, pool):
    """GIVEN a document published at doc://refunds
    WHEN it is published again with other text
    THEN the first answer is version 1, changed, one chunk; the second version 2, and the
    stored text, chunks and author are the new ones (the old chunks gone).
    """
    first = kb.publish("doc://refunds", REFUNDS, title="Refunds", tags=["policy"])
    second = kb.publish("doc://refunds", paragraphs(6, "returns"), title="Refunds")

    assert first == {
        "uri": "doc://refunds", "version": 1, "changed": True, "chunks": 1,
        "chunks_withheld": 0, "ignored_args": [],
    }  # fmt: skip
    assert (second["version"], second["changed"], second["chunks"]) == (2, True, 2)
    doc = kb.ok("knowledge.get", uri="doc://refunds", as_="viewer")["document"]
    assert doc["text"] == paragraphs(6, "returns") and doc["tags"] == []
    assert doc["author"] == f"token:writer-{kb.org}"
    rows = document_rows(pool, kb.org)
    chunk_texts = [r[3] for r in rows if len(r) == 6]
    assert len(chunk_texts) == 2 and all("returns" in t for t in chunk_texts)


def test_the_same_text_title_and_tags_change_nothing_and_embed_nothing(kb, embedder, pool):
    """GIVEN a published document
    WHEN the same text, title and tags are published again
    THEN the answer is changed: false at version 1, the embedder is not called, and no row
    changed; a changed title alone is version 2.
    """
    kb.publish("doc://a", paragraphs(5, "billing"), title="Billing", tags=["x", "y"])
    calls, before = len(embedder.batches), document_rows(pool, kb.org)

    again = kb.publish("doc://a", paragraphs(5, "billing"), title="Billing", tags=["x", "y"])

    assert (again["changed"], again["version"], again["chunks"]) == (False, 1, 2)
    assert len(embedder.batches) == calls
    assert document_rows(pool, kb.org) == before
    assert (
        kb.publish("doc://a", paragraphs(5, "billing"), title="New", tags=["x", "y"])["version"]
        == 2
    )


def test_the_chunks_are_embedded_in_one_batched_call_of_their_first_2048_characters(kb, embedder):
    """GIVEN a document of 30,000 characters
    WHEN it is published
    THEN the embedder is called once, with one text per chunk, none over 2,048 characters.
    """
    text = paragraphs(33, "ledger")
    calls = len(embedder.batches)

    out = kb.publish("doc://ledger", text)

    assert embedder.batches[calls:] == [out["chunks"]]
    assert out["chunks"] >= 9
    assert max(len(t) for t in embedder.seen[-out["chunks"] :]) <= 2048


def test_if_version_compares_and_sets(kb, pool):
    """GIVEN a document at version 1
    WHEN it is published with if_version 0 (none yet) and with if_version 2
    THEN both answer 409 with the conflict code and nothing changes; if_version 1 writes
    version 2, and if_version 0 creates a new document.
    """
    kb.publish("doc://cas", "First text.")
    before = document_rows(pool, kb.org)

    for stale in (0, 2):
        status, data = kb.post(
            "knowledge.publish", uri="doc://cas", text="Other.", if_version=stale
        )
        assert status == 409 and data["error"]["code"] == "conflict", data

    assert document_rows(pool, kb.org) == before
    assert kb.publish("doc://cas", "Other.", if_version=1)["version"] == 2
    assert kb.publish("doc://new", "New.", if_version=0)["version"] == 1


def test_concurrent_publishes_of_one_uri_lose_no_version(kb, deps):
    """GIVEN six publishes of different texts to one uri at once
    WHEN they all finish
    THEN their versions are 1 to 6, each once, and the stored version is 6.
    """
    results: list[int] = []

    def publish(i: int) -> None:
        results.append(kb.publish("doc://race", f"Text number {i} of the race.")["version"])

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(results) == [1, 2, 3, 4, 5, 6]
    assert kb.ok("knowledge.get", uri="doc://race")["document"]["version"] == 6


def test_get_answers_found_false_for_no_document(kb):
    """GIVEN no document at a uri
    WHEN it is read
    THEN found is false and document null.
    """
    assert kb.ok("knowledge.get", uri="doc://none", as_="viewer")["found"] is False


def test_delete_removes_the_document_and_chunks_is_idempotent_and_audited(kb, pool):
    """GIVEN a published document
    WHEN it is deleted twice
    THEN the first answers found true, the second found false; no row of it is left, search
    finds nothing, and each delete left an audit row.
    """
    kb.publish("doc://gone", paragraphs(4, "warehouse"))

    first = kb.ok("knowledge.delete", uri="doc://gone")
    second = kb.ok("knowledge.delete", uri="doc://gone")

    assert (first["found"], second["found"]) == (True, False)
    assert document_rows(pool, kb.org) == []
    assert kb.search("warehouse procedure") == []
    with pool.connection() as conn:
        audits = conn.execute(
            "SELECT count(*) FROM loom.audit_log WHERE org = %s AND op = 'knowledge.delete'",
            (kb.org,),
        ).fetchone()[0]
    assert audits == 2


def test_a_viewer_reads_but_cannot_publish_or_delete(kb, pool):
    """GIVEN a viewer token
    WHEN it publishes and deletes
    THEN both are refused (403) and nothing is stored; its reads answer 200.
    """
    for op, body in (("knowledge.publish", {"text": "x"}), ("knowledge.delete", {})):
        status, _ = kb.post(op, as_="viewer", uri="doc://v", **body)
        assert status == 403
    assert document_rows(pool, kb.org) == []
    for op, body in (("knowledge.get", {"uri": "doc://v"}), ("knowledge.list", {})):
        assert kb.post(op, as_="viewer", **body)[0] == 200


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ({"uri": "refunds", "text": "x"}, "uri"),  # no scheme
        ({"uri": "doc://" + "a" * 495, "text": "x"}, "uri"),  # 501 characters
        ({"uri": "doc://has space", "text": "x"}, "uri"),
        ({"uri": "doc://a", "text": ""}, "text"),
        ({"uri": "doc://a", "text": "x" * 1_000_001}, "text"),
        ({"uri": "doc://a", "text": "x", "tags": [f"t{i}" for i in range(51)]}, "tags"),
        ({"uri": "doc://a", "text": "x", "if_version": -1}, "if_version"),
    ],
)
def test_invalid_publishes_are_refused_with_nothing_changed(kb, pool, body, what):
    """GIVEN a stored document
    WHEN a publish names a uri without a scheme, over 500 characters or with a space, empty or
    too long text, 51 tags or a negative if_version
    THEN it answers 422 naming the field, and no stored row changed.
    """
    kb.publish("doc://a", "Stored text.")
    before = document_rows(pool, kb.org)

    status, data = kb.post("knowledge.publish", **body)

    assert status == 422 and what in data["error"]["message"], data
    assert document_rows(pool, kb.org) == before


def test_a_uri_of_500_characters_and_50_tags_are_accepted(kb):
    """GIVEN a uri of exactly 500 characters and 50 tags
    WHEN it is published
    THEN it is stored and read back.
    """
    uri = "doc://" + "a" * 494
    kb.publish(uri, "Edge.", tags=[f"t{i}" for i in range(50)])
    assert len(kb.ok("knowledge.get", uri=uri)["document"]["tags"]) == 50


# ---- high text ------------------------------------------------------------------------------


def test_a_chunk_that_reads_as_high_is_withheld_from_embedding_index_and_search(kb, embedder, pool):
    """GIVEN a document of three chunks, the second holding a card number and an AWS key
    WHEN it is published and searched for that chunk's words and for the numbers
    THEN it publishes with chunks_withheld 1; the embedder never saw the high text; no search
    mode returns the chunk or any text holding the numbers; the stored chunk keeps its text.
    """
    parts = [paragraphs(3, "shipping"), paragraphs(3, "gateway"), paragraphs(3, "returns")]
    parts[1] = parts[1].replace("Paragraph 1 about", f"Card {CARD} and key {AWS_KEY} about")
    text = "\n\n".join(parts)
    high = {c.ordinal for c in chunk_text(text) if CARD in c.text or AWS_KEY in c.text}
    out = kb.publish("doc://mixed", text)

    assert out["chunks"] == len(chunk_text(text)) >= 3 and out["chunks_withheld"] == len(high) > 0
    assert not any(CARD in t or AWS_KEY in t for t in embedder.seen)
    for mode in ("hybrid", "semantic", "lexical"):
        for query in ("gateway procedure", CARD, AWS_KEY, "card key"):
            hits = kb.search(query, search_mode=mode, top_k=10)
            assert all(h["chunk"] not in high for h in hits), (mode, query)
            assert not any(CARD in h["excerpt"] or AWS_KEY in h["excerpt"] for h in hits)
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT text, withheld, dim, search_tsv::text FROM loom.knowledge_chunks"
            " WHERE org = %s AND ordinal = %s",
            (kb.org, min(high)),
        ).fetchone()
    assert CARD in row[0] and row[1:] == (True, -1, "")


def test_get_serves_high_text_whole_with_an_audit_row(kb, pool):
    """GIVEN a document whose text holds an AWS key
    WHEN it is read with knowledge.get
    THEN the whole text comes back as published (as memory.get serves a fact), and the read
    left a knowledge.sensitive_read audit row; a read of a plain document leaves none.
    """
    kb.publish("doc://keys", f"Deploy with {AWS_KEY} only.")
    kb.publish("doc://plain", "Nothing secret.")

    assert AWS_KEY in kb.ok("knowledge.get", uri="doc://keys", as_="viewer")["document"]["text"]
    kb.ok("knowledge.get", uri="doc://plain", as_="viewer")
    with pool.connection() as conn:
        n = conn.execute(
            "SELECT count(*) FROM loom.audit_log WHERE org = %s"
            " AND op = 'knowledge.sensitive_read'",
            (kb.org,),
        ).fetchone()[0]
    assert n == 1


def test_an_embedder_that_fails_leaves_the_document_published_and_a_republish_embeds_it(
    kb, embedder, pool
):
    """GIVEN an embedder that fails
    WHEN a document is published, then the embedder recovers and the same text is published
    THEN the first publish stores it unembedded (lexical search finds it); the second answers
    changed: false at version 1 and embeds its chunks, so semantic search finds it.
    """
    embedder.failing = True
    assert kb.publish("doc://late", paragraphs(2, "invoices"))["version"] == 1
    assert kb.search("invoices", search_mode="lexical")
    embedder.failing = False

    again = kb.publish("doc://late", paragraphs(2, "invoices"))

    assert (again["changed"], again["version"]) == (False, 1)
    with pool.connection() as conn:
        dims = conn.execute(
            "SELECT dim FROM loom.knowledge_chunks WHERE org = %s", (kb.org,)
        ).fetchall()
    assert dims and all(d[0] == embedder.dim for d in dims)
    assert kb.search("invoices procedure", search_mode="semantic")


# ---- list -----------------------------------------------------------------------------------


def test_list_pages_newest_first_with_filters_and_no_text(kb):
    """GIVEN five documents, two tagged policy and team:a, three under doc://runbooks/
    WHEN they are listed two a page, and with tags and uri_prefix filters
    THEN pages run newest first with a cursor until none; a row carries uri, title, tags,
    version, updated_at and chars, no text; tags keep documents with all of them; uri_prefix
    keeps the runbooks.
    """
    for i in range(5):
        prefix = "doc://runbooks/" if i >= 2 else "doc://policies/"
        tags = ["policy", "team:a"] if i < 2 else (["policy"] if i == 2 else [])
        kb.publish(f"{prefix}{i}", f"Document {i}." * (i + 1), title=f"T{i}", tags=tags)

    seen, cursor = [], None
    while True:
        page = kb.ok("knowledge.list", limit=2, cursor=cursor, as_="viewer")
        seen += page["documents"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [d["uri"].rsplit("/", 1)[1] for d in seen] == ["4", "3", "2", "1", "0"]
    assert set(seen[0]) == {"uri", "title", "tags", "version", "updated_at", "chars"}
    assert seen[-1]["chars"] == len("Document 0.")
    tagged = kb.ok("knowledge.list", tags=["policy", "team:a"])["documents"]
    assert sorted(d["uri"] for d in tagged) == ["doc://policies/0", "doc://policies/1"]
    runbooks = kb.ok("knowledge.list", uri_prefix="doc://runbooks/")["documents"]
    assert [d["uri"] for d in runbooks] == [
        "doc://runbooks/4",
        "doc://runbooks/3",
        "doc://runbooks/2",
    ]


def test_list_refuses_a_limit_over_200_and_a_forged_cursor(kb):
    """GIVEN the list op
    WHEN it is asked for 201 rows, or given a cursor it never issued
    THEN it answers 422 and 400.
    """
    assert kb.post("knowledge.list", limit=201)[0] == 422
    assert kb.post("knowledge.list", cursor="bm90LWEtY3Vyc29y")[0] == 400


# ---- search ---------------------------------------------------------------------------------


def test_search_finds_the_chunk_by_meaning_and_by_words_with_a_centred_excerpt(kb):
    """GIVEN three documents on different subjects, one long
    WHEN each mode searches for a word found only deep in the long one
    THEN its chunk is the first hit with uri, title, chunk, tags and a score, and the excerpt
    holds the word though it is past the chunk's first 400 characters.
    """
    long_text = paragraphs(8, "onboarding") + "\n\nThe zeppelin hangar opens at dawn for crews."
    kb.publish("doc://onboarding", long_text, title="Onboarding", tags=["hr"])
    kb.publish("doc://refunds", REFUNDS, title="Refunds")
    kb.publish("doc://tax", "Sales tax applies to every invoice in the state.", title="Tax")

    for mode in ("hybrid", "lexical", "semantic"):
        hits = kb.search("zeppelin hangar", search_mode=mode)
        top = hits[0]
        assert (top["uri"], top["title"], top["tags"]) == ("doc://onboarding", "Onboarding", ["hr"])
        assert top["chunk"] == 2 and "zeppelin" in top["excerpt"] and top["score"] > 0, mode
        assert len(top["excerpt"]) <= 400


def test_search_filters_by_tags_and_uri_prefix_and_is_not_filtered_by_agent(kb):
    """GIVEN documents tagged agent:bot-a, agent:bot-b and none, under two prefixes
    WHEN they are searched with tags, with uri_prefix, and under an agent
    THEN tags keep those carrying every tag, uri_prefix those under it, and an agent sent
    filters nothing (every bot's document comes back, the field named in ignored_args).
    """
    kb.publish("learning://1", "Always greet the customer by name.", tags=["agent:bot-a"])
    kb.publish("learning://2", "Always greet the customer in French.", tags=["agent:bot-b"])
    kb.publish("doc://greet", "Greet the customer warmly.")

    by_tag = kb.search("greet customer", tags=["agent:bot-a"])
    by_prefix = kb.search("greet customer", uri_prefix="learning://")
    status, data = kb.post("knowledge.search", as_="viewer", query="greet customer", agent="bot-a")

    assert [h["uri"] for h in by_tag] == ["learning://1"]
    assert sorted(h["uri"] for h in by_prefix) == ["learning://1", "learning://2"]
    assert status == 200 and len(data["hits"]) == 3 and data["ignored_args"] == ["agent"]


def test_tenants_never_see_each_others_documents(kb, api, deps):
    """GIVEN a document in NS of one org, and a second org
    WHEN the second org, another namespace of the first, and a token bound to NS2 search,
    get and list it (the bound token naming NS too)
    THEN none finds it, and the bound token naming NS is refused (403).
    """
    kb.publish("doc://secret", "The vault combination is kept by finance.")
    other = Kb.open(api, deps, kb.org + "-x")
    bound = kb.token("viewer", namespace=NS2)

    assert other.search("vault combination") == []
    assert other.ok("knowledge.get", uri="doc://secret")["found"] is False
    assert other.ok("knowledge.list")["documents"] == []
    assert kb.search("vault combination", namespace=NS2) == []
    assert kb.ok("knowledge.get", uri="doc://secret", namespace=NS2)["found"] is False
    assert kb.search("vault combination", namespace=NS2, token=bound) == []
    for op, body in (
        ("knowledge.search", {"query": "vault"}),
        ("knowledge.get", {"uri": "doc://secret"}),
    ):
        assert kb.post(op, token=bound, namespace=NS, **body)[0] == 403
    status, _ = other.post("knowledge.get", org=kb.org, uri="doc://secret")
    assert status == 403


def test_all_mine_fans_out_over_the_orgs_namespaces_up_to_the_cap(kb, pool):
    """GIVEN the same subject published in three namespaces of the org, and another org's
    WHEN a search names namespace all_mine, then with the fan-out cap at 2
    THEN hits come from all three namespaces, each named, none from the other org; under the
    cap one namespace is skipped and named in namespaces_skipped.
    """
    for ns in (NS, NS2, "ns-kb-third"):
        kb.publish("doc://lighthouse", f"The lighthouse keeper of {ns} logs storms.", namespace=ns)
    Kb.open(kb.api, kb.deps, kb.org + "-x").publish("doc://lighthouse", "The lighthouse keeper.")

    hits = kb.ok("knowledge.search", as_="viewer", query="lighthouse keeper", namespace="all_mine")

    assert sorted(h["namespace"] for h in hits["hits"]) == sorted([NS, NS2, "ns-kb-third"])
    with live_setting(pool, memory_search_fanout_max_namespaces="2"):
        capped = kb.ok("knowledge.search", as_="viewer", query="lighthouse", namespace="all_mine")
    assert len(capped["hits"]) == 2 and len(capped["namespaces_skipped"]) == 1


def test_two_publishes_with_one_if_version_at_once_write_one_version(kb):
    """GIVEN a document at version 1
    WHEN four publishes of different texts, each with if_version 1, run at once
    THEN exactly one writes version 2 and the others answer 409; the stored text is the
    winner's.
    """
    kb.publish("doc://cas-race", "Start.")
    answers: list[tuple[int, dict]] = []

    def publish(i: int) -> None:
        answers.append(
            kb.post("knowledge.publish", uri="doc://cas-race", text=f"Text {i}.", if_version=1)
        )

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    won = [data for status, data in answers if status == 200]
    assert len(won) == 1 and won[0]["version"] == 2
    assert sorted(status for status, _ in answers) == [200, 409, 409, 409]
    stored = kb.ok("knowledge.get", uri="doc://cas-race")["document"]
    assert stored["version"] == 2 and stored["text"] != "Start."


def test_a_token_bounded_to_one_user_reads_but_does_not_publish(kb, pool):
    """GIVEN a document, and a writer token bounded to one user (own_user, pinned)
    WHEN it searches, gets and lists, then publishes and deletes
    THEN the reads answer 200 with the document (knowledge is the namespace's, served to every
    user), and the writes are refused (403) with nothing changed.
    """
    kb.publish("doc://faq", "Opening hours are nine to five.")
    before = document_rows(pool, kb.org)
    pinned = kb.token("writer", read_scope="own_user", read_user_id="u1")

    assert kb.search("opening hours", token=pinned)[0]["uri"] == "doc://faq"
    assert kb.ok("knowledge.get", uri="doc://faq", token=pinned)["found"] is True
    assert len(kb.ok("knowledge.list", token=pinned)["documents"]) == 1
    assert kb.post("knowledge.publish", token=pinned, uri="doc://faq", text="x")[0] == 403
    assert kb.post("knowledge.delete", token=pinned, uri="doc://faq")[0] == 403
    assert document_rows(pool, kb.org) == before


def test_all_mine_under_a_namespace_bound_token_is_refused(kb):
    """GIVEN a token bound to NS
    WHEN it searches namespace all_mine
    THEN it is refused (403): its token reads NS alone, which it names by NS."""
    bound = kb.token("viewer", namespace=NS)
    kb.publish("doc://x", "Bound tokens read one namespace.")
    assert kb.post("knowledge.search", token=bound, namespace="all_mine", query="bound")[0] == 403
    assert kb.search("bound tokens", token=bound)[0]["uri"] == "doc://x"
