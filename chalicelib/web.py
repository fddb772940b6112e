"""HTTP glue shared by the Chalice routes: parse, resolve the caller, call, shape the answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalicelib.auth import resolve_caller
from chalicelib.deps import Deps
from chalicelib.errors import LoomError
from chalicelib.observability import logger
from chalicelib.registry import call, parse_body

Answer = tuple[int, dict[str, Any] | None, dict[str, str]]
IGNORED_HEADER = "X-Loom-Ignored-Args"


def handle_op(
    name: str, raw_body: bytes | str | None, headers: Mapping[str, str], deps: Deps
) -> Answer:
    """POST /v1/<op>: a JSON answer, or the JSON error body with the error's status."""
    try:
        caller = resolve_caller(headers, deps)
        result = call(name, parse_body(raw_body), caller, deps)
    except LoomError as exc:
        return exc.status, exc.to_body(), {}
    except Exception:
        logger.exception("unhandled error", extra={"op": name})
        body = {"error": {"code": "internal", "message": "internal error; see the server log"}}
        return 500, body, {}
    extra = {IGNORED_HEADER: ",".join(result.ignored)} if result.ignored else {}
    return 200, result.body, extra


def health(deps: Deps) -> Answer:
    """GET /healthz: 200 once the database is migrated and the API can serve."""
    from chalicelib.store.migrate import is_migrated

    try:
        with deps.pool.connection() as conn:
            ready = is_migrated(conn)
    except Exception as exc:
        logger.warning("health check failed", extra={"error": str(exc)})
        ready = False
    if ready:
        return 200, {"status": "ok"}, {}
    return 503, {"error": {"code": "unavailable", "message": "database not ready"}}, {}


def handle_mcp(
    raw_body: bytes | str | None,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    deps: Deps,
) -> Answer:
    """POST /mcp: one JSON-RPC message, answered as JSON (no server-sent events)."""
    from chalicelib import mcp

    try:
        caller = resolve_caller(headers, deps)
        return mcp.handle(raw_body, query, headers, caller, deps)
    except LoomError as exc:
        return exc.status, exc.to_body(), {}
    except Exception:
        logger.exception("unhandled MCP error")
        body = {"error": {"code": "internal", "message": "internal error; see the server log"}}
        return 500, body, {}
