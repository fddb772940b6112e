"""The vector leg ranks a scope exactly while it is small, or while it is a small share of the
table (an HNSW scan would pass over the rest), up to a ceiling (decision 0004)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from chalicelib.deps import Deps
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.search.store_vectors import TurnFilter, ensure_vector_index
from chalicelib.search.tuning import SearchTuning
from chalicelib.search.turns import vector_leg_rows
from chalicelib.store.pool import autocommit_connection, open_pool
from tests.conftest import make_settings
from tests.integration.test_store_foundation import migrated_to
from tests.integration.test_transcript_partitions import LATEST

DIM = 8
EMBEDDER = FakeEmbedder(DIM)
ROWS = {"u1": 10, "u2": 90}  # a table of 100 embedded turns


@contextmanager
def _table(database_url: str) -> Iterator[tuple[str, np.ndarray]]:
    """A database of its own holding ROWS' turns (random vectors), counted by ANALYZE; yields
    its URL and the vectors in msg_id order."""
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(sum(ROWS.values()), DIM)).astype(np.float32)
    users = [u for u, n in ROWS.items() for _ in range(n)]
    with migrated_to(database_url, LATEST) as url:
        pool = open_pool(url, max_size=1)
        with autocommit_connection(pool) as conn:
            for i, (user, vec) in enumerate(zip(users, vectors, strict=True)):
                conn.execute(
                    "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id,"
                    " model, agent, role, user_id, text, dim, embedding, ts)"
                    " VALUES ('o', 'ns', 't', %s, %s, 'a', 'user', %s, 'x', %s, %s, now())",
                    (f"m{i:03d}", EMBEDDER.name, user, DIM, vec),
                )
            ensure_vector_index(conn, DIM, known=set())
            conn.execute("ANALYZE loom.conversation_embeddings")
        pool.close()
        yield url, vectors


def _leg(url: str, tuning: SearchTuning, user: str, query: np.ndarray) -> tuple[list[str], bool]:
    """The vector leg's top 3 for one user's scope, and whether it judged the scope large."""
    pool = open_pool(url, max_size=1)
    try:
        deps = Deps(make_settings(), pool=pool, embedder=EMBEDDER, search_tuning=tuning)
        filt = TurnFilter("o", ("ns",), user_id=user)
        with autocommit_connection(pool) as conn:
            rows = vector_leg_rows(deps, conn, filt, query, 3)
        large = deps.search_caches.fresh(deps.search_caches.large, (filt, EMBEDDER.name, DIM))
        return [r["msg_id"] for r in rows], bool(large)
    finally:
        deps.close()


def test_a_scope_that_is_a_small_share_of_the_table_is_ranked_exactly(database_url):
    """GIVEN a table of 100 turns, u1 holding 10 and u2 90, and a plain bound of 5 rows
    WHEN u1's scope is searched with a 20% share (bound 20), then with a 5% share (bound 5)
    THEN the first is ranked exactly (its true top 3) and not judged large, the second is
    judged large; u2's 90% is large under either."""
    with _table(database_url) as (url, vectors):
        query = vectors[3] + 0.01
        sims = vectors[:10] @ query / (np.linalg.norm(vectors[:10], axis=1) * np.linalg.norm(query))
        exact = [f"m{i:03d}" for i in np.argsort(-sims)[:3]]
        share = SearchTuning(exact_scan_max_rows=5, exact_scan_ceiling=50, exact_scan_share=0.2)
        assert _leg(url, share, "u1", query) == (exact, False)
        assert _leg(url, share, "u2", query)[1] is True
        small = SearchTuning(exact_scan_max_rows=5, exact_scan_ceiling=50, exact_scan_share=0.05)
        assert _leg(url, small, "u1", query)[1] is True


def test_the_ceiling_bounds_the_share(database_url):
    """GIVEN the same table, a share that would allow 50 rows and a ceiling of 8
    THEN u1's 10 rows are judged large."""
    with _table(database_url) as (url, vectors):
        capped = SearchTuning(exact_scan_max_rows=5, exact_scan_ceiling=8, exact_scan_share=0.5)
        assert _leg(url, capped, "u1", vectors[0])[1] is True
