"""System ops: who am I."""

from __future__ import annotations

from chalicelib.ops.common import OpInput, OpOutput
from chalicelib.registry import OpContext, op


class WhoamiInput(OpInput):
    pass


class WhoamiOutput(OpOutput):
    org: str
    role: str
    namespace: str | None
    read_scope: str
    read_user_id: str | None
    auth: str


@op(
    "system.whoami",
    role="viewer",
    kind="read",
    mcp="core",
    scopes=("namespace", "own_user", "own_session"),
)
def whoami(inp: WhoamiInput, ctx: OpContext) -> WhoamiOutput:
    """The identity the server resolved for this caller."""
    c = ctx.caller
    return WhoamiOutput(
        org=c.org,
        role=c.role,
        namespace=c.namespace,
        read_scope=c.read_scope,
        read_user_id=c.read_user_id,
        auth=ctx.deps.settings.auth,
    )
