"""A mixed load against a running Loom server, and a check that nothing acknowledged was lost
or doubled.

Many tenants (each an org and a namespace with its own tokens) at once: appends, searches,
saved messages and brief saves, from `concurrency` workers for `duration` seconds. A 503 or a
dropped connection is retried with the same body (the ops are idempotent by their ids), so a
write is acknowledged once it answers 200. Afterwards every acknowledged write is read back and
must be there exactly once.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

OPS = ("append", "search", "save", "brief_save")
DEFAULT_MIX = {"append": 5, "search": 3, "save": 1, "brief_save": 1}
RETRIES = 20  # a restart of the database takes a few seconds: keep trying the same body


@dataclass
class Tenant:
    org: str
    namespace: str
    writer: str  # bearer tokens, bound to the namespace
    admin: str
    marker: str  # in every text this tenant writes, and in no other tenant's
    threads: list[str] = field(default_factory=list)


@dataclass
class Acked:
    """What the server acknowledged, to be read back afterwards."""

    turns: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    saved: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # org -> ids
    briefs: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # org -> keys
    sent_turns: dict[tuple[str, str], set[str]] = field(
        default_factory=lambda: defaultdict(set)
    )  # sent but never acknowledged: may be stored, at most once


@dataclass
class Report:
    duration: float
    concurrency: int
    latencies: dict[str, list[float]]
    errors: Counter[str]
    retried: Counter[str]
    lost: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    leaked: list[str] = field(default_factory=list)

    @property
    def completed(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    @property
    def throughput(self) -> float:
        return self.completed / self.duration if self.duration else 0.0

    @property
    def ok(self) -> bool:
        return not (sum(self.errors.values()) or self.lost or self.doubled or self.leaked)

    def percentiles(self, op: str) -> dict[str, float]:
        values = sorted(self.latencies.get(op, []))
        if not values:
            return {"n": 0, "p50": 0.0, "p95": 0.0, "p99": 0.0}

        def pct(p: float) -> float:
            return values[min(len(values) - 1, int(p * len(values)))] * 1000

        return {"n": len(values), "p50": pct(0.50), "p95": pct(0.95), "p99": pct(0.99)}

    def summary(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "duration_s": round(self.duration, 2),
            "requests": self.completed,
            "throughput_rps": round(self.throughput, 1),
            "ops": {op: self.percentiles(op) for op in OPS},
            "errors": dict(self.errors),
            "retried": dict(self.retried),
            "lost": len(self.lost),
            "doubled": len(self.doubled),
            "leaked": len(self.leaked),
        }

    def lines(self) -> list[str]:
        out = [
            f"concurrency {self.concurrency}: {self.completed} requests in {self.duration:.1f}s"
            f" = {self.throughput:.1f}/s; errors {dict(self.errors) or 0};"
            f" retried {dict(self.retried) or 0}; lost {len(self.lost)},"
            f" doubled {len(self.doubled)}, leaked {len(self.leaked)}"
        ]
        for op in OPS:
            p = self.percentiles(op)
            out.append(
                f"  {op:11} n={p['n']:6}  p50 {p['p50']:7.1f} ms  p95 {p['p95']:7.1f} ms"
                f"  p99 {p['p99']:7.1f} ms"
            )
        return out


class Refused(Exception):
    def __init__(self, status: int, body: str):
        super().__init__(f"{status}: {body[:200]}")
        self.status = status


async def call(
    client: httpx2.AsyncClient,
    op: str,
    token: str,
    body: dict[str, Any],
    retried: Counter[str] | None = None,
) -> dict[str, Any]:
    """POST one op; a 503 or a lost connection is tried again with the same body."""
    delay = 0.05
    for attempt in range(RETRIES + 1):
        try:
            resp = await client.post(
                f"/v1/{op}", json=body, headers={"Authorization": f"Bearer {token}"}
            )
        except httpx2.TransportError:
            if attempt == RETRIES:
                raise
            status, text = 0, "connection failed"
        else:
            if resp.status_code == 200:
                return dict(resp.json())
            status, text = resp.status_code, resp.text
            if status != 503:
                raise Refused(status, text)
            error = resp.json().get("error", {})
            if not (isinstance(error, dict) and error.get("code")):
                raise Refused(status, "a 503 without the JSON error shape: " + text)
        if retried is not None:
            retried[f"{op}:{status}"] += 1
        if attempt == RETRIES:
            raise Refused(status, text)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)
    raise AssertionError("unreachable")


async def prepare(
    client: httpx2.AsyncClient, tenants: list[Tenant], threads_per_tenant: int = 3
) -> None:
    """Turn recording on in every tenant's namespace and name its threads. One turn goes first,
    alone: the first embedded turn of a dimension creates its vector index, and concurrent
    first turns race on that (pinned by tests/functional/test_faults.py)."""
    for t in tenants:
        await call(client, "conversation.set_logging", t.admin, {"enabled": True})
        t.threads = [f"thr-{i}" for i in range(threads_per_tenant)]
    first = {"agent": "load", "thread_id": "warm", "role": "user", "content": "first turn"}
    await call(client, "conversation.append", tenants[0].writer, {**first, "msg_id": "warm"})


async def _one(
    client: httpx2.AsyncClient, rng: random.Random, t: Tenant, op: str, acked: Acked, report: Report
) -> None:
    word = rng.choice(["ledger", "invoice", "export", "billing", "migration", "retry"])
    if op == "append":
        thread = rng.choice(t.threads)
        msg_id = uuid.uuid4().hex
        body = {
            "agent": "load",
            "thread_id": thread,
            "msg_id": msg_id,
            "role": rng.choice(["user", "assistant"]),
            "content": f"{t.marker} {word} note {msg_id[:8]}",
            "user_id": "u1",
        }
        acked.sent_turns[(t.org, thread)].add(msg_id)
        await call(client, "conversation.append", t.writer, body, report.retried)
        acked.turns[(t.org, thread)].add(msg_id)
    elif op == "search":
        out = await call(
            client,
            "conversation.search",
            t.writer,
            {"agent": "*", "query": f"{word} note", "top_k": 10},
            report.retried,
        )
        _check_own(out, t, report)
    elif op == "save":
        mid = uuid.uuid4().hex
        body = {
            "agent": "load",
            "conversation_id": f"saved-{rng.randrange(3)}",
            "message_id": mid,
            "role": "user",
            "content": f"{t.marker} saved {word} {mid[:8]}",
            "user_id": "u1",
        }
        await call(client, "conversation.save_message", t.writer, body, report.retried)
        acked.saved[t.org].add(mid)
    else:
        key = f"load/{uuid.uuid4().hex}"
        body = {
            "agent": "load",
            "brief_key": key,
            "sections": {"goal": f"{t.marker} {word}", "next_steps": [f"step {key[-6:]}"]},
        }
        out = await call(client, "session.brief_save", t.writer, body, report.retried)
        if out.get("brief_key") != key or not out.get("revision"):
            raise Refused(200, f"brief_save answered {out}")
        acked.briefs[t.org].add(key)


def _check_own(answer: Any, t: Tenant, report: Report) -> None:
    """Any other tenant's marker in an answer is a leak."""
    text = str(answer)
    for marker in _MARKERS:
        if marker != t.marker and marker in text:
            report.leaked.append(f"{t.org} saw {marker}")


