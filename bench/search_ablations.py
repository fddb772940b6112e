"""The BM25 leg's large-scope pieces, each switched off in turn: hybrid, lexical and semantic p50
and p95 over 100,000 LoCoMo-like turns of one namespace (bench/search_modes.py's load), the
same 200 dev questions interleaved, with fresh caches (cold) then again (warm), and the share
of questions whose BM25 leg returned nothing. `python -m bench.search_ablations [--quick]`.

It also switched off the count rule (count_below 0), the fallback gathers (relaxed_terms 0)
and the spread sample (spread_min_share 2), alone and together: none made hybrid's p95 20%
lower, so they are deleted, and so are their configurations here. The figures and what they
decided: docs/decisions/0013-search-modes.md."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import statistics

from bench import locomo
from bench.harness import bench_database, p95, say
from bench.search_modes import QUERIES, SIZES, _load, _search_time
from chalicelib.auth import local_caller
from chalicelib.deps import Deps
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.search.store_vectors import TurnFilter
from chalicelib.search.tuning import SearchCaches, SearchTuning
from chalicelib.search.turns import _lexical_rows

MODES = ("hybrid", "lexical", "semantic")
CONFIGS: dict[str, dict[str, float]] = {
    "a as is": {},
    "b no fallback gather": {"fallback_candidates": 0},
    "c unseen words counted to 100": {"unseen_count_max": 100},
    "d unseen words not counted": {"unseen_count_max": 0},
    "e no statistics cache": {"stats_ttl_seconds": 0.0},
    "f no known-large cache": {"large_scope_ttl_seconds": 0.0},
}


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:6.1f} {p95(samples) * 1e3:6.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    size = "quick" if parser.parse_args().quick else "full"
    n, org = SIZES[size], "bench-modes"
    embedder = FakeEmbedder(384)
    convs = locomo.load()
    asked = [q for conv in convs for q in conv.questions][: QUERIES[size]]
    questions = [q.question for q in asked]
    # Row i of the load holds turn i % len(turns) of the dev conversations, in order.
    turns = [(t.conv_id, t.dia_id) for conv in convs for t in conv.turns]
    caller = local_caller(org)
    rows: list[str] = []
    with bench_database() as db:
        _load(db, org, n, embedder)
        for name, values in CONFIGS.items():
            deps: Deps = db.deps_for(embedder)
            deps.search_tuning = dataclasses.replace(SearchTuning(), **values)
            deps.search_caches = SearchCaches()
            for phase in ("cold", "warm"):
                say(f"ablations: {name}, {phase}: {len(questions)} questions x {len(MODES)} ...")
                latency: dict[str, list[float]] = {m: [] for m in MODES}
                orders = list(itertools.permutations(MODES))
                for i, q in enumerate(questions):
                    for mode in orders[i % len(orders)]:
                        latency[mode].append(_search_time(deps, caller, q, mode))
                line = f"{name:24} {phase:4} " + " ".join(_ms(latency[m]) for m in MODES)
                if phase == "warm":
                    empty, found = _lexical_quality(deps, org, asked, turns)
                    line += f" {empty:6.1%} {found:6.3f}"
                say(line)
                rows.append(line)
    head = f"{'configuration':24} {'pass':4} " + " ".join(f"{m + ' p50 p95':>13}" for m in MODES)
    print(f"{n:,} turns, {len(questions)} questions, ms\n{head}  BM25 empty, R@10 of copies")
    print("\n".join(rows))


def _lexical_quality(
    deps: Deps, org: str, asked: list[locomo.Question], turns: list[tuple[str, str]]
) -> tuple[float, float]:
    """The share of questions whose BM25 leg (read as the lexical mode reads it) found nothing,
    and the share whose top 10 holds a copy of an evidence turn."""
    filt = TurnFilter(org=org, namespaces=("big",))
    depth = max(deps.search_tuning.bm25_leg_depth, 10)
    empty = found = 0
    for q in asked:
        rows = _lexical_rows(deps, filt, q.question, depth)[:10]
        empty += not rows
        copies = {turns[int(r["msg_id"][1:]) % len(turns)] for r in rows}
        found += any((q.conv_id, e) in copies for e in q.evidence)
    return empty / len(asked), found / len(asked)


if __name__ == "__main__":
    main()
