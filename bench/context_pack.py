"""context.pack against each of its legs alone, on one namespace holding memories, knowledge
documents, a session brief and a thread: the pack's p95 over the slowest leg's p95.

The legs run concurrently, so a pack should cost about its slowest leg; what it adds is the
fan-out and the budget. Every call goes through the registry with the local e5 embedder, so
each query's embedding is paid as a deployment pays it. The memories and knowledge legs each
ask for the query's vector; the shared embedder makes one model call for both, and the pack is
timed beside one whose embedder makes a call for each (`_EmbedPerLeg`), with this process's
CPU a call.

The stored vectors come from the same model without embedding every text: e5 embeds about 15
short facts a second on the bench machine, so a pool of real facts is embedded and each
memory's and chunk's vector is a blend of two pool vectors with noise (rarely within the
restatement cosine, 0.95, of another; a few percent above the model's floor for a query). The
index, the legs' depths and the quality filter's reads are what they are at this size; only
which texts the vector leg finds is not the model's own ranking."""

from __future__ import annotations

import hashlib
import itertools
import random
import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np

from bench.harness import BenchDb, Figure, p95, say, timed
from chalicelib.auth import local_caller
from chalicelib.config import Settings
from chalicelib.deps import Deps
from chalicelib.providers.embed_batcher import BatchingEmbedder, build_embedder
from chalicelib.providers.embedder import Embedder, LocalEmbedder
from chalicelib.registry import call
from chalicelib.services.knowledge_reads import served_chunks

SIZES = {"quick": (2_000, 200), "full": (10_000, 1_000)}  # memories, knowledge documents
POOL = {"quick": 200, "full": 1_000}  # facts the model embeds; every stored vector blends two
CALLS = {"quick": 30, "full": 100}
TURNS = 20
LEGS = ("memory.search", "served_chunks", "session.brief_get", "conversation.get")
ORG = "bench-pack"
NS = "pack"
AGENT = "helpdesk"
THREAD = "th-pack"
BRIEF = "release-train"

_PEOPLE = ["Priya", "Tomás", "Aiko", "Femi", "Lena", "Marek", "Sofia", "Jun", "Amara", "Olek",
           "Ines", "Rahul", "Chloe", "Bjorn", "Yusuf", "Mei", "Diego", "Hana", "Kwame",
           "Elsa"]  # fmt: skip
_PLACES = ["Lisbon", "Porto", "Berlin", "Osaka", "Lagos", "Toronto", "Krakow", "Austin", "Nairobi",
           "Lyon", "Seoul", "Dublin", "Oslo", "Bogotá", "Melbourne", "Tallinn"]  # fmt: skip
_SERVICES = ["billing", "search", "checkout", "ledger", "notifications", "auth", "reporting",
             "ingest", "catalog", "payments", "scheduler", "exports"]  # fmt: skip
_THINGS = ["oat milk flat whites", "green tea", "sourdough", "ramen", "cycling to work",
           "bouldering", "jazz records", "board games", "trail running", "sci-fi novels",
           "a standing desk", "mechanical keyboards", "dark mode", "early meetings"]  # fmt: skip
