"""conversation.append through the registry against raw single-row statements on the same tables."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from bench.harness import BenchDb, Figure, p95, say, timed
from chalicelib.auth import local_caller
from chalicelib.deps import Deps
from chalicelib.providers.embedder import FakeEmbedder
from chalicelib.registry import call
from chalicelib.services.turn_writer import embeddable
from chalicelib.store.pool import autocommit_connection, lease_lock, pipelined_transaction
from chalicelib.store.turn_writes import NewTurn

SIZES = {"quick": 400, "full": 3000}
ROUNDS = 5


def _turn(i: int) -> str:
    return f"turn {i}: we moved invoice batch {i} to the new ledger and checked the export job"


def _raw(deps: Deps, org: str, rows: range, vectors: list) -> float:
    """Seconds for the raw baseline: each turn's row and its vector row, INSERT + COMMIT."""
    with deps.pool.connection() as conn:
        conn.commit()
        start = time.perf_counter()
        for i in rows:
            conn.execute(
                "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role,"
                " content, ts) VALUES (%s, 'w', 'raw', 'bench', %s, 'user', %s, clock_timestamp())",
                (org, f"r{i}", _turn(i)),
            )
            conn.execute(
                "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id,"
                " model, agent, role, text, dim, embedding, ts)"
                " VALUES (%s, 'w', 'raw', %s, 'raw', 'bench', 'user', %s, %s, %s, now())",
                (org, f"r{i}", _turn(i), len(vectors[i]), vectors[i]),
            )
            conn.commit()
        return time.perf_counter() - start


_FLOOR_TURN = (
    "INSERT INTO loom.conversations (org, namespace, thread_id, agent, msg_id, role, content, ts)"
    " VALUES (%s, 'w', %s, 'bench', %s, 'user', %s, clock_timestamp()) ON CONFLICT DO NOTHING"
)
_FLOOR_VECTOR = (
    "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id, model, agent,"
    " role, text, dim, embedding, ts) VALUES (%s, 'w', %s, %s, 'raw', 'bench', 'user', %s, %s,"
    " %s, now())"
)
# With what search keeps of a turn beside its vector: its context vector and its window (the
# turn with the two before it), in the vector's transaction.
_FLOOR_INDEXED = (
    "INSERT INTO loom.conversation_embeddings (org, namespace, thread_id, msg_id, model, agent,"
    " role, text, dim, embedding, context_embedding, context_of, ts, window_tsv, window_len)"
    " VALUES (%s, 'w', %s, %s, 'raw', 'bench', 'user', %s, %s, %s, %s, %s, now(),"
    " to_tsvector('english', %s), 40)"
)


def floor_seconds(deps: Deps, org: str, rows: range, vectors: list, *, indexed: bool) -> float:
    """Seconds for the least any append can send, as raw statements with no Loom code between
    them, in the order the spec sets (the embed runs between the two transactions, so a turn
    deleted meanwhile gets no late vector): the turn's insert under the thread lease, committed
    durably (its ON CONFLICT is the duplicate check), then its vector row under the lease again,
    committed asynchronously. `indexed` adds what search's indexes ask of the same
    transaction. No validation, guard or embed runs: an append's ratio to raw cannot exceed
    this one's."""
    lease = lease_lock("%s", 0)
    thread = "floor-indexed" if indexed else "floor"
    key = f"{org}\x1fw\x1f{thread}"
    with autocommit_connection(deps.pool) as conn:
        start = time.perf_counter()
        for i in rows:
            with pipelined_transaction(conn):
                conn.execute(lease, (key,))
                conn.execute(_FLOOR_TURN, (org, thread, f"f{i}", _turn(i)))
            with pipelined_transaction(conn):
                conn.execute("SET LOCAL synchronous_commit = off")
                conn.execute(lease, (key,))
                v = vectors[i]
                if not indexed:
                    conn.execute(_FLOOR_VECTOR, (org, thread, f"f{i}", _turn(i), len(v), v))
                    continue
                window = " ".join(_turn(j) for j in range(max(i - 2, 0), i + 1))
                params = (org, thread, f"f{i}", _turn(i), len(v), v, v, f"f{i - 1}", window)
                conn.execute(_FLOOR_INDEXED, params)
        return time.perf_counter() - start


