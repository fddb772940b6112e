"""The observe_extract worker (off by default): distils crystallized sessions' observations
through the extraction pipeline, as a trajectory replay (a coding capture), one user's
observations of a session at a time, written under that user."""

from __future__ import annotations

import hashlib

from chalicelib.auth import Caller
from chalicelib.deps import Deps
from chalicelib.errors import UnavailableError
from chalicelib.extraction.pipeline import OBSERVE_REPLAY
from chalicelib.observability import logger
from chalicelib.store import erasure_jobs
from chalicelib.store import observations as store
from chalicelib.store.pool import database_clock

CLAIM_SECONDS = 600
RETRY_SECONDS = 1800  # a session whose distillation failed waits this long, others go first
MAX_TURNS = 400  # a call's messages: a longer session is distilled in parts, oldest first


def _turn(o: dict) -> dict:
    parts = [f"{o['tool'] or 'tool'}: {o['action']}"]
    if o["input"]:
        parts.append(f"input: {o['input'][:4000]}")
    if o["output"]:
        parts.append(f"output: {o['output'][:4000]}")
    if o["files"]:
        parts.append("files: " + ", ".join(o["files"]))
    return {"role": "tool", "content": "\n".join(parts), "timestamp": o["ts"].isoformat()}


def distil_sessions(deps: Deps) -> dict[str, int]:
    live = deps.live()
    counts = {"distilled": 0, "waiting": 0, "failed": 0}
    if not live.observe_extract_enabled:
        return counts
    from chalicelib.registry import call

    try:  # an org whose model calls are off: its sessions wait unclaimed, taking no slot
        off = deps.orgs_with_calls_off()
    except UnavailableError:
        off = frozenset()  # unread: each session claimed waits below, none distilled unread
    with deps.pool.connection() as conn:
        claimed = store.claim_ready_sessions(
            conn, live.observe_extract_max_sessions_per_pass, CLAIM_SECONDS, off
        )
    deps.hooks.at("observe.claimed", rows=claimed)
    sessions = {(r["org"], r["namespace"], r["session_id"], r["user_id"]): r for r in claimed}
    for (org, namespace, session_id, user_id), r in sessions.items():
        with deps.pool.connection() as conn:
            began = database_clock(conn)
            observations = store.session_observations(
                conn, org, namespace, session_id, user_id, r["claim"]
            )
            deps.hooks.at("observe.read", org=org, session_id=session_id)
        read: list[int] = []
        failed = False
        try:
            for start in range(0, len(observations), MAX_TURNS):
                part = observations[start : start + MAX_TURNS]
                ids = [o["id"] for o in part]
                body = {
                    "org": org,
                    "namespace": namespace,
                    "agent": r["agent"],
                    "user_id": user_id,
                    "session_id": session_id,
                    "messages": [_turn(o) for o in part],
                    "extra_tags": [OBSERVE_REPLAY],
                    "defer": False,
                    # The same observations replayed (after a pass died) reuse their evidence.
                    "request_id": _replay_id(session_id, ids),
                }
                call("memory.set_from_messages", body, Caller(org=org, role="writer"), deps)
                read += ids
            counts["distilled"] += 1
        except UnavailableError:
            counts["waiting"] += 1  # policies unreadable: distil later, never without them
        except Exception as exc:
            counts["failed"] += 1
            failed = True
            logger.warning("observe distillation failed", extra={"error": str(exc)})
        with deps.pool.connection() as conn:
            store.finish_session(
                conn,
                org,
                namespace,
                session_id,
                user_id,
                read,
                r["claim"],
                RETRY_SECONDS if failed else 0,
            )
            # An erasure of this user that finished after the observations were read (before
            # the handler's own check began) ran before the replay wrote: it runs again, so
            # nothing it erased comes back.
            if observations:
                erasure_jobs.erase_again(
                    conn, org=org, namespace=namespace, user_id=user_id, since=began
                )
    return counts


def _replay_id(session_id: str, ids: list[int]) -> str:
    digest = hashlib.sha256(f"{session_id}:{ids}".encode()).hexdigest()[:40]
    return f"observe:{digest}"
