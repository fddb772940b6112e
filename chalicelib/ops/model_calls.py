"""The org's model-calls switch: an org admin turns every model call of the org off and on."""

from __future__ import annotations

from chalicelib.auth import Caller
from chalicelib.errors import ForbiddenError
from chalicelib.ops.common import Name, OpInput, OpOutput
from chalicelib.providers.queue import send_committed
from chalicelib.registry import OpContext, op
from chalicelib.store import extraction_queue, model_calls


class SwitchInput(OpInput):
    org: Name
    enabled: bool


class GetInput(OpInput):
    org: Name


class SwitchOutput(OpOutput):
    org: str
    enabled: bool
    changed: bool = False
    released: int = 0


def _whole_org(caller: Caller) -> None:
    if caller.namespace is not None:
        raise ForbiddenError(
            f"this token is bound to namespace {caller.namespace!r}; the org's model calls need"
            " a token of the whole org"
        )


@op("model_calls.set", role="org_admin", kind="idempotent", audited=True, mcp="unlisted")
def model_calls_set(inp: SwitchInput, ctx: OpContext) -> SwitchOutput:
    """Switch every model call of the org off (enabled: false) or back on; switched on, the
    deferred requests held meanwhile go back to pending and run."""
    _whole_org(ctx.caller)
    released: list[str] = []
    with ctx.deps.pool.connection() as conn:
        changed = model_calls.switch(conn, inp.org, on=inp.enabled)
        if inp.enabled:
            released = extraction_queue.release_held(
                conn, model_calls.REASON, org=inp.org, still_held=frozenset()
            )
    ctx.deps.policies.invalidate()
    for queue_id in released:
        send_committed(ctx.deps.queue, queue_id)
    return SwitchOutput(org=inp.org, enabled=inp.enabled, changed=changed, released=len(released))


@op("model_calls.get", role="org_admin", kind="read", mcp="unlisted")
def model_calls_get(inp: GetInput, ctx: OpContext) -> SwitchOutput:
    """Whether the org's model calls are on, as stored (every server reads it within
    LOOM_MODEL_CALLS_POLICY_REFRESH_SECONDS)."""
    _whole_org(ctx.caller)
    with ctx.deps.pool.connection() as conn:
        off = inp.org in model_calls.orgs_off(conn)
    return SwitchOutput(org=inp.org, enabled=not off)
