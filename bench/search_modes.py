"""conversation.search's modes at scale: the p95 of a hybrid (and a lexical) query over one
namespace of LoCoMo-like turns against a semantic one in the same run, questions interleaved,
beside PostgreSQL's own ranking (plain lexical and plain hybrid: bench/plain_modes.py)."""

from __future__ import annotations

import itertools
import time

import numpy as np

from bench import locomo
from bench.harness import BenchDb, Figure, p95, say, without_vector_index
from bench.plain_modes import PLAIN_MODES, plain_search
from chalicelib.auth import Caller, local_caller
from chalicelib.deps import Deps
from chalicelib.providers.embedder import EMBED_CHARS, FakeEmbedder
from chalicelib.registry import call
from chalicelib.search.store_vectors import ensure_vector_index

SIZES = {"quick": 10_000, "full": 100_000}
QUERIES = {"quick": 60, "full": 200}
FRESH_APPENDS = {"quick": 300, "full": 1000}  # turns appended while lexical search is timed
THREAD_TURNS = 50
MODES = ("semantic", "lexical", "hybrid")
TS = "2026-01-01T00:00:00Z"

# The load goes through a staging table, then into the embedding rows in one pass with every
# window computed as the migration that added them computes them.
_STAGE = (
    "CREATE TEMP TABLE stage (thread_id text, msg_id text, role text, text text,"
    " embedding vector, context_embedding vector) ON COMMIT DROP"
)
_FROM_STAGE = (
    "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id, model, agent,"
    " role, user_id, text, dim, embedding, context_embedding, ts, window_tsv, window_len)"
    " SELECT %(org)s, 'big', thread_id, msg_id, %(model)s, 'a', role, '-', text, %(dim)s,"
    " embedding, context_embedding, %(ts)s::timestamptz, doc, loom.tsv_tokens(doc)"
    " FROM (SELECT *, loom.turn_window(%(ts)s::timestamptz, lag(text, 2) OVER t,"
    "  lag(text, 1) OVER t, text, NULL) AS doc"
    "  FROM stage WINDOW t AS (PARTITION BY thread_id ORDER BY msg_id)) w"
)


def _vec(v: object) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"  # type: ignore[attr-defined]


def _load(db: BenchDb, org: str, n: int, embedder: FakeEmbedder) -> None:
    texts = [locomo.turn_text(t) for conv in locomo.load() for t in conv.turns]
    deps = db.deps_for(embedder)
    with deps.pool.connection() as conn:
        without_vector_index(conn, embedder.dim)
        with conn.cursor() as cur:
            cur.execute(_STAGE)
            for start in range(0, n, 10_000):
                stop = min(start + 10_000, n)
                say(f"search modes: loading turns {start:,}-{stop:,} of {n:,} ...")
                rows = [(i, texts[i % len(texts)][:EMBED_CHARS]) for i in range(start, stop)]
                own = embedder.embed_documents([t for _, t in rows])
                # The context vector as an append derives it: its own plus the turn before's.
                own = np.asarray(own, dtype=np.float32)
                before = np.roll(own, 1, axis=0)
                first = np.array([i % THREAD_TURNS == 0 for i, _ in rows])
                ctx = np.where(first[:, None], own, own + before)
                ctx /= np.maximum(np.linalg.norm(ctx, axis=1, keepdims=True), 1e-12)
                with cur.copy("COPY stage FROM STDIN") as copy:
                    for (i, text), v, c in zip(rows, own, ctx, strict=True):
                        role = "user" if i % 2 else "assistant"
                        copy.write_row(
                            (f"t{i // THREAD_TURNS}", f"m{i:07d}", role, text, _vec(v), _vec(c))
                        )
            say("search modes: writing the rows with their windows ...")
            params = {"org": org, "model": embedder.name, "dim": embedder.dim, "ts": TS}
            cur.execute(_FROM_STAGE, params)
        conn.commit()
        say("search modes: building the HNSW indexes ...")
        ensure_vector_index(conn, embedder.dim)
    with deps.pool.connection() as conn:
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE loom.conversation_embeddings")
        conn.autocommit = False


