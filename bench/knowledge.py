"""knowledge.publish against one batched embed of its chunks, and knowledge.search recall@5
against plain BM25 over the same chunks, on Python's language reference topics
(bench/data/knowledge/README.md)."""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path

from bench.harness import BenchDb, Figure, say
from chalicelib.auth import local_caller
from chalicelib.config import Settings
from chalicelib.deps import Deps
from chalicelib.providers.embed_batcher import build_embedder
from chalicelib.providers.embedder import EMBED_CHARS
from chalicelib.registry import call
from chalicelib.services.chunking import chunk_text
from chalicelib.store.pool import autocommit_connection

DATA = Path(__file__).parent / "data" / "knowledge"
DOC_CHARS = 100_000
ROUNDS = {"quick": 2, "full": 4}
TOP_K = 5
ORG = "bench-knowledge"
_SPACE = re.compile(r"\s+")

# Plain BM25: ts_rank_cd of any of the question's words over every chunk of the namespace.
_PLAIN_BM25 = (
    "WITH tq AS (SELECT to_tsquery('english', string_agg(quote_literal(t), ' | ')) AS q"
    "  FROM unnest(tsvector_to_array(to_tsvector('english', %(query)s))) t)"
    " SELECT c.uri, c.ordinal FROM loom.knowledge_chunks c, tq"
    " WHERE c.org = %(org)s AND c.namespace = %(ns)s AND c.search_tsv @@ tq.q"
    " ORDER BY ts_rank_cd(c.search_tsv, tq.q) DESC, c.uri, c.ordinal LIMIT %(k)s"
)


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text)


def _corpus() -> dict[str, str]:
    topics = json.loads((DATA / "python_topics.json").read_text())
    return {f"pydoc://{name}": text for name, text in topics.items()}


def _questions(docs: dict[str, str]) -> list[tuple[str, str, set[int]]]:
    """(question, gold uri, the chunks of that document holding the gold passage)."""
    out = []
    for question, topic, passage in json.loads((DATA / "questions.json").read_text()):
        uri = f"pydoc://{topic}"
        gold = {c.ordinal for c in chunk_text(docs[uri]) if _norm(passage) in _norm(c.text)}
        assert gold, (uri, passage)  # every question has its passage in the corpus
        out.append((question, uri, gold))
    return out


def _long_document(docs: dict[str, str]) -> str:
    """A document of DOC_CHARS characters: the topics one after another."""
    text = "\n\n".join(docs.values())
    while len(text) < DOC_CHARS:
        text += "\n\n" + text
    return text[:DOC_CHARS]


def _publish_figure(deps: Deps, docs: dict[str, str], rounds: int) -> Figure:
    """knowledge.publish of 100,000 characters (a new version each round) against one batched
    embed of the same chunks' first 2,048 characters, interleaved."""
    caller = local_caller(ORG)
    text = _long_document(docs)
    published: list[float] = []
    embedded: list[float] = []
    for i in range(rounds):
        variant = f"Revision {i}.\n\n" + text[: DOC_CHARS - 20]
        chunks = [c.text[:EMBED_CHARS] for c in chunk_text(variant)]
        body = {"namespace": "publish", "uri": "doc://long", "text": variant}

        def embed(chunks: list[str] = chunks) -> None:
            start = time.perf_counter()
            deps.embedder.embed_documents(chunks)
            embedded.append(time.perf_counter() - start)

        def publish(body: dict[str, str] = body, n: int = len(chunks)) -> None:
            start = time.perf_counter()
            out = call("knowledge.publish", body, caller, deps).body
            published.append(time.perf_counter() - start)
            assert out["changed"] and out["chunks"] == n, out

        # Each goes first in every other round: the machine's drift weighs on both alike.
        for step in (embed, publish) if i % 2 == 0 else (publish, embed):
            step()
        say(f"knowledge publish round {i}: {published[-1]:.2f} s, embed {embedded[-1]:.2f} s")
    return Figure(
        f"knowledge.publish {DOC_CHARS:,} chars",
        statistics.median(published),
        "s",
        "one batched embed",
        statistics.median(embedded),
        "<= 1.3x",
    )


def _recall_figures(deps: Deps, docs: dict[str, str]) -> list[Figure]:
    caller = local_caller(ORG)
    ns = "pydoc"
    start = time.perf_counter()
    for uri, text in docs.items():
        call("knowledge.publish", {"namespace": ns, "uri": uri, "text": text}, caller, deps)
    say(f"knowledge: {len(docs)} documents published in {time.perf_counter() - start:.1f} s")
    questions = _questions(docs)
    found = {"hybrid": 0, "semantic": 0, "lexical": 0, "bm25": 0}
    with autocommit_connection(deps.pool) as conn:
        for question, uri, gold in questions:
            for mode in ("hybrid", "semantic", "lexical"):
                body = {"namespace": ns, "query": question, "top_k": TOP_K, "search_mode": mode}
                hits = call("knowledge.search", body, caller, deps).body["hits"]
                found[mode] += any(h["uri"] == uri and h["chunk"] in gold for h in hits)
            params = {"query": question, "org": ORG, "ns": ns, "k": TOP_K}
            rows = conn.execute(_PLAIN_BM25, params).fetchall()
            found["bm25"] += any(r[0] == uri and r[1] in gold for r in rows)
    n = len(questions)
    recall = {m: v / n for m, v in found.items()}
    say(f"knowledge recall@{TOP_K} over {n} questions: {recall}")
    return [
        Figure(f"knowledge hybrid recall@{TOP_K} ({n} q)", recall["hybrid"], "", "plain BM25",
               recall["bm25"], ">= 1.0x"),
        Figure(f"knowledge semantic recall@{TOP_K} ({n} q)", recall["semantic"], "",
               "plain BM25", recall["bm25"], ""),
    ]  # fmt: skip


def run(db: BenchDb, quick: bool) -> list[Figure]:
    embedder = build_embedder(Settings())  # the local e5 model, as the other write benches
    deps = db.deps_for(embedder)
    docs = _corpus()
    say(f"knowledge: publish of {DOC_CHARS:,} characters against one batched embed ...")
    figures = [_publish_figure(deps, docs, ROUNDS["quick" if quick else "full"])]
    return figures + _recall_figures(deps, docs)