_MARKERS: set[str] = set()


async def run_load(
    base_url: str,
    tenants: list[Tenant],
    *,
    duration: float,
    concurrency: int,
    mix: dict[str, int] | None = None,
    seed: int = 14,
    acked: Acked | None = None,
    during: Callable[[], Any] | None = None,
) -> tuple[Report, Acked]:
    """Run the mix for `duration` seconds; `during` (a coroutine function) runs beside it."""
    mix = mix or DEFAULT_MIX
    acked = acked or Acked()
    _MARKERS.update(t.marker for t in tenants)
    report = Report(duration, concurrency, {op: [] for op in OPS}, Counter(), Counter())
    ops, weights = zip(*mix.items(), strict=True)
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx2.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:
        started = time.monotonic()
        deadline = started + duration

        async def worker(n: int) -> None:
            rng = random.Random(seed * 1000 + n)
            while time.monotonic() < deadline:
                t = rng.choice(tenants)
                op = rng.choices(ops, weights)[0]
                began = time.perf_counter()
                try:
                    await _one(client, rng, t, op, acked, report)
                except Refused as exc:
                    report.errors[f"{op}:{exc.status}"] += 1
                except httpx2.TransportError:
                    report.errors[f"{op}:connection"] += 1
                else:
                    report.latencies[op].append(time.perf_counter() - began)

        tasks = [asyncio.create_task(worker(n)) for n in range(concurrency)]
        if during is not None:
            tasks.append(asyncio.create_task(during()))
        await asyncio.gather(*tasks)
        report.duration = time.monotonic() - started
    return report, acked


