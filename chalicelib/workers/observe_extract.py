"""The observe_extract worker (off by default): distils crystallized sessions' observations
through the extraction pipeline, as a trajectory replay (a coding capture), one user's
observations of a session at a time, written under that user."""

from __future__ import annotations

from chalicelib.auth import Caller
from chalicelib.deps import Deps
from chalicelib.errors import UnavailableError
from chalicelib.extraction.pipeline import OBSERVE_REPLAY
from chalicelib.observability import logger
from chalicelib.store import observations as store

CLAIM_SECONDS = 600
MAX_TURNS = 400


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

    with deps.pool.connection() as conn:
        claimed = store.claim_ready_sessions(
            conn, live.observe_extract_max_sessions_per_pass, CLAIM_SECONDS
        )
    sessions = {(r["org"], r["namespace"], r["session_id"], r["user_id"]): r for r in claimed}
    for (org, namespace, session_id, user_id), r in sessions.items():
        with deps.pool.connection() as conn:
            observations = store.session_observations(conn, org, namespace, session_id, user_id)
        body = {
            "org": org,
            "namespace": namespace,
            "agent": r["agent"],
            "user_id": user_id,
            "session_id": session_id,
            "messages": [_turn(o) for o in observations[-MAX_TURNS:]],
            "extra_tags": [OBSERVE_REPLAY],
            "defer": False,
        }
        distilled = False
        try:
            if body["messages"]:
                call("memory.set_from_messages", body, Caller(org=org, role="writer"), deps)
            distilled = True
            counts["distilled"] += 1
        except UnavailableError:
            counts["waiting"] += 1  # policies unreadable: distil later, never without them
        except Exception as exc:
            counts["failed"] += 1
            logger.warning("observe distillation failed", extra={"error": str(exc)})
        read = [o["id"] for o in observations] if distilled else []
        with deps.pool.connection() as conn:
            store.finish_session(conn, org, namespace, session_id, user_id, read)
    return counts
