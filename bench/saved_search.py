"""Hybrid search over one user's saved messages against each of its legs alone."""

from __future__ import annotations

import itertools
import random

from bench.harness import BenchDb, Figure, p95, say, timed, without_vector_index
from chalicelib.auth import local_caller
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.registry import call
from chalicelib.search.ranking import rrf
from chalicelib.search.store_vectors import ensure_vector_index

SIZES = {"quick": 2_000, "full": 10_000}  # the searched user's saved messages
OTHER_USERS, OTHERS_EACH = 19, {"quick": 200, "full": 1_000}
QUERIES = {"quick": 60, "full": 200}
TERMS = [f"term{i}" for i in range(48)]  # rotating query terms
_FILLER = [f"w{i}" for i in range(2000)]


def _text(rng: random.Random) -> str:
    words = [rng.choice(_FILLER) for _ in range(rng.randrange(20, 120))]
    for _ in range(rng.randrange(1, 4)):
        words.insert(rng.randrange(len(words)), rng.choice(TERMS))
    return " ".join(words)


def _load(db: BenchDb, org: str, quick: bool, embedder: FakeEmbedder) -> None:
    rng = random.Random(5)
    mode = "quick" if quick else "full"
    owners = ["target"] * SIZES[mode] + [
        f"u{u}" for u in range(OTHER_USERS) for _ in range(OTHERS_EACH[mode])
    ]
    say(f"saved search: loading {len(owners):,} saved messages of {OTHER_USERS + 1} users ...")
    texts = [_text(rng) for _ in owners]
    vectors = embedder.embed_documents(texts)
    deps = db.deps_for(embedder)
    with deps.pool.connection() as conn, conn.cursor() as cur:
        without_vector_index(conn, embedder.dim)
        with cur.copy(
            "COPY loom.conversations (org, namespace, thread_id, agent, msg_id, role, content,"
            " user_id, ts, is_saved, saved_at) FROM STDIN"
        ) as copy:
            for i, (user, text) in enumerate(zip(owners, texts, strict=True)):
                copy.write_row(
                    (
                        org,
                        "s",
                        f"c{i // 40}",
                        "a",
                        f"m{i}",
                        "assistant",
                        text,
                        user,
                        "2026-01-01",
                        True,
                        "2026-01-02",
                    )
                )
        with cur.copy(
            "COPY loom.conversation_embeddings (org, namespace, thread_id, msg_id, model, agent,"
            " role, user_id, text, dim, embedding, ts, is_saved, saved_at) FROM STDIN"
        ) as copy:
            for i, (user, text, vec) in enumerate(zip(owners, texts, vectors, strict=True)):
                copy.write_row(
                    (
                        org,
                        "s",
                        f"c{i // 40}",
                        f"m{i}",
                        embedder.name,
                        "a",
                        "assistant",
                        user,
                        text[:2048],
                        embedder.dim,
                        "[" + ",".join(f"{x:.6f}" for x in vec) + "]",
                        "2026-01-01",
                        True,
                        "2026-01-02",
                    )
                )
        cur.execute(
            "UPDATE loom.conversations SET (saved_tsv, saved_len) = (SELECT v,"
            " (SELECT coalesce(sum(array_length(u.positions, 1)), 0) FROM unnest(v) u)"
            " FROM (SELECT to_tsvector('simple', content) AS v) x) WHERE org = %s",
            (org,),
        )
        ensure_vector_index(conn, embedder.dim)
        cur.execute("ANALYZE loom.conversations")
        cur.execute("ANALYZE loom.conversation_embeddings")


def run(db: BenchDb, quick: bool) -> list[Figure]:
    embedder = FakeEmbedder(384)
    org = "bench-saved"
    _load(db, org, quick, embedder)
    deps = db.deps_for(embedder)
    caller = local_caller(org)
    rng = random.Random(9)
    n = QUERIES["quick" if quick else "full"]
    queries = [" ".join(rng.sample(TERMS, 2)) + " " + rng.choice(_FILLER) for _ in range(n)]
    body = {"namespace": "s", "agent": "a", "user_id": "target", "top_k": 20}

    def ask(mode: str, q: str, top_k: int = 20) -> list[tuple[str, str]]:
        hits = call(
            "conversation.search_saved_messages",
            {**body, "query": q, "search_mode": mode, "top_k": top_k},
            caller,
            deps,
        ).body["hits"]
        return [(h["conversation_id"], h["message_id"]) for h in hits]

    # Interleaved, each mode in every position in turn, so background work and warm pages
    # weigh on every mode alike.
    modes = ("semantic", "lexical", "hybrid")
    orders = list(itertools.permutations(modes))
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    say(f"saved search: {n} searches in each mode ...")
    for i, q in enumerate(queries):
        for mode in orders[i % len(orders)]:
            times[mode] += timed(lambda mode=mode, q=q: ask(mode, q), 1)
    say("saved search: fused order against a reference RRF ...")
    same = 0
    for q in queries:
        vec, lex = ask("semantic", q, 100), ask("lexical", q, 100)
        reference = [item for item, _ in rrf([(vec, 1.0), (lex, 1.0)])][:20]
        same += ask("hybrid", q) == reference
    slower_leg = max(p95(times["semantic"]), p95(times["lexical"]))
    return [
        Figure(
            f"hybrid saved search p95 @{SIZES['quick' if quick else 'full']:,}",
            p95(times["hybrid"]) * 1e3,
            "ms",
            "slower leg alone p95",
            slower_leg * 1e3,
            "<= 2x",
        ),
        Figure("hybrid order = reference RRF", same / n, "", "every query", 1.0, ">= 1x"),
    ]
