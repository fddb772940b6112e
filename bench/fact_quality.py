"""Fact quality: the classifier's precision and recall of junk on the labelled corpus
(`tests/fixtures/fact_quality_corpus.jsonl`), over all of it, its held-out third, and per
class; and its time on adversarial text beside prose of the same length."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import Figure, say
from chalicelib.fact_quality import TEXT_CLASSES, classify

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "fact_quality_corpus.jsonl"
PRECISION_GOAL, RECALL_GOAL = 0.95, 0.90


def load(split: str | None = None) -> list[dict[str, str]]:
    """The corpus's rows (text, label, split), or those of one split: dev or heldout."""
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    return [r for r in rows if split is None or r["split"] == split]


@dataclass
class Scores:
    """Junk detection over some rows: junk is any label but durable."""

    precision: float
    recall: float
    rows: int
    recall_by_class: dict[str, float]
    exact_by_class: dict[str, float]  # the share of each class given its own class
    misses: list[tuple[str, str, str]]  # (label, given, text)


def score(rows: list[dict[str, str]]) -> Scores:
    tp = fp = fn = 0
    found: Counter[str] = Counter()
    exact: Counter[str] = Counter()
    total: Counter[str] = Counter()
    misses = []
    for r in rows:
        given = classify(r["text"])
        junk, said_junk = r["label"] != "durable", given != "durable"
        tp, fp, fn = (
            tp + (junk and said_junk),
            fp + (said_junk and not junk),
            fn + (junk and not said_junk),
        )
        total[r["label"]] += 1
        found[r["label"]] += said_junk
        exact[r["label"]] += given == r["label"]
        if given != r["label"]:
            misses.append((r["label"], given, r["text"]))
    return Scores(
        precision=tp / (tp + fp) if tp + fp else 1.0,
        recall=tp / (tp + fn) if tp + fn else 1.0,
        rows=len(rows),
        recall_by_class={c: found[c] / total[c] for c in TEXT_CLASSES if total[c]},
        exact_by_class={c: exact[c] / total[c] for c in (*TEXT_CLASSES, "durable") if total[c]},
        misses=misses,
    )


def seconds_per_read(text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        classify(text)
        best = min(best, time.perf_counter() - started)
    return best


def adversarial(size: int) -> dict[str, str]:
    """Texts that pump what the rules read: one token, many tokens, paths, openings."""
    return {
        "one long token": "a" * size,
        "many short tokens": ("ran " * size)[:size],
        "many paths": ("billing/export.py:12 " * size)[:size],
        "repeated opening": ("the user asked me to " * size)[:size],
        "no spaces, punctuation": ("./:" * size)[:size],
    }


def run(db: Any, quick: bool) -> list[Figure]:
    figures = []
    for name, rows in (("all", load()), ("held-out", load("heldout"))):
        s = score(rows)
        say(
            f"fact quality ({name}, {s.rows} texts): precision {s.precision:.3f},"
            f" recall {s.recall:.3f}; recall by class {s.recall_by_class}"
        )
        figures.append(
            Figure(
                f"fact quality: junk precision, {name}",
                s.precision,
                "",
                "goal",
                PRECISION_GOAL,
                ">= 1x",
            )
        )
        figures.append(
            Figure(f"fact quality: junk recall, {name}", s.recall, "", "goal", RECALL_GOAL, ">= 1x")
        )
    for cls, recall in score(load()).recall_by_class.items():
        figures.append(Figure(f"fact quality: recall, {cls}", recall, "", "goal", RECALL_GOAL, ""))
    size = 20_000 if quick else 100_000
    prose = (" ".join(r["text"] for r in load()) * 50)[:size]
    base = seconds_per_read(prose, 5)
    worst = max(seconds_per_read(t, 3) for t in adversarial(size).values())
    figures.append(
        Figure(
            f"fact quality: worst adversarial {size // 1000} KB",
            worst * 1e3,
            "ms",
            f"{size // 1000} KB of corpus prose",
            base * 1e3,
            "<= 10x",
        )
    )
    return figures