_TOOLS = ["PostgreSQL 16", "Terraform", "Grafana", "pytest", "Kafka", "Redis", "Sentry",
          "GitHub Actions", "Kubernetes", "Datadog", "uv", "ruff"]  # fmt: skip
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
_FACTS: list[tuple[str, Callable[[random.Random], str]]] = [
    ("person/{p}/home", lambda r: f"{r.choice(_PEOPLE)} lives in {r.choice(_PLACES)} and works"
     f" from the {r.choice(_PLACES)} office on {r.choice(_DAYS)}s."),
    ("person/{p}/likes", lambda r: f"{r.choice(_PEOPLE)} likes {r.choice(_THINGS)} and"
     f" dislikes {r.choice(_THINGS)}."),
    ("service/{s}/owner", lambda r: f"The {r.choice(_SERVICES)} service is owned by"
     f" {r.choice(_PEOPLE)}'s team, with {r.choice(_PEOPLE)} as the on-call backup."),
    ("service/{s}/stack", lambda r: f"The {r.choice(_SERVICES)} service stores its state in"
     f" {r.choice(_TOOLS)} and alerts through {r.choice(_TOOLS)}."),
    ("service/{s}/deploy", lambda r: f"Deploys of {r.choice(_SERVICES)} go out on"
     f" {r.choice(_DAYS)} afternoons after the {r.choice(_SERVICES)} smoke tests pass."),
    ("customer/{c}/plan", lambda r: f"Customer {r.randrange(100, 999)} in {r.choice(_PLACES)}"
     f" is on the {r.choice(['starter', 'team', 'business', 'enterprise'])} plan and renews in"
     f" {r.choice(['March', 'June', 'September', 'December'])}."),
    ("customer/{c}/issue", lambda r: f"Customer {r.randrange(100, 999)} reported that"
     f" {r.choice(_SERVICES)} exports time out above {r.randrange(2, 90)} thousand rows."),
    ("policy/{s}/rule", lambda r: f"Refunds over {r.randrange(50, 900)} euros need"
     f" {r.choice(_PEOPLE)}'s approval before the {r.choice(_SERVICES)} run closes."),
    ("project/{s}/goal", lambda r: f"The {r.choice(_SERVICES)} migration to {r.choice(_TOOLS)}"
     f" should finish by week {r.randrange(1, 52)}; {r.choice(_PEOPLE)} leads it."),
    ("user/{p}/preference", lambda r: f"The user prefers answers with {r.choice(_TOOLS)}"
     f" examples and meets {r.choice(_PEOPLE)} every {r.choice(_DAYS)}."),
]  # fmt: skip
_QUERIES = [
    "who owns the billing service and who is on call",
    "when do checkout deploys go out",
    "which customers report exports timing out",
    "where does Priya live and work",
    "refund approval rules for the payments run",
    "what database does the ledger service use",
    "how do I roll back a failed search deploy",
    "what does Lena like to drink in the morning",
    "status of the notifications migration to Kafka",
    "enterprise customers renewing in December",
]


def _fact(rng: random.Random, i: int) -> tuple[str, str]:
    key, text = rng.choice(_FACTS)
    slot = f"{rng.choice(_PEOPLE).lower()}{i}"
    return key.format(p=slot, s=slot, c=slot), text(rng)


def _document(rng: random.Random, i: int) -> tuple[str, str, str]:
    """A runbook, policy or design note of one to two thousand characters (one chunk)."""
    service, tool, person = rng.choice(_SERVICES), rng.choice(_TOOLS), rng.choice(_PEOPLE)
    kind = rng.choice(["runbook", "policy", "design note", "postmortem"])
    title = f"{service.title()} {kind} {i}"
    paragraphs = [
        f"This {kind} covers the {service} service, owned by {person}'s team in"
        f" {rng.choice(_PLACES)}.",
        f"The service keeps its state in {tool} and reports to {rng.choice(_TOOLS)}. A deploy"
        f" goes out on {rng.choice(_DAYS)} after the {rng.choice(_SERVICES)} smoke tests pass;"
        f" a failed deploy is rolled back with the previous image tag within"
        f" {rng.randrange(5, 60)} minutes.",
        f"When {service} latency rises above {rng.randrange(100, 900)} ms at p95, page the"
        f" on-call engineer, check the {rng.choice(_TOOLS)} dashboard, and look for a long"
        f" transaction or a queue backlog in {rng.choice(_SERVICES)}.",
        f"Refunds, exports and customer data requests that touch {service} need"
        f" {rng.choice(_PEOPLE)}'s approval above {rng.randrange(50, 900)} euros or"
        f" {rng.randrange(2, 90)} thousand rows.",
        f"Open questions: whether to move {service} to {rng.choice(_TOOLS)}, and who takes"
        f" over from {rng.choice(_PEOPLE)} in week {rng.randrange(1, 52)}.",
    ]
    rng.shuffle(paragraphs)
    return f"doc://{service}/{kind.replace(' ', '-')}-{i}", title, "\n\n".join(paragraphs * 2)


