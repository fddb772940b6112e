"""`loom reextract`: a namespace's stored requests extracted again into a fresh namespace.

Each request is replayed with what its first extraction read beside its turns (its tags, so a
coding capture stays one; its observation date; its earlier turns; the keys and values its
session was served, so echoes are dropped again), inline, and the source is only read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chalicelib.auth import local_caller
from chalicelib.deps import Deps
from chalicelib.errors import LoomError
from chalicelib.registry import call
from chalicelib.store.evidence import requests_of

WRITTEN = ("created", "updated")  # the verdicts that wrote a row; the others left it as it was


@dataclass
class Reextracted:
    """What a re-extraction wrote, by verdict, and the requests that failed."""

    requests: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    pipeline_errors: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (request_id, error)

    def summary(self, org: str, into: str) -> str:
        wrote = sum(self.verdicts[v] for v in WRITTEN)
        line = f"re-extracted {self.requests} requests into {org}/{into}: {wrote} memories written"
        line += _by_verdict({v: n for v, n in self.verdicts.items() if v in WRITTEN})
        kept = {v: n for v, n in self.verdicts.items() if v not in WRITTEN}
        if kept:
            line += f", {sum(kept.values())} not written" + _by_verdict(kept)
        if self.pipeline_errors:
            line += f", {self.pipeline_errors} pipeline errors"
        if self.failed:
            line += f", {len(self.failed)} requests failed"
        return line


def _by_verdict(counts: dict[str, int]) -> str:
    return " (" + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())) + ")" if counts else ""


def replay_body(request: dict[str, Any], org: str, into: str) -> dict[str, Any]:
    """The request as first extracted, sent to `into`, never deferred: its result is read
    here."""
    return {
        **request["context"],
        "org": org,
        "namespace": into,
        "agent": request["agent"],
        "user_id": request["user_id"],
        "session_id": request["session_id"],
        "messages": request["messages"],
        "defer": False,
    }


def reextract_namespace(
    deps: Deps,
    org: str,
    source: str,
    into: str,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> Reextracted:
    """Replay every request stored in `source` into `into`; a request that fails is named
    and the others still run."""
    with deps.pool.connection() as conn:
        requests = requests_of(conn, org, source)
    if not requests:
        raise LoomError(f"{org}/{source} holds no extracted transcripts")
    caller = local_caller(org)
    done = Reextracted(requests=len(requests))
    for n, request in enumerate(requests, start=1):
        try:
            out = call("memory.set_from_messages", replay_body(request, org, into), caller, deps)
        except LoomError as exc:
            done.failed.append((request["request_id"], exc.message))
        else:
            done.verdicts.update(w["conflict_verdict"] for w in out.body["written"])
            done.pipeline_errors += len(out.body["pipeline_errors"])
        progress(n, len(requests))
    return done
