"""Cold start: importing app.py against importing its heaviest dependencies alone."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

from bench.harness import BenchDb, Figure, say

ROOT = Path(__file__).resolve().parents[1]
DEPENDENCIES = (
    "import chalice, pydantic, pydantic_settings, psycopg, psycopg_pool, pgvector.psycopg"
)
RUNS = {"quick": 5, "full": 15}


def _import_seconds(statement: str) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def run(db: BenchDb, quick: bool) -> list[Figure]:
    n = RUNS["quick" if quick else "full"]
    say(f"cold start: {n} fresh interpreters each ...")
    app = statistics.median(_import_seconds("import app") for _ in range(n))
    deps = statistics.median(_import_seconds(DEPENDENCIES) for _ in range(n))
    return [
        Figure(
            "cold start: import app.py",
            app * 1e3,
            "ms",
            "its dependencies alone",
            deps * 1e3,
            "<= 1.5x",
        )
    ]