def run(db: BenchDb, quick: bool) -> list[Figure]:
    size = "quick" if quick else "full"
    n = SIZES[size]
    embedder = FakeEmbedder(384)
    org = "bench-modes"
    _load(db, org, n, embedder)
    deps = db.deps_for(embedder)
    caller = local_caller(org)
    questions = [q.question for conv in locomo.load() for q in conv.questions]
    questions = questions[: QUERIES[size]]
    latency: dict[str, list[float]] = {m: [] for m in (*MODES, *PLAIN_MODES)}
    say(f"search modes: {len(questions)} questions in each mode over {n:,} turns ...")
    # Interleaved, so background work weighs on every mode alike, in every order in turn: the
    # lexical and hybrid modes share term statistics (the first to meet a word counts it in
    # the scope), and each meets a question first for half of them. The plain modes run after:
    # each of their queries reads most of the scope's windows, which would push the pages the
    # others read out of the buffer cache between their queries.
    for modes in (MODES, PLAIN_MODES):
        orders = list(itertools.permutations(modes))
        for i, q in enumerate(questions):
            for mode in orders[i % len(orders)]:
                latency[mode].append(_search_time(deps, caller, q, mode))
    semantic = p95(latency["semantic"]) * 1e3
    before, after = _lexical_under_appends(deps, caller, questions, FRESH_APPENDS[size])
    return [
        Figure(
            f"hybrid search p95 @{n:,}",
            p95(latency["hybrid"]) * 1e3,
            "ms",
            "semantic p95",
            semantic,
            "<= 3x",
        ),
        Figure(
            f"lexical search p95 @{n:,}",
            p95(latency["lexical"]) * 1e3,
            "ms",
            "semantic p95",
            semantic,
            "",
        ),
        Figure(
            f"lexical p95 after {FRESH_APPENDS[size]:,} appends",
            after * 1e3,
            "ms",
            "lexical p95 before them",
            before * 1e3,
            "<= 1.25x",
        ),
        *(
            Figure(
                f"{mode} search p95 @{n:,}",
                p95(latency[mode]) * 1e3,
                "ms",
                "semantic p95",
                semantic,
                "",
            )
            for mode in PLAIN_MODES
        ),
    ]


def _lexical_under_appends(
    deps: Deps, caller: Caller, questions: list[str], appends: int
) -> tuple[float, float]:
    """The p95 of a lexical query before and after `appends` turns arrive through
    conversation.append (their index entries still unmerged), term statistics warm in both."""

    def lexical_p95() -> float:
        return p95([_search_time(deps, caller, q, "lexical") for q in questions])

    before = lexical_p95()
    say(f"search modes: {appends:,} appends, then lexical search again ...")
    call("conversation.set_logging", {"namespace": "big", "enabled": True}, caller, deps)
    texts = [locomo.turn_text(t) for conv in locomo.load() for t in conv.turns]
    for i in range(appends):
        body = {"namespace": "big", "agent": "a", "thread_id": f"fresh-{i // THREAD_TURNS}",
                "role": "user", "msg_id": f"f{i}", "content": texts[i % len(texts)]}  # fmt: skip
        call("conversation.append", body, caller, deps)
    return before, lexical_p95()


def _search_time(deps: Deps, caller: Caller, query: str, mode: str) -> float:
    """Seconds one conversation.search of the loaded namespace takes in a mode (a plain one
    read without the op's request handling)."""
    if mode in PLAIN_MODES:
        start = time.perf_counter()
        plain_search(deps, caller, "big", query, 10, mode)
        return time.perf_counter() - start
    body = {"namespace": "big", "agent": "*", "query": query, "top_k": 10,
            "namespace_scope": "this", "search_mode": mode}  # fmt: skip
    start = time.perf_counter()
    call("conversation.search", body, caller, deps)
    return time.perf_counter() - start
