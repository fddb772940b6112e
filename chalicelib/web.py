"""HTTP glue shared by the Chalice routes: parse, resolve the caller, call, shape the answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from chalicelib.auth import resolve_caller
from chalicelib.deps import Deps
from chalicelib.errors import ForbiddenError, LoomError, PayloadTooLargeError, UnknownOpError
from chalicelib.observability import logger
from chalicelib.registry import as_unavailable, call, parse_body

Answer = tuple[int, dict[str, Any] | None, dict[str, str]]
IGNORED_HEADER = "X-Loom-Ignored-Args"


def handle_op(
    name: str, raw_body: bytes | str | None, headers: Mapping[str, str], deps: Deps
) -> Answer:
    """POST /v1/<op>: a JSON answer, or the JSON error body with the error's status."""
    load_ops()
    try:
        check_body_size(raw_body, deps)
        check_origin(headers, deps, mcp=False)
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


def check_body_size(raw_body: bytes | str | None, deps: Deps) -> None:
    """Refuse a body over LOOM_MAX_REQUEST_BYTES with 413 before it is parsed, as API Gateway
    refuses one over its 10 MB (so `loom serve` refuses what a deployment would)."""
    limit = deps.settings.max_request_bytes
    if isinstance(raw_body, str):
        size = len(raw_body.encode("utf-8", "surrogatepass"))
    else:
        size = len(raw_body or b"")
    if size > limit:
        raise PayloadTooLargeError(
            f"the request body is {size:,} bytes; at most {limit:,} are accepted"
            " (LOOM_MAX_REQUEST_BYTES)"
        )


_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def _header(headers: Mapping[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name), None)


def _hostname(netloc: str) -> str:
    """ "127.0.0.1:7777" -> "127.0.0.1", "[::1]:7777" -> "::1"."""
    try:
        return (urlsplit("//" + netloc).hostname or "").lower()
    except ValueError:
        return ""


def _netloc(origin: str) -> str:
    """An Origin's host and port ("" for "null" or what does not parse)."""
    try:
        return urlsplit(origin).netloc.lower()
    except ValueError:
        return ""


def check_origin(headers: Mapping[str, str], deps: Deps, *, mcp: bool) -> None:
    """Refuse what a web page of another site could send, or a name rebound to this machine.

    With LOOM_AUTH=off no token stands between a browser and the API, so the request must
    name a loopback host and come from no other web origin: a page's Origin must be this
    server's own (host and port), since a page served on another port of this machine is
    another origin. With tokens, a page cannot send one across origins anyway; MCP still asks
    every server to check Origin (403 when foreign).
    """
    host, origin = _header(headers, "host"), _header(headers, "origin")
    if deps.settings.auth == "off":
        foreign_host = host is not None and _hostname(host) not in _LOOPBACK
        foreign_origin = origin is not None and (
            _hostname(_netloc(origin)) not in _LOOPBACK
            or (host is not None and _netloc(origin) != host.lower())
        )
        if foreign_host or foreign_origin:
            raise ForbiddenError(
                "LOOM_AUTH=off serves this machine only: a request must be sent to localhost,"
                " 127.0.0.1 or [::1], and not from a page of another web origin; set"
                " LOOM_AUTH=tokens to serve other hosts"
            )
    elif mcp and origin is not None and host is not None and _netloc(origin) != host.lower():
        raise ForbiddenError(f"/mcp does not answer pages of another web origin ({origin})")


def load_ops() -> None:
    """Register every op: the plane modules are imported on first use, not at start (they are
    slow to import, and a health check or a page needs none)."""
    import chalicelib.ops  # noqa: F401


def wrong_method(name: str) -> Answer:
    """/v1/<op> by any method but POST: 404 for an op that does not exist, else 405."""
    from chalicelib.registry import registered

    load_ops()
    if name not in registered():
        unknown = UnknownOpError(f"no op named {name!r}; POST /v1/<op> with a registered op")
        return unknown.status, unknown.to_body(), {}
    return method_not_allowed("POST", f"{name} is called with POST /v1/{name} and a JSON body")


def method_not_allowed(allow: str, message: str) -> Answer:
    """405 in the contract's error shape, naming the method the path answers."""
    return 405, {"error": {"code": "method_not_allowed", "message": message}}, {"Allow": allow}


def no_op_named() -> Answer:
    """/v1 itself: no op is named."""
    unknown = UnknownOpError("no op named; POST /v1/<op> with a registered op")
    return unknown.status, unknown.to_body(), {}


IGNORED_HEADER_MAX_CHARS = 4096  # far under the 64 KiB line that http.client refuses


def ignored_header(names: list[str]) -> str:
    """The ignored field names as a header value: each percent-encoded, so a name with a line
    break, a comma or a character outside ASCII can neither break the response nor add a header
    (the body's `ignored_args` keeps them as sent). The names that fit in
    IGNORED_HEADER_MAX_CHARS, then "..." when some did not: a header line too long for a
    client to read would lose it the answer to a request that was served."""
    shown: list[str] = []
    used = 0
    for name in names:
        encoded = quote(name, safe="")
        if used + len(encoded) + 1 > IGNORED_HEADER_MAX_CHARS - len(",..."):
            return ",".join([*shown, "..."])
        shown.append(encoded)
        used += len(encoded) + 1
    return ",".join(shown)


def health(deps: Deps) -> Answer:
    """GET /healthz: 200 once the database is migrated and the API can serve."""
    from chalicelib.services.admin import database_ready

    try:
        ready = database_ready(deps)
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

    load_ops()
    try:
        check_body_size(raw_body, deps)
        check_origin(headers, deps, mcp=True)
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
