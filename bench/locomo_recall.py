"""Retrieval on LoCoMo: every session through conversation.append, every question through
conversation.search (top 10, the default floor), beside BM25 from the same run."""

from __future__ import annotations

from bench import locomo
from bench.bm25 import BM25
from bench.harness import BenchDb, Figure, say
from chalicelib.auth import Caller, local_caller
from chalicelib.config import Settings
from chalicelib.deps import Deps
from chalicelib.providers.embedder import build_embedder
from chalicelib.registry import call

RRF_K = 60
DATA = locomo.DATA_DIR.name


def _recall(ranked: list[list[str]], questions: list[locomo.Question], k: int) -> float:
    found = sum(
        1 for ids, q in zip(ranked, questions, strict=True) if set(ids[:k]) & set(q.evidence)
    )
    return found / len(questions) if questions else 0.0


def _rrf(*lists: list[str]) -> list[str]:
    scores: dict[str, float] = {}
    for ranked in lists:
        for rank, item in enumerate(ranked):
            scores[item] = scores.get(item, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(scores, key=lambda i: -scores[i])


def run(db: BenchDb, quick: bool) -> list[Figure]:
    convs = locomo.load()
    if quick:
        convs = convs[:1]
    embedder = build_embedder(Settings())
    deps = db.deps_for(embedder)
    unfloored = db.deps_for(embedder, conversation_search_min_similarity=-1.0)
    floor = embedder.default_floor
    caller = local_caller("bench-locomo")
    ranked: dict[str, list[list[str]]] = {"search": [], "nofloor": [], "bm25": [], "rrf": []}
    questions: list[locomo.Question] = []
    for conv in convs:
        ns = f"locomo-{conv.conv_id}"
        call("conversation.set_logging", {"namespace": ns, "enabled": True}, caller, deps)
        _ingest(conv, ns, caller, deps)
        docs = [locomo.turn_text(t) for t in conv.turns]
        bm25 = BM25(docs)
        ids = [t.dia_id for t in conv.turns]
        say(f"locomo {conv.conv_id}: {len(conv.questions)} questions ...")
        for q in conv.questions:
            body = {"namespace": ns, "agent": "*", "query": q.question, "namespace_scope": "this"}
            hits = call("conversation.search", {**body, "top_k": 10}, caller, deps).body["hits"]
            ranked["search"].append([h["msg_id"] for h in hits])
            wide = call("conversation.search", {**body, "top_k": 50}, caller, unfloored).body[
                "hits"
            ]
            vector = [h["msg_id"] for h in wide]
            lexical = [ids[i] for i in bm25.top_k(q.question, 50)]
            ranked["nofloor"].append(vector)
            ranked["bm25"].append(lexical)
            ranked["rrf"].append(_rrf(vector, lexical))
            questions.append(q)
    say(f"locomo: {len(questions)} questions, {len(convs)} conversation(s), {embedder.name}")
    figs = []
    for k in (5, 10):
        base = _recall(ranked["bm25"], questions, k)
        figs += [
            Figure(
                f"locomo recall@{k} search ({embedder.name}, floor {floor})",
                _recall(ranked["search"], questions, k),
                "",
                "BM25",
                base,
                "",
            ),
            Figure(
                f"locomo recall@{k} search, no floor",
                _recall(ranked["nofloor"], questions, k),
                "",
                "BM25",
                base,
                "",
            ),
            Figure(
                f"locomo recall@{k} vector+BM25 RRF",
                _recall(ranked["rrf"], questions, k),
                "",
                "BM25",
                base,
                "",
            ),
        ]
    return figs


def _ingest(conv: locomo.Conversation, ns: str, caller: Caller, deps: Deps) -> None:
    say(f"locomo {conv.conv_id}: appending {len(conv.turns)} turns ...")
    for i, t in enumerate(conv.turns):
        role = "user" if t.speaker == conv.speaker_a else "assistant"
        call(
            "conversation.append",
            {
                "namespace": ns,
                "agent": "bench",
                "thread_id": f"session-{t.session}",
                "msg_id": t.dia_id,
                "role": role,
                "content": locomo.turn_text(t),
            },
            caller,
            deps,
        )
        if i % 200 == 199:
            say(f"  {i + 1}/{len(conv.turns)}")
