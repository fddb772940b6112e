"""HTTP glue shared by the Chalice routes: parse, resolve the caller, call, shape the answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from chalicelib.auth import resolve_caller
from chalicelib.deps import Deps
from chalicelib.errors import LoomError
from chalicelib.observability import logger
from chalicelib.registry import as_unavailable, call, parse_body

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
    except Exception as exc:
        unavailable = as_unavailable(exc)  # the token lookup runs before the op
        if unavailable is not None:
            return unavailable.status, unavailable.to_body(), {}
        logger.exception("unhandled error", extra={"op": name})
        body = {"error": {"code": "internal", "message": "internal error; see the server log"}}
        return 500, body, {}
    extra = {IGNORED_HEADER: ignored_header(result.ignored)} if result.ignored else {}
    return 200, result.body, extra


def ignored_header(names: list[str]) -> str:
    """The ignored field names as a header value: each percent-encoded, so a name with a line
    break, a comma or a character outside ASCII can neither break the response nor add a header
    (the body's `ignored_args` keeps them as sent)."""
    return ",".join(quote(name, safe="") for name in names)


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
    except Exception as exc:
        unavailable = as_unavailable(exc)
        if unavailable is not None:
            return unavailable.status, unavailable.to_body(), {}
        logger.exception("unhandled MCP error")
        body = {"error": {"code": "internal", "message": "internal error; see the server log"}}
        return 500, body, {}