async def verify(base_url: str, tenants: list[Tenant], acked: Acked, report: Report) -> None:
    """Read every acknowledged write back: each exactly once, none of another tenant's."""
    by_org = {t.org: t for t in tenants}
    async with httpx2.AsyncClient(base_url=base_url, timeout=60) as client:
        for (org, thread), ids in acked.turns.items():
            t = by_org[org]
            seen: Counter[str] = Counter()
            cursor = None
            while True:
                body: dict[str, Any] = {"agent": "load", "thread_id": thread, "limit": 1000}
                if cursor:
                    body["cursor"] = cursor
                out = await call(client, "conversation.list", t.writer, body)
                seen.update(r["msg_id"] for r in out["rows"])
                _check_own(out, t, report)
                cursor = out.get("next_cursor")
                if not cursor:
                    break
            sent = acked.sent_turns[(org, thread)]
            report.lost += [f"turn {org}/{thread}/{m}" for m in ids if seen[m] == 0]
            report.doubled += [f"turn {org}/{thread}/{m}" for m, n in seen.items() if n > 1]
            report.leaked += [f"turn {org}/{thread}/{m} never sent" for m in seen if m not in sent]
        for org, ids in acked.saved.items():
            t = by_org[org]
            seen = Counter()
            cursor = None
            while True:
                body = {"agent": "load", "user_id": "u1", "limit": 200}
                if cursor:
                    body["cursor"] = cursor
                out = await call(client, "conversation.list_saved_messages", t.writer, body)
                seen.update(r["message_id"] for r in out["rows"])
                _check_own(out, t, report)
                cursor = out.get("next_cursor")
                if not cursor:
                    break
            report.lost += [f"saved {org}/{m}" for m in ids if seen[m] == 0]
            report.doubled += [f"saved {org}/{m}" for m, n in seen.items() if n > 1]
        for org, keys in acked.briefs.items():
            t = by_org[org]
            for key in keys:
                out = await call(
                    client,
                    "session.brief_get",
                    t.writer,
                    {"agent": "load", "brief_key": key, "include_sections": True},
                )
                goal = str((out.get("sections") or {}).get("goal", ""))
                if not out.get("found") or t.marker not in goal:
                    report.lost.append(f"brief {org}/{key}")
                elif out.get("revisions", 1) != 1:
                    report.doubled.append(f"brief {org}/{key}: {out.get('revisions')} revisions")
                _check_own(out, t, report)


def make_tenants(n: int, mint: Callable[[str, str, str], str], prefix: str = "") -> list[Tenant]:
    """`n` tenants, each its own org and namespace; `mint(org, role, namespace)` gives a token."""
    tag = prefix or uuid.uuid4().hex[:6]
    tenants = []
    for i in range(n):
        org, ns = f"load-{tag}-{i}", f"ns-{i % 3}"
        tenants.append(
            Tenant(
                org=org,
                namespace=ns,
                writer=mint(org, "writer", ns),
                admin=mint(org, "admin", ns),
                marker=f"MARK{tag}x{i}Q",
            )
        )
    return tenants
