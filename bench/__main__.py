"""`make bench [QUICK=1]`: every benchmark, one table of ratios, and a JSON file of the run."""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

from bench import (
    cold_start,
    context_pack,
    deferred,
    fact_quality,
    guard,
    http_appends,
    knowledge,
    locomo_recall,
    read_path,
    saved_search,
    scale,
    search_modes,
    write_path,
)
from bench.harness import Figure, bench_database, say

RESULTS = Path(__file__).parent / "results"
# search_modes runs before read_path loads another org's 100,000 vectors: its semantic
# baseline then scans an index holding its own namespace alone, the strictest comparison.
SUITES = {
    "write_path": write_path.run,
    "http_appends": http_appends.run,
    "search_modes": search_modes.run,
    "read_path": read_path.run,
    "saved_search": saved_search.run,
    "deferred": deferred.run,
    "cold_start": cold_start.run,
    "guard": guard.run,
    "fact_quality": fact_quality.run,
    "locomo": locomo_recall.run,
    "knowledge": knowledge.run,
    "context_pack": context_pack.run,
}


def _table(figures: list[Figure]) -> str:
    head = f"{'figure':46} {'value':>14} {'baseline':>30} {'ratio':>8} {'goal':>9}  met"
    lines = [head, "-" * len(head)]
    for f in figures:
        met = {True: "yes", False: "NO", None: "-"}[f.met]
        value = f"{f.value:.4g} {f.unit}"
        base = f"{f.baseline:.4g} {f.baseline_name}"[:30]
        ratio = f"{f.ratio:.3g}x"
        lines.append(f"{f.name[:46]:46} {value:>14} {base:>30} {ratio:>8} {f.goal:>9}  {met}")
    return "\n".join(lines)


def _sizes(quick: bool) -> str:
    mode = "quick" if quick else "full"
    return (
        f"{mode} run: {write_path.SIZES[mode]:,} appends; over HTTP"
        f" {http_appends.SIZES[mode][0]} serial appends and {http_appends.SIZES[mode][1]} from"
        f" {http_appends.CLIENTS} clients; filtered search over"
        f" {read_path.SIZES[mode]:,} turns ({read_path.QUERIES[mode]} queries, user filter"
        f" keeps 1%); each search mode over {search_modes.SIZES[mode]:,} turns of one namespace"
        f" ({search_modes.QUERIES[mode]} questions); hybrid saved search over"
        f" {saved_search.SIZES[mode]:,} saved messages of one"
        f" user among {saved_search.OTHER_USERS + 1}; {deferred.SIZES[mode]:,} deferred jobs;"
        f" {cold_start.RUNS[mode]} interpreters per"
        " import;"
        f" the guard on {guard.TEXTS:,} adversarial texts;"
        f" fact quality on {len(fact_quality.load())} labelled memory texts;"
        f" LoCoMo {'1 conversation' if quick else 'every conversation'} of {locomo_recall.DATA};"
        f" knowledge.publish of {knowledge.DOC_CHARS:,} characters"
        f" ({knowledge.ROUNDS['quick' if quick else 'full']} rounds), recall@{knowledge.TOP_K}"
        " over Python's language reference topics;"
        f" context.pack and each leg alone ({context_pack.CALLS[mode]} calls) over"
        f" {context_pack.SIZES[mode][0]:,} memories, {context_pack.SIZES[mode][1]:,} knowledge"
        f" documents, a brief and {context_pack.TURNS} turns"
    )


def _scale(quick: bool) -> int:
    """`make bench SCALE=1`: the scaling curve alone (not part of the default run)."""
    started = time.time()
    with bench_database() as db:
        figures = scale.run(db, quick)
    print(_table(figures))
    _record(figures, quick, "scale: " + ", ".join(f"{n:,}" for n in scale.SIZES), started)
    return 0


def _record(figures: list[Figure], quick: bool, sizes: str, started: float) -> None:
    RESULTS.mkdir(exist_ok=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    record = {
        "commit": commit,
        "quick": quick,
        "sizes": sizes,
        "machine": platform.platform(),
        "seconds": round(time.time() - started, 1),
        "figures": [f.as_dict() for f in figures],
    }
    tag = "-scale" if sizes.startswith("scale") else ""
    out = RESULTS / f"bench-{time.strftime('%Y%m%d-%H%M%S')}{tag}{'-quick' if quick else ''}.json"
    out.write_text(json.dumps(record, indent=2))
    say(f"results written to {out}")


def main() -> int:
    parser = argparse.ArgumentParser(prog="make bench")
    parser.add_argument("--quick", action="store_true", help="reduced sizes, under two minutes")
    parser.add_argument("--only", nargs="*", default=None, help="run only these suites")
    parser.add_argument(
        "--scale", action="store_true", help="only the scaling curve, to 1,000,000 turns"
    )
    args = parser.parse_args()
    if args.scale:
        return _scale(args.quick)
    figures: list[Figure] = []
    started = time.time()
    with bench_database() as db:
        for name, suite in SUITES.items():
            if args.only and name not in args.only:
                continue
            figures.extend(suite(db, args.quick))
    print(_sizes(args.quick))
    print(_table(figures))
    _record(figures, args.quick, _sizes(args.quick), started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
