"""What every benchmark shares: its own embedded PostgreSQL, timing, and ratio figures."""

from __future__ import annotations

import logging
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import chalicelib.ops  # noqa: F401  (registers every op: a bench is an entrypoint)
from chalicelib.config import Settings
from chalicelib.deps import Deps
from chalicelib.observability import logger
from chalicelib.providers.embedder import Embedder, FakeEmbedder
from chalicelib.store.embedded import start_embedded, stop_embedded
from chalicelib.store.migrate import migrate
from chalicelib.store.pool import open_pool


@dataclass
class Figure:
    """One measured figure beside its baseline from the same run."""

    name: str
    value: float
    unit: str
    baseline_name: str
    baseline: float
    goal: str  # e.g. ">= 0.5x" or "<= 1.2x"; "" when the figure is reported, not held
    ratio: float = field(init=False)
    met: bool | None = field(init=False)

    def __post_init__(self) -> None:
        self.ratio = self.value / self.baseline if self.baseline else float("nan")
        self.met = None
        if self.goal:
            op, bound = self.goal.split()
            limit = float(bound.rstrip("x"))
            self.met = self.ratio >= limit if op == ">=" else self.ratio <= limit

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1] if len(samples) >= 20 else max(samples)


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    """Seconds per call, `repeat` times."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def without_vector_index(conn: Any, dim: int) -> None:
    """Drop the HNSW index before a bulk load: building it afterwards is many times faster
    than inserting into it row by row. `ensure_vector_index` builds it again."""
    from chalicelib.search import store_vectors as conversation_search

    name = conversation_search.vector_index_name(int(dim))
    conn.execute(f"DROP INDEX IF EXISTS loom.{name}")
    conversation_search._ensured_indexes.discard(dim)


@dataclass
class BenchDb:
    url: str
    deps_for: Callable[..., Deps]


@contextmanager
def bench_database() -> Iterator[BenchDb]:
    """A fresh embedded PostgreSQL for this run, removed afterwards."""
    root = tempfile.mkdtemp(prefix="loomb-", dir="/tmp")
    logger.setLevel(logging.ERROR)  # one JSON line per op would be what is timed
    try:
        url = start_embedded(f"{root}/pg", cleanup_mode="delete")
        migrate(url)
        pool = open_pool(url, max_size=4)

        def deps_for(embedder: Embedder | None = None, **settings: Any) -> Deps:
            base = {"auth": "off", "embedder": "fake", "settings_refresh_seconds": 60}
            return Deps(
                Settings.model_validate({**base, **settings}),
                pool=pool,
                embedder=embedder or FakeEmbedder(384),
            )

        yield BenchDb(url, deps_for)
        pool.close()
    finally:
        stop_embedded(f"{root}/pg")  # before its directory goes: the server is found through it
        shutil.rmtree(root, ignore_errors=True)
