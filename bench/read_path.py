"""Filtered conversation.search at 100,000 turns against the raw pgvector query, with recall."""

from __future__ import annotations

import random

from bench.harness import BenchDb, Figure, p95, say, timed, without_vector_index
from chalicelib.auth import local_caller
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.registry import call
from chalicelib.search.store_vectors import ensure_vector_index

SIZES = {"quick": 10_000, "full": 100_000}
USERS = 100  # a user filter keeps 1% of the namespace
QUERIES = {"quick": 50, "full": 200}
TOP_K = 20
_WORDS = [f"w{i}" for i in range(3000)]


def _text(rng: random.Random) -> str:
    topic = rng.randrange(60)  # clustered vocabulary, like real threads
    words = [_WORDS[(topic * 50 + rng.randrange(50)) % len(_WORDS)] for _ in range(12)]
    return " ".join(words + [rng.choice(_WORDS) for _ in range(4)])


def _load(db: BenchDb, org: str, n: int, embedder: FakeEmbedder) -> None:
    rng = random.Random(7)
    deps = db.deps_for(embedder)
    with deps.pool.connection() as conn:
        without_vector_index(conn, embedder.dim)
        with conn.cursor() as cur:
            for start in range(0, n, 10_000):
                say(f"read path: loading turns {start:,}-{min(start + 10_000, n):,} of {n:,} ...")
                rows = [(i, _text(rng)) for i in range(start, min(start + 10_000, n))]
                vectors = embedder.embed_documents([t for _, t in rows])
                with cur.copy(
                    "COPY loom.conversations (org, namespace, thread_id, agent, msg_id, role,"
                    " content, user_id, ts) FROM STDIN"
                ) as copy:
                    for i, text in rows:
                        copy.write_row(
                            (
                                org,
                                "big",
                                f"t{i // 50}",
                                "a",
                                f"m{i}",
                                "user",
                                text,
                                f"u{i % USERS}",
                                "2026-01-01",
                            )
                        )
                with cur.copy(
                    "COPY loom.conversation_embeddings (org, namespace, thread_id, msg_id, model,"
                    " agent, role, user_id, text, dim, embedding, ts) FROM STDIN"
                ) as copy:
                    for (i, text), vec in zip(rows, vectors, strict=True):
                        copy.write_row(
                            (
                                org,
                                "big",
                                f"t{i // 50}",
                                f"m{i}",
                                embedder.name,
                                "a",
                                "user",
                                f"u{i % USERS}",
                                text,
                                embedder.dim,
                                "[" + ",".join(f"{x:.6f}" for x in vec) + "]",
                                "2026-01-01",
                            )
                        )
        say("read path: building the HNSW index ...")
        ensure_vector_index(conn, embedder.dim)
    with deps.pool.connection() as conn:
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE loom.conversation_embeddings")  # settle the load
        conn.execute("VACUUM ANALYZE loom.conversations")
        conn.autocommit = False


def run(db: BenchDb, quick: bool) -> list[Figure]:
    n = SIZES["quick" if quick else "full"]
    embedder = FakeEmbedder(384)
    org = "bench-read"
    _load(db, org, n, embedder)
    deps = db.deps_for(embedder, conversation_search_min_similarity=-1.0)
    caller = local_caller(org)
    rng = random.Random(11)
    queries = [
        (_text(rng), f"u{rng.randrange(USERS)}")
        for _ in range(QUERIES["quick" if quick else "full"])
    ]

    say(f"read path: {len(queries)} filtered searches through the registry ...")
    found: list[list[float]] = []

    def search(q: str, user: str) -> None:
        out = call(
            "conversation.search",
            {
                "namespace": "big",
                "agent": "*",
                "query": q,
                "user_id": user,
                "top_k": TOP_K,
                "namespace_scope": "this",
            },
            caller,
            deps,
        )
        found.append([h["similarity"] for h in out.body["hits"]])

    raw_sql = (
        "SELECT msg_id FROM loom.conversation_embeddings WHERE org = %s AND namespace = 'big'"
        " AND user_id = %s AND dim = 384 AND tombstoned_at IS NULL AND embedding IS NOT NULL"
        " ORDER BY embedding::vector(384) <=> %s::vector(384) LIMIT %s"
    )
    exact_sql = raw_sql.replace(
        "SELECT msg_id", "SELECT 1 - (embedding::vector(384) <=> %s)"
    ).replace(
        "ORDER BY embedding::vector(384) <=> %s::vector(384)",
        "ORDER BY (embedding::vector(384) <=> %s::vector(384)) + 0",
    )
    vecs = [embedder.embed_query(q) for q, _ in queries]
    op_times: list[float] = []
    raw_times: list[float] = []
    # Each query runs through the op and raw, one after the other, so background work (an
    # autovacuum after the load) weighs on both alike; each goes first for half the queries,
    # since the second finds the user's rows the first read already in the buffer cache.
    with deps.pool.connection() as conn:
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.commit()
        for i, ((q, user), vec) in enumerate(zip(queries, vecs, strict=True)):
            pair = [
                (op_times, lambda q=q, user=user: search(q, user)),
                (
                    raw_times,
                    lambda user=user, vec=vec: conn.execute(
                        raw_sql, (org, user, vec, TOP_K)
                    ).fetchall(),
                ),
            ]
            for times, run_one in pair if i % 2 else reversed(pair):
                times += timed(run_one, 1)
        say("read path: exact scans for recall ...")
        hits = 0
        for ((_, user), vec), got in zip(zip(queries, vecs, strict=True), found, strict=True):
            exact = [r[0] for r in conn.execute(exact_sql, (vec, org, user, vec, TOP_K))]
            # A hit is right when it is as similar as the exact k-th: ties may differ in id.
            kth = exact[-1] if exact else 1.0
            hits += min(len(exact), sum(1 for sim in got if sim >= kth - 1e-6))
        conn.rollback()
    recall = hits / (TOP_K * len(queries))  # every user holds far more than TOP_K turns
    return [
        Figure(
            f"filtered search p95 @{n:,}",
            p95(op_times) * 1e3,
            "ms",
            "raw pgvector p95",
            p95(raw_times) * 1e3,
            "<= 1.5x",
        ),
        Figure("filtered search recall@20", recall, "", "exact scan", 1.0, ">= 0.95x"),
    ]
