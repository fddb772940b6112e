"""The op registry: `@op` declares an op beside its handler; `call` runs one for HTTP and MCP."""

from __future__ import annotations

import hashlib
import inspect
import json
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from chalicelib.auth import Caller, ReadScope, Role, role_allows
from chalicelib.errors import (
    BadRequestError,
    ForbiddenError,
    LoomError,
    UnavailableError,
    UnknownOpError,
    ValidationFailedError,
)
from chalicelib.names import ME, personal_namespace
from chalicelib.observability import logger
from chalicelib.storable import unstorable

if TYPE_CHECKING:
    from chalicelib.config import Settings
    from chalicelib.deps import Deps

OpKind = Literal["read", "write", "idempotent"]
# core: the default listing (and ?toolset=all); all: ?toolset=all only; unlisted: in neither,
# callable through loom_op; hidden: not callable over MCP at all.
McpListing = Literal["core", "all", "unlisted", "hidden"]


@dataclass(frozen=True)
class OpContext:
    """What a handler runs with: who is calling, and the wired dependencies."""

    caller: Caller
    deps: Deps

    def live(self) -> Settings:
        return self.deps.live()


@dataclass(frozen=True)
class OpSpec:
    name: str
    fn: Callable[[Any, OpContext], BaseModel]
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    role: Role
    kind: OpKind
    audited: bool
    mcp: McpListing
    scopes: frozenset[ReadScope]  # read scopes whose tokens may call it


@dataclass
class CallResult:
    body: dict[str, Any]
    ignored: list[str] = field(default_factory=list)


_OPS: dict[str, OpSpec] = {}


