"""Retrieval on LoCoMo: every session through conversation.append, every question through
conversation.search in each mode (top 10; semantic with the default floor), beside BM25 over
the turns and PostgreSQL's own ranking (plain lexical and plain hybrid: bench/plain_modes.py)
from the same run; each mode's query p95 and a serial append's p50 against one raw embed call."""

from __future__ import annotations

import statistics
import time

import numpy as np

from bench import locomo
from bench.bm25 import BM25
from bench.harness import BenchDb, Figure, p95, say, timed
from bench.plain_modes import PLAIN_MODES, plain_search
from chalicelib.auth import Caller, local_caller
from chalicelib.config import Settings
from chalicelib.deps import Deps
from chalicelib.providers.embed_batcher import build_embedder
from chalicelib.providers.embedder import EMBED_CHARS, LocalEmbedder
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


MODES = ("semantic", "lexical", "hybrid")


def run(db: BenchDb, quick: bool) -> list[Figure]:
    convs = locomo.load()
    if quick:
        convs = convs[:1]
    embedder = build_embedder(Settings())
    deps = db.deps_for(embedder)
    unfloored = db.deps_for(embedder, conversation_search_min_similarity=-1.0)
    floor = embedder.default_floor
    caller = local_caller("bench-locomo")
    ranked: dict[str, list[list[str]]] = {
        m: [] for m in (*MODES, *PLAIN_MODES, "nofloor", "bm25", "rrf", "plain")
    }
    latency: dict[str, list[float]] = {m: [] for m in (*MODES, *PLAIN_MODES)}
    questions: list[locomo.Question] = []
    append_s: list[float] = []
    raw_s: list[float] = []
    raw = LocalEmbedder()
    for conv in convs:
        ns = f"locomo-{conv.conv_id}"
        call("conversation.set_logging", {"namespace": ns, "enabled": True}, caller, deps)
        appended, embedded = _ingest(conv, ns, caller, deps, raw)
        append_s += appended
        raw_s += embedded
        docs = [locomo.turn_text(t) for t in conv.turns]
        bm25 = BM25(docs)
        ids = [t.dia_id for t in conv.turns]
        # Plain vectors of the same model: each turn's first 2,048 characters, ranked by cosine.
        plain = _unit(np.asarray(embedder.embed_documents([d[:EMBED_CHARS] for d in docs])))
        say(f"locomo {conv.conv_id}: {len(conv.questions)} questions, every mode ...")
        for q in conv.questions:
            body = {"namespace": ns, "agent": "*", "query": q.question, "namespace_scope": "this"}
            for mode in MODES:
                start = time.perf_counter()
                out = call(
                    "conversation.search", {**body, "top_k": 10, "search_mode": mode}, caller, deps
                )
                latency[mode].append(time.perf_counter() - start)
                ranked[mode].append([h["msg_id"] for h in out.body["hits"]])
            for mode in PLAIN_MODES:
                start = time.perf_counter()
                ranked[mode].append(plain_search(deps, caller, ns, q.question, 10, mode))
                latency[mode].append(time.perf_counter() - start)
            wide = call("conversation.search", {**body, "top_k": 50}, caller, unfloored).body[
                "hits"
            ]
            vector = [h["msg_id"] for h in wide]
            lexical = [ids[i] for i in bm25.top_k(q.question, 50)]
            ranked["nofloor"].append(vector)
            cosine = plain @ _unit(np.asarray(embedder.embed_query(q.question)))
            ranked["plain"].append([ids[i] for i in np.argsort(-cosine, kind="stable")[:50]])
            ranked["bm25"].append(lexical)
            ranked["rrf"].append(_rrf(vector, lexical))
            questions.append(q)
    say(f"locomo: {len(questions)} questions, {len(convs)} conversation(s), {embedder.name}")
    names = {
        "semantic": f"search semantic ({embedder.name}, floor {floor})",
        "lexical": "search lexical",
        "hybrid": "search hybrid",
        "plain lexical": "plain lexical (ts_rank_cd)",
        "plain hybrid": "plain hybrid (ts_rank_cd+vec)",
        "nofloor": "search semantic, no floor",
        "plain": f"plain vectors ({embedder.name})",
        "rrf": "turn vector + turn BM25, RRF",
    }
    figs = []
    for k in (5, 10):
        base = _recall(ranked["bm25"], questions, k)
        for key, name in names.items():
            figs.append(
                Figure(
                    f"locomo recall@{k} {name}",
                    _recall(ranked[key], questions, k),
                    "",
                    "BM25 (turn)",
                    base,
                    "",
                )
            )
    figs.append(
        Figure(
            "locomo hybrid recall@10 vs 0.80",
            _recall(ranked["hybrid"], questions, 10),
            "",
            "goal",
            0.80,
            ">= 1.0x",
        )
    )
    figs.append(
        Figure(
            "locomo semantic recall@10 vs plain vectors",
            _recall(ranked["semantic"], questions, 10),
            "",
            "plain vectors of the same model",
            _recall(ranked["plain"], questions, 10),
            ">= 1.0x",
        )
    )
    semantic_p95 = p95(latency["semantic"]) * 1000
    for mode in ("lexical", "hybrid", *PLAIN_MODES):
        figs.append(
            Figure(
                f"locomo query p95 {mode}",
                p95(latency[mode]) * 1000,
                "ms",
                "semantic p95",
                semantic_p95,
                "",
            )
        )
    figs.append(
        Figure(
            "locomo serial append p50",
            statistics.median(append_s) * 1000,
            "ms",
            "one raw embed call p50",
            statistics.median(raw_s) * 1000,
            "<= 1.3x",
        )
    )
    return figs


RAW_EVERY = 4  # every this many turns is also embedded alone, just before its append


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def _ingest(
    conv: locomo.Conversation, ns: str, caller: Caller, deps: Deps, raw: LocalEmbedder
) -> tuple[list[float], list[float]]:
    """Append every turn in order; the seconds of each append, and of one raw embed call of
    every RAW_EVERY-th turn's text made just before its append (so the machine's load weighs
    on both alike)."""
    say(f"locomo {conv.conv_id}: appending {len(conv.turns)} turns ...")
    appends, embeds = [], []
    for i, t in enumerate(conv.turns):
        if i % RAW_EVERY == 0:
            embeds += timed(lambda t=t: raw.embed_documents([locomo.turn_text(t)]), 1)
        start = time.perf_counter()
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
        appends.append(time.perf_counter() - start)
        if i % 200 == 199:
            say(f"  {i + 1}/{len(conv.turns)}")
    return appends, embeds
