"""`make bench SCALE=1`: how each transcript figure grows from 10,000 to 100,000 to 1,000,000
turns of one namespace among 100, beside the same growth of raw pgvector and raw tsvector
queries; index memory per million turns; and the TTL by partition against row by row.

Vectors are the fake embedder's, 64 dimensions (a million 384-dimension vectors and their
HNSW index would take this machine's disk and an hour): growth, not the absolute figure, is
what this suite reports, and the raw baselines use the same vectors.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.harness import BenchDb, Figure, p95, say, timed, without_vector_index
from bench.write_path import floor_seconds
from chalicelib.auth import local_caller
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.registry import call
from chalicelib.search.store_vectors import ensure_vector_index
from chalicelib.store.retention import drop_partition, purge_expired_turns

SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (10_000, 100_000)
OTHER_NAMESPACES = 99  # each holds OTHER_TURNS turns: the namespace measured is one among 100
OTHER_TURNS = 200
USERS = 100
QUERIES = 100
THREADS_CALLS = 20  # a threads list of a million turns takes seconds: fewer calls
APPENDS = 200
WARM_UP = 20
TOP_K = 20
DIM = 64
RETENTION_TURNS = 100_000
_WORDS = [f"w{i}" for i in range(3000)]


def _text(rng: random.Random) -> str:
    topic = rng.randrange(60)
    words = [_WORDS[(topic * 50 + rng.randrange(50)) % len(_WORDS)] for _ in range(12)]
    return " ".join(words + [rng.choice(_WORDS) for _ in range(4)])


def _copy(conn: Any, org: str, ns: str, ids: range, embedder: FakeEmbedder, ts: str) -> None:
    """Turns `ids` of namespace `ns` with their vectors and BM25 windows (the turn alone)."""
    rng = random.Random(ids.start)
    rows = [(i, _text(rng)) for i in ids]
    vectors = embedder.embed_documents([t for _, t in rows])
    with conn.cursor() as cur:
        with cur.copy(
            "COPY loom.conversations (org, namespace, thread_id, agent, msg_id, role, content,"
            " user_id, ts) FROM STDIN"
        ) as copy:
            for i, text in rows:
                copy.write_row((org, ns, f"t{i // 50}", "a", f"m{i}", "user", text,
                                f"u{i % USERS}", ts))  # fmt: skip
        with cur.copy(
            "COPY loom.conversation_embeddings (org, namespace, thread_id, msg_id, model, agent,"
            " role, user_id, text, dim, embedding, context_embedding, ts, window_tsv, window_len)"
            " FROM STDIN"
        ) as copy:
            for (i, text), vec in zip(rows, vectors, strict=True):
                literal = "[" + ",".join(f"{x:.5f}" for x in vec) + "]"
                window = " ".join(f"'{w}'" for w in sorted(set(text.split())))
                row = (org, ns, f"t{i // 50}", f"m{i}", embedder.name, "a", "user")
                copy.write_row((*row, f"u{i % USERS}", text, DIM, literal, literal, ts, window, 16))


def _grow(db: BenchDb, org: str, have: int, want: int, embedder: FakeEmbedder) -> None:
    deps = db.deps_for(embedder)
    with deps.pool.connection() as conn:
        without_vector_index(conn, DIM)
        for start in range(have, want, 50_000):
            end = min(start + 50_000, want)
            say(f"scale: loading turns {start:,}-{end:,} of {want:,} ...")
            _copy(conn, org, "big", range(start, end), embedder, "2026-01-01")
            conn.commit()
        say("scale: building the HNSW index ...")
        # The graph of a million vectors does not fit the default 64 MB: pgvector then builds
        # it on disk, many times slower.
        conn.execute("SET maintenance_work_mem = '1GB'")
        ensure_vector_index(conn, DIM)
    with deps.pool.connection() as conn:
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE loom.conversation_embeddings")
        conn.execute("VACUUM ANALYZE loom.conversations")


def _measure(db: BenchDb, org: str, n: int, embedder: FakeEmbedder) -> dict[str, float]:
    """p95 seconds of each op and its raw baseline, appends a second, index bytes a turn."""
    deps = db.deps_for(embedder, conversation_search_min_similarity=-1.0)
    caller = local_caller(org)
    rng = random.Random(n)
    queries = [(_text(rng), f"u{rng.randrange(USERS)}") for _ in range(QUERIES)]
    base = {"namespace": "big", "agent": "*", "top_k": TOP_K, "namespace_scope": "this"}
    out: dict[str, float] = {}

    def op(name: str, body: dict[str, Any]) -> None:
        call(name, {**base, **body}, caller, deps)

    raw_vec = (
        "SELECT msg_id FROM loom.conversation_embeddings WHERE org = %s AND namespace = 'big'"
        " AND user_id = %s AND dim = 64 AND tombstoned_at IS NULL AND embedding IS NOT NULL"
        " ORDER BY embedding::vector(64) <=> %s::vector(64) LIMIT 20"
    )
    raw_tsv = (
        "SELECT msg_id FROM loom.conversation_embeddings WHERE org = %s AND namespace = 'big'"
        " AND tombstoned_at IS NULL AND window_tsv @@ plainto_tsquery('english', %s)"
        " ORDER BY ts_rank_cd(window_tsv, plainto_tsquery('english', %s)) DESC LIMIT 20"
    )
    with deps.pool.connection() as conn:
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        vecs = [embedder.embed_query(q) for q, _ in queries]
        times: dict[str, list[float]] = {k: [] for k in ("filtered", "raw_vec", "hybrid",
                                                         "raw_tsv", "threads")}  # fmt: skip
        for (q, user), vec in zip(queries, vecs, strict=True):
            words = " ".join(q.split()[:3])
            times["filtered"] += timed(lambda q=q, u=user: op("conversation.search",
                                       {"query": q, "user_id": u}), 1)  # fmt: skip
            times["raw_vec"] += timed(lambda u=user, v=vec: conn.execute(
                raw_vec, (org, u, v)).fetchall(), 1)  # fmt: skip
            times["hybrid"] += timed(lambda w=words: op("conversation.search",
                                     {"query": w, "search_mode": "hybrid"}), 1)  # fmt: skip
            times["raw_tsv"] += timed(lambda w=words: conn.execute(
                raw_tsv, (org, w, w)).fetchall(), 1)  # fmt: skip
            if len(times["threads"]) < THREADS_CALLS:
                times["threads"] += timed(lambda: op("conversation.threads", {"limit": 20}), 1)
        conn.rollback()
        sizes = conn.execute(
            "SELECT sum(pg_indexes_size(c.oid)) FROM pg_class c JOIN pg_namespace s"
            " ON s.oid = c.relnamespace WHERE s.nspname = 'loom'"
            " AND (c.relname IN ('conversation_embeddings', 'conversations_before_partitions',"
            " 'conversations_default') OR c.relname LIKE 'conversations_20%%')"
        ).fetchone()
    out = {k: p95(v) for k, v in times.items()}
    say(f"scale: {APPENDS} appends at {n:,} ...")
    op("conversation.set_logging", {"enabled": True})
    for i in range(WARM_UP):  # the first calls of a process pay for what later ones reuse
        op("conversation.append", {"agent": "a", "thread_id": f"warm{n}", "msg_id": f"w{i}",
                                   "role": "user", "content": _text(rng)})  # fmt: skip
    started = timed(lambda: [op("conversation.append", {"agent": "a", "thread_id": f"new{n}",
                    "msg_id": f"n{n}-{i}", "role": "user", "content": _text(rng)})
                    for i in range(APPENDS)], 1)[0]  # fmt: skip
    out["appends_per_s"] = APPENDS / started
    # The same number of raw appends: the spec's statements alone, with search's indexes (the
    # write path suite's floor), into the same table and indexes; their growth is physical.
    vectors = embedder.embed_documents([_text(rng) for _ in range(APPENDS)])
    out["raw_appends_per_s"] = APPENDS / floor_seconds(
        deps, f"bench-raw-{n}", range(APPENDS), vectors, indexed=True
    )
    out["index_bytes_per_turn"] = float(sizes[0] or 0) / (n + OTHER_NAMESPACES * OTHER_TURNS)
    return out


def _retention(db: BenchDb, embedder: FakeEmbedder) -> tuple[float, float]:
    """Seconds to remove RETENTION_TURNS expired turns row by row (with the VACUUM it leaves),
    and by dropping their month's partition, in two month partitions ahead of now."""
    deps = db.deps_for(embedder)
    now = datetime.now(UTC)
    months = [datetime(now.year + (now.month + k - 1) // 12, (now.month + k - 1) % 12 + 1, 1,
                       tzinfo=UTC) for k in (1, 2)]  # fmt: skip
    with deps.pool.connection() as conn:
        without_vector_index(conn, DIM)  # the vectors are not what is timed here
        for k, month in enumerate(months):
            say(f"scale: {RETENTION_TURNS:,} turns in {month:%Y-%m} ...")
            ids = range(10_000_000 * (k + 1), 10_000_000 * (k + 1) + RETENTION_TURNS)
            _copy(conn, "bench-ttl", "ttl", ids, embedder, (month + timedelta(days=3)).isoformat())
            conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE loom.conversations")
        conn.autocommit = False
    cutoff = months[1]
    row_part = f"conversations_{months[0]:%Y_%m}"
    drop_part = f"conversations_{months[1]:%Y_%m}"

    def row_by_row() -> None:
        with deps.pool.connection() as conn:
            while purge_expired_turns(conn, cutoff, 5000, row_part) == 5000:
                conn.commit()
            conn.commit()
            conn.autocommit = True
            conn.execute(f"VACUUM loom.{row_part}")

    def by_partition() -> None:
        with deps.pool.connection() as conn:
            assert drop_partition(conn, drop_part) == RETENTION_TURNS

    return timed(row_by_row, 1)[0], timed(by_partition, 1)[0]