def op(
    name: str,
    *,
    role: Role,
    kind: OpKind,
    audited: bool = False,
    mcp: McpListing = "all",
    scopes: tuple[ReadScope, ...] = ("namespace",),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `fn(inp: InputModel, ctx: OpContext) -> OutputModel` as op `name`."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        hints = typing.get_type_hints(fn)
        first = next(iter(inspect.signature(fn).parameters))
        _OPS[name] = OpSpec(
            name=name,
            fn=fn,
            input_model=hints[first],
            output_model=hints["return"],
            role=role,
            kind=kind,
            audited=audited,
            mcp=mcp,
            scopes=frozenset(scopes),
        )
        return fn

    return register


def output_schema(spec: OpSpec, ref_template: str = "#/$defs/{model}") -> dict[str, Any]:
    """The JSON schema of an op's answer, `ignored_args` included (every answer carries it)."""
    schema = spec.output_model.model_json_schema(ref_template=ref_template)
    schema.setdefault("properties", {})["ignored_args"] = {
        "type": "array",
        "items": {"type": "string"},
    }
    return schema


def op_description(spec: OpSpec) -> str:
    """The op's docstring as its callers read it (MCP's tool description, OpenAPI's): limits
    such as a request's model-call ceiling are stated there."""
    return inspect.cleandoc(spec.fn.__doc__ or spec.name)


def registered() -> dict[str, OpSpec]:
    """Every op registered so far: an entrypoint imports `chalicelib.ops` (whose plane modules
    declare them) before it serves one; the registry never imports the ops itself."""
    if not _OPS:
        raise RuntimeError("no op is registered: import chalicelib.ops before calling one")
    return _OPS


def parse_body(raw: bytes | str | None) -> dict[str, Any]:
    """A JSON object from a request body; anything else is a 400."""
    if raw is None or (isinstance(raw, bytes | str) and not raw.strip()):
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequestError(f"body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise BadRequestError("body is nested too deeply") from exc
    if not isinstance(body, dict):
        raise BadRequestError("body must be a JSON object")
    return body


BOUNDED_NEEDS_USER = "a token bounded to one user needs user_id"


def _fill_identity(spec: OpSpec, body: dict[str, Any], caller: Caller) -> None:
    """Fill identity fields from the caller and refuse any that reach outside it."""
    fields = spec.input_model.model_fields
    if "namespace" in fields:  # an op without one reads none: a namespace sent is unknown
        _fill_personal_namespace(body, caller, "user_id" in fields)
    if "org" in fields:
        if body.get("org") in (None, ""):
            body["org"] = caller.org
        elif body["org"] != caller.org and not caller.any_org:
            raise ForbiddenError(f"this token belongs to org {caller.org!r}")
    if "namespace" in fields and caller.namespace is not None:
        if body.get("namespace") in (None, ""):
            body["namespace"] = caller.namespace
        elif body["namespace"] != caller.namespace:
            raise ForbiddenError(f"this token is bound to namespace {caller.namespace!r}")
    if caller.read_user_id is not None and "user_id" in fields:
        if body.get("user_id") in (None, ""):
            body["user_id"] = caller.read_user_id
        elif body["user_id"] != caller.read_user_id:
            raise ForbiddenError("this token acts for one user only; user_id names another")
    elif caller.bounded and "user_id" in fields and body.get("user_id") in (None, "", "-", "*"):
        # A token bounded to one user, with none pinned, names the one it acts for: the
        # namespace's shared rows ("-") or every user ("*") are not one user.
        raise BadRequestError(BOUNDED_NEEDS_USER)


def _fill_personal_namespace(body: dict[str, Any], caller: Caller, takes_user: bool) -> None:
    """ "@me" as the user's personal collection; another user's is refused to a pinned token."""
    if body.get("namespace") == ME:
        user = caller.read_user_id or (body.get("user_id") if takes_user else None)
        if not isinstance(user, str) or user in ("", "-"):
            raise BadRequestError('namespace "@me" needs a user: a user-pinned token or user_id')
        body["namespace"] = personal_namespace(user)
    if _names_another_users_collection(body.get("namespace"), caller.read_user_id):
        raise ForbiddenError(
            "this token acts for one user only; the namespace is another user's personal"
            ' collection ("@me" names its own)'
        )


def _names_another_users_collection(namespace: Any, pinned: str | None) -> bool:
    """Whether a token pinned to one user names another user's personal collection."""
    if pinned is None or not isinstance(namespace, str) or not namespace.startswith(ME + ":"):
        return False
    return namespace != personal_namespace(pinned)


def _check_access(spec: OpSpec, caller: Caller) -> None:
    if not role_allows(caller.role, spec.role):
        raise ForbiddenError(f"{spec.name} needs role {spec.role}; this token is {caller.role}")
    if caller.read_scope not in spec.scopes:
        raise ForbiddenError(
            f"{spec.name} is refused under a token bounded to {caller.read_scope}"
            " (its rows have no axis that bounds them)"
        )


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:10]:
        where = ".".join(str(p) for p in err["loc"]) or "body"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def validated(op: str, body: dict[str, Any]) -> BaseModel:
    """An op's input as the op would read `body`, or the ValidationFailedError it would answer
    (for a caller that writes what the op writes, without the op)."""
    return _validate(registered()[op], body)[0]


def _validate(spec: OpSpec, body: dict[str, Any]) -> tuple[BaseModel, list[str]]:
    why = unstorable(body)
    if why is not None:
        raise ValidationFailedError(why)
    known = spec.input_model.model_fields
    ignored = sorted(k for k in body if k not in known)
    clean = {k: v for k, v in body.items() if k in known}
    try:
        return spec.input_model.model_validate(clean), ignored
    except ValidationError as exc:
        raise ValidationFailedError(_validation_message(exc)) from exc


def _audit(spec: OpSpec, inp: BaseModel, caller: Caller, deps: Deps) -> None:
    from chalicelib.store.audit import write_audit

    digest = hashlib.sha256(inp.model_dump_json().encode()).hexdigest()
    with deps.pool.connection() as conn:
        write_audit(
            conn,
            org=caller.org,
            namespace=str(getattr(inp, "namespace", "")),
            op=spec.name,
            principal=caller.principal or "local",
            body_sha256=digest,
        )


def as_unavailable(exc: BaseException) -> UnavailableError | None:
    """The 503 a database outage answers (retry and it succeeds once the database is back)."""
    from chalicelib.store.pool import database_unavailable

    if not database_unavailable(exc):
        return None
    logger.warning("database unavailable", extra={"error": str(exc)[:300]})
    return UnavailableError("the database is unavailable; try again shortly")


def _loggable(value: Any) -> Any:
    """A value as the log line can carry it: text that is no valid UTF-8 (a lone surrogate)
    or that is no text is written as its repr."""
    if value is None or (isinstance(value, str) and unstorable(value) is None):
        return value
    return repr(value)[:300]


def as_refused_value(exc: BaseException) -> ValidationFailedError | None:
    """The 422 a value the database cannot hold answers (its transaction rolled back, so
    nothing of the request is stored): a timestamp past its range, an index entry or a
    tsvector past its size."""
    from chalicelib.store.pool import database_refused_value

    said = database_refused_value(exc)
    if said is None:
        return None
    logger.warning("database refused a value", extra={"error": said})
    return ValidationFailedError(f"the database cannot hold a value of this request: {said}")


def call(name: str, body: dict[str, Any], caller: Caller, deps: Deps) -> CallResult:
    """Run op `name` for `caller`: access, identity, validation, handler, audit, one log line."""
    started = time.perf_counter()
    status, namespace = 200, body.get("namespace") if isinstance(body, dict) else None
    try:
        spec = registered().get(name)
        if spec is None:
            raise UnknownOpError(f"no op named {name!r}; POST /v1/<op> with a registered op")
        _check_access(spec, caller)
        body = dict(body)
        _fill_identity(spec, body, caller)
        namespace = body.get("namespace")
        inp, ignored = _validate(spec, body)
        out = spec.fn(inp, OpContext(caller=caller, deps=deps))
        if spec.audited:
            _audit(spec, inp, caller, deps)
        result = out.model_dump(mode="json")
        ignored = sorted(set(ignored) | set(getattr(out, "_not_applied", None) or []))
        result["ignored_args"] = ignored
        return CallResult(result, ignored)
    except LoomError as exc:
        status = exc.status
        raise
    except Exception as exc:
        unavailable = as_unavailable(exc)
        if unavailable is not None:
            status = unavailable.status
            raise unavailable from exc
        refused = as_refused_value(exc)
        if refused is not None:
            status = refused.status
            raise refused from exc
        status = 500  # logged with its traceback by the transport
        raise
    finally:
        logger.info(
            "op",
            extra={
                "op": name,
                "org": caller.org,
                "namespace": _loggable(namespace),
                "status": status,
                "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            },
        )