class _Precomputed(FakeEmbedder):
    """The fake embedder's vectors, computed before the clock runs (as the raw rows' and the
    floors' are): what is timed is the append's own work, not the embedder's."""

    def __init__(self, texts: list[str]):
        super().__init__(384)
        self._known = dict(zip(texts, super().embed_documents(texts), strict=True))

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        return [self._known[t] for t in texts]


def run(db: BenchDb, quick: bool) -> list[Figure]:
    n = SIZES["quick" if quick else "full"]
    deps = db.deps_for(_Precomputed([_turn(i) for i in range(n)]))
    org = "bench-write"
    caller = local_caller(org)
    call("conversation.set_logging", {"namespace": "w", "enabled": True}, caller, deps)
    body = {"namespace": "w", "agent": "bench", "thread_id": "t", "role": "user"}

    vectors = deps.embedder.embed_documents([_turn(i) for i in range(n)])
    # In rounds, each path in turn, so background work weighs on all three alike.
    spent = {"append": 0.0, "raw": 0.0, "floor": 0.0, "indexed": 0.0}
    for r in range(ROUNDS):
        rows = range(r * n // ROUNDS, (r + 1) * n // ROUNDS)
        say(f"write path: round {r + 1} of {ROUNDS}: {len(rows)} appends, raw rows, floors ...")
        start = time.perf_counter()
        for i in rows:
            call(
                "conversation.append",
                {**body, "msg_id": f"m{i}", "content": _turn(i)},
                caller,
                deps,
            )
        spent["append"] += time.perf_counter() - start
        spent["raw"] += _raw(deps, org, rows, vectors)
        spent["floor"] += floor_seconds(deps, org, rows, vectors, indexed=False)
        spent["indexed"] += floor_seconds(deps, org, rows, vectors, indexed=True)
    append_rate, raw_rate, floor_rate, indexed_rate = (
        n / spent[k] for k in ("append", "raw", "floor", "indexed")
    )

    say("write path: duplicate appends against primary-key lookups ...")

    def duplicate() -> None:
        call("conversation.append", {**body, "msg_id": "m7", "content": _turn(7)}, caller, deps)

    def lookup() -> None:
        with autocommit_connection(deps.pool) as conn:
            conn.execute(
                "SELECT 1 FROM loom.conversations WHERE org = %s AND namespace = 'w'"
                " AND thread_id = 't' AND agent = 'bench' AND msg_id = 'm7'",
                (org,),
            ).fetchone()

    # One after the other, so background work weighs on both alike.
    dup: list[float] = []
    pk: list[float] = []
    for _ in range(n):
        dup += timed(duplicate, 1)
        pk += timed(lookup, 1)

    # The guard as each append above ran it: on the turn (embeddable).
    def guard(i: int) -> None:
        embeddable(NewTurn(org, "w", "t", "bench", f"m{i}", "user", _turn(i)))

    guard_s = [timed(lambda i=i: guard(i), 1)[0] for i in range(n)]
    append_each = 1.0 / append_rate
    return [
        Figure("append throughput", append_rate, "turns/s", "raw INSERTs+COMMIT", raw_rate, ""),
        Figure(
            "append's database work vs the floor's",
            1e3 / append_rate,
            "ms",
            "spec's statements, raw",
            1e3 / floor_rate,
            "<= 2x",
        ),
        Figure(
            "append floor: spec's statements, raw",
            floor_rate,
            "turns/s",
            "raw INSERTs+COMMIT",
            raw_rate,
            "",
        ),
        Figure(
            "append floor: with search's indexes",
            indexed_rate,
            "turns/s",
            "raw INSERTs+COMMIT",
            raw_rate,
            "",
        ),
        Figure(
            "duplicate append p95", p95(dup) * 1e3, "ms", "PK lookup p95", p95(pk) * 1e3, "<= 1.2x"
        ),
        Figure(
            "sensitivity guard per append",
            sum(guard_s) / n * 1e3,
            "ms",
            "whole append",
            append_each * 1e3,
            "<= 0.05x",
        ),
    ]