class _BlendEmbedder:
    """Vectors of the model's space without a model call a text: two vectors of a pool the
    model embedded, blended by the text's hash, with noise. Named as the model, so reads with
    the model find them."""

    def __init__(self, model: Embedder, pool: list[np.ndarray]):
        self.name, self.dim, self.default_floor = model.name, model.dim, model.default_floor
        self._pool = np.stack(pool)
        self._model = model

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            rng = np.random.default_rng(seed)
            a, b = rng.choice(len(self._pool), size=2, replace=False)
            w = rng.uniform(0.55, 0.8)
            v = w * self._pool[a] + (1 - w) * self._pool[b] + rng.normal(0, 0.02, self.dim)
            out.append((v / np.linalg.norm(v)).astype(np.float32))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._model.embed_query(text)


class _EmbedPerLeg:
    """The model as it served a pack before concurrent asks for one query shared a call: two
    instances, each ask on the next, so the two legs' asks are two model calls at once."""

    def __init__(self, model: Embedder):
        self.name, self.dim, self.default_floor = model.name, model.dim, model.default_floor
        self._slots = [BatchingEmbedder(LocalEmbedder, slots=1) for _ in range(2)]
        self._turn = itertools.count()

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self._slots[0].embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._slots[next(self._turn) % 2].embed_query(text)


