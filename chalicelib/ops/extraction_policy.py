"""Operator extraction policies: what extraction never stores, for an org or one namespace."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import StringConstraints

from chalicelib.auth import Caller
from chalicelib.errors import BadRequestError, ConflictError, ForbiddenError
from chalicelib.names import ME
from chalicelib.ops.common import Name, OpInput, OpOutput
from chalicelib.registry import OpContext, op
from chalicelib.store import extraction_policies as store

MAX_POLICY_CHARS = 4096


class ScopeInput(OpInput):
    org: Name
    scope: Literal["org", "namespace"]
    namespace: Annotated[str, StringConstraints(max_length=256)] = ""

    def target(self, caller: Caller) -> str:
        """The namespace column of the scope ('' for the org's own policy); a token bound to a
        namespace reaches that namespace's policy only."""
        bound = caller.namespace
        if self.scope == "org":
            if bound is not None:
                raise ForbiddenError(
                    f"this token is bound to namespace {bound!r}; the org's policy needs a token"
                    " of the whole org"
                )
            return store.ORG_SCOPE  # an MCP session fills namespace in; it is ignored here
        if not self.namespace:
            raise BadRequestError("scope namespace needs namespace")
        if self.namespace == ME:
            raise BadRequestError('"@me" is not a scope: name the personal collection')
        if bound is not None and self.namespace != bound:
            raise ForbiddenError(f"this token is bound to namespace {bound!r}")
        return self.namespace


class SetInput(ScopeInput):
    policy: Annotated[str, StringConstraints(min_length=1, max_length=MAX_POLICY_CHARS)]


class PolicyOutput(OpOutput):
    scope: str
    namespace: str
    policy: str
    effective: str
    namespace_policies: list[str] = []


@op("extraction_policy.set", role="org_admin", kind="idempotent", audited=True, mcp="unlisted")
def policy_set(inp: SetInput, ctx: OpContext) -> PolicyOutput:
    """Set the org's policy or a namespace's addition to it."""
    target = inp.target(ctx.caller)
    cap = ctx.live().extraction_policy_max_namespaces
    with ctx.deps.pool.connection() as conn:
        policies = store.all_policies(conn)
        new_namespace = target and (inp.org, target) not in policies
        if new_namespace:
            held = store.namespace_policy_count(conn, inp.org)
            ctx.deps.hooks.at("extraction_policy.counted", org=inp.org)
            if held >= cap:
                raise ConflictError(
                    f"org {inp.org!r} holds {cap} namespace policies already"
                    " (LOOM_EXTRACTION_POLICY_MAX_NAMESPACES); clear one first"
                )
        store.set_policy(conn, inp.org, target, inp.policy)
    ctx.deps.policies.invalidate()
    return _describe(inp, ctx)


class GetInput(ScopeInput):
    pass


@op("extraction_policy.get", role="org_admin", kind="read", mcp="unlisted")
def policy_get(inp: GetInput, ctx: OpContext) -> PolicyOutput:
    """A scope's policy and the effective text its extractions run under."""
    return _describe(inp, ctx)


class ClearOutput(OpOutput):
    scope: str
    namespace: str
    cleared: bool


@op("extraction_policy.clear", role="org_admin", kind="idempotent", audited=True, mcp="unlisted")
def policy_clear(inp: GetInput, ctx: OpContext) -> ClearOutput:
    """Remove one scope's policy (clearing a namespace's leaves the org's in force)."""
    target = inp.target(ctx.caller)
    with ctx.deps.pool.connection() as conn:
        cleared = store.clear_policy(conn, inp.org, target)
    if cleared:
        ctx.deps.policies.invalidate()
    return ClearOutput(scope=inp.scope, namespace=target, cleared=cleared)


def _describe(inp: ScopeInput, ctx: OpContext) -> PolicyOutput:
    target = inp.target(ctx.caller)
    with ctx.deps.pool.connection() as conn:
        policies = store.all_policies(conn)
    own = policies.get((inp.org, target), "")
    parts = [p for p in (policies.get((inp.org, "")), policies.get((inp.org, target))) if p]
    effective = "\n\n".join(dict.fromkeys(parts))
    listed = sorted(ns for (org, ns) in policies if org == inp.org and ns) if not target else []
    return PolicyOutput(
        scope=inp.scope,
        namespace=target,
        policy=own,
        effective=effective,
        namespace_policies=listed,
    )