def run(db: BenchDb, quick: bool) -> list[Figure]:
    embedder = FakeEmbedder(DIM)
    org = "bench-scale"
    deps = db.deps_for(embedder)
    with deps.pool.connection() as conn:
        for k in range(OTHER_NAMESPACES):
            _copy(conn, org, f"other{k}", range(OTHER_TURNS), embedder, "2026-01-01")
        conn.commit()
    figures: list[Figure] = []
    have, seen = 0, []
    for n in QUICK_SIZES if quick else SIZES:
        _grow(db, org, have, n, embedder)
        have = n
        seen.append((n, _measure(db, org, n, embedder)))
        say(f"scale: at {n:,}: " + ", ".join(f"{k} {v:.4g}" for k, v in seen[-1][1].items()))
    for (n1, a), (n2, b) in zip(seen, seen[1:], strict=False):
        growth = f"{n1 // 1000:,}k->{n2 // 1000:,}k"
        figures += [
            Figure(f"filtered search p95 growth {growth}", b["filtered"] / a["filtered"], "x",
                   "raw pgvector growth", b["raw_vec"] / a["raw_vec"], "<= 1.2x"),
            Figure(f"hybrid search p95 growth {growth}", b["hybrid"] / a["hybrid"], "x",
                   "raw tsvector growth", b["raw_tsv"] / a["raw_tsv"], ""),
            Figure(f"threads p95 growth {growth}", b["threads"] / a["threads"], "x",
                   "raw tsvector growth", b["raw_tsv"] / a["raw_tsv"], ""),
            Figure(f"appends/s at {n2:,} vs {n1:,}", b["appends_per_s"], "/s",
                   f"appends/s at {n1:,}", a["appends_per_s"], ""),
        ]  # fmt: skip
    (first_n, first), (last_n, last) = seen[0], seen[-1]
    name = f"appends/s at {last_n:,} vs {first_n:,}"
    figures.append(Figure(name, last["appends_per_s"], "/s", f"appends/s at {first_n:,}",
                          first["appends_per_s"], ">= 0.8x"))  # fmt: skip
    raw_name = f"raw appends/s at {last_n:,} vs {first_n:,}"
    figures.append(
        Figure(raw_name, last["raw_appends_per_s"], "/s", f"raw appends/s at {first_n:,}",
               first["raw_appends_per_s"], "")
    )  # fmt: skip
    per_million = last["index_bytes_per_turn"] * 1e6 / 2**30
    figures.append(Figure(f"index memory per 1M turns @{last_n:,}", per_million, "GiB", "-",
                          1.0, ""))  # fmt: skip
    by_rows, by_partition = _retention(db, embedder)
    figures.append(Figure(f"TTL of {RETENTION_TURNS:,} turns by partition", by_partition, "s",
                          "row by row + VACUUM", by_rows, "<= 0.1x"))  # fmt: skip
    return figures