def _load(db: BenchDb, embedder: Embedder, quick: bool) -> None:
    mode = "quick" if quick else "full"
    n_mem, n_docs = SIZES[mode]
    rng = random.Random(5)
    caller = local_caller(ORG)
    facts = [_fact(rng, i) for i in range(n_mem)]
    start = time.perf_counter()
    pool = embedder.embed_documents([text for _, text in facts[: POOL[mode]]])
    say(f"context pack: {len(pool)} pool facts embedded in {time.perf_counter() - start:.1f} s")
    blend = db.deps_for(_BlendEmbedder(embedder, pool))
    start = time.perf_counter()
    for i in range(0, n_mem, 500):
        entries = [{"key": k, "value": v} for k, v in facts[i : i + 500]]
        body = {"namespace": NS, "agent": AGENT, "entries": entries}
        call("memory.bulk_set", body, caller, blend)
    say(f"context pack: {n_mem:,} memories written in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    for i in range(n_docs):
        uri, title, text = _document(rng, i)
        body = {"namespace": NS, "uri": uri, "title": title, "text": text}
        call("knowledge.publish", body, caller, blend)
    say(f"context pack: {n_docs:,} documents published in {time.perf_counter() - start:.1f} s")
    deps = db.deps_for(embedder)
    call("conversation.set_logging", {"namespace": NS, "enabled": True}, caller, deps)
    sections = {
        "goal": "Ship the billing release train with the ledger migration behind a flag.",
        "status": "Smoke tests pass on staging; the checkout rollback drill is next.",
        "decisions": ["Deploy on Tuesdays only", "Keep Kafka for notifications"],
        "next_steps": ["Run the rollback drill", "Ask Priya to approve the refund rule"],
        "open_questions": ["Who covers the on-call rota in week 32?"],
    }
    body = {"namespace": NS, "agent": AGENT, "brief_key": BRIEF, "sections": sections}
    call("session.brief_save", body, caller, deps)
    for i in range(TURNS):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"Turn {i}: " + _fact(rng, n_mem + i)[1]
        body = {"namespace": NS, "agent": AGENT, "thread_id": THREAD, "msg_id": f"m{i}"}
        call("conversation.append", body | {"role": role, "content": text}, caller, deps)
    with deps.pool.connection() as conn:
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")  # settle the load
        conn.autocommit = False


def run(db: BenchDb, quick: bool) -> list[Figure]:
    mode = "quick" if quick else "full"
    embedder = build_embedder(Settings())  # the local e5 model: each query's embedding is real
    _load(db, embedder, quick)
    deps = db.deps_for(embedder)
    caller = local_caller(ORG)
    base = {"namespace": NS, "agent": AGENT}
    current = {"query": _QUERIES[0]}

    per_leg = db.deps_for(_EmbedPerLeg(embedder))

    def pack(through: Deps = deps) -> None:
        body = base | {"query": current["query"], "brief_key": BRIEF, "thread_id": THREAD}
        out = call("context.pack", body | {"recent_turns": TURNS}, caller, through).body
        assert {s["name"] for s in out["sections"]} >= {"memories", "knowledge", "brief"}, out

    def memories() -> None:
        body = base | {"query": current["query"], "top_k": 20, "quality_filter": True}
        call("memory.search", body, caller, deps)

    def knowledge() -> None:
        served_chunks(deps, caller, ORG, NS, AGENT, current["query"], 10)

    def brief() -> None:
        body = base | {"user_id": "-", "session_id": "-", "brief_key": BRIEF}
        assert call("session.brief_get", body, caller, deps).body["found"]

    def recent() -> None:
        body = base | {"thread_id": THREAD, "include_messages": True, "limit": TURNS}
        got = call("conversation.get", body | {"order": "desc"}, caller, deps).body
        assert len(got["messages"]) == TURNS, got

    def embed() -> None:  # what memory.search and the knowledge leg each begin with
        deps.embedder.embed_query(current["query"])

    runs: dict[str, Callable[[], None]] = {
        "context.pack": pack,
        "memory.search": memories,
        "served_chunks": knowledge,
        "session.brief_get": brief,
        "conversation.get": recent,
        "embed_query": embed,
        "pack, embed per leg": lambda: pack(per_leg),
    }
    for fn in runs.values():  # warm: the model, the pool's connections, the caches
        fn()
    times: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, float] = dict.fromkeys(runs, 0.0)  # this process's CPU seconds, every thread
    calls = CALLS[mode]
    say(f"context pack: {calls} calls of the pack and of each leg alone, interleaved ...")
    names = list(runs)
    for i in range(calls):
        current["query"] = _QUERIES[i % len(_QUERIES)]
        # Each call's order rotates: no one read always finds the others' pages cached.
        for name in names[i % len(names) :] + names[: i % len(names)]:
            before = time.process_time()
            times[name] += timed(runs[name], 1)
            cpu[name] += time.process_time() - before
    ms = {name: (statistics.median(t) * 1e3, p95(t) * 1e3) for name, t in times.items()}
    for name, (p50, p95_ms) in ms.items():
        mean_cpu = cpu[name] / calls * 1e3
        say(f"context pack: {name:19} p50 {p50:6.1f} ms, p95 {p95_ms:6.1f}, cpu {mean_cpu:5.1f}")
    legs = {name: ms[name] for name in LEGS}
    slowest = max(legs, key=lambda n: legs[n][1])
    n_mem, n_docs = SIZES[mode]
    figures = [
        Figure(
            f"context.pack p95 ({n_mem:,} mem, {n_docs:,} docs)",
            ms["context.pack"][1],
            "ms",
            f"slowest leg p95 ({slowest})",
            legs[slowest][1],
            "<= 1.3x",
        ),
        Figure(
            "context.pack p50",
            ms["context.pack"][0],
            "ms",
            "slowest leg p50",
            max(v[0] for v in legs.values()),
            "",
        ),
    ]
    figures += [
        Figure(f"  leg alone p95: {name}", p95_ms, "ms", "context.pack p95",
               ms["context.pack"][1], "")
        for name, (_, p95_ms) in legs.items()
    ]  # fmt: skip
    figures += [
        Figure("  the query's embedding alone p95", ms["embed_query"][1], "ms",
               "context.pack p95", ms["context.pack"][1], ""),
        Figure("  pack p50, query embedded per leg", ms["pack, embed per leg"][0], "ms",
               "context.pack p50", ms["context.pack"][0], ""),
        Figure("  pack p95, query embedded per leg", ms["pack, embed per leg"][1], "ms",
               "context.pack p95", ms["context.pack"][1], ""),
    ]  # fmt: skip
    return figures
