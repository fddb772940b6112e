"""Whether a namespace records its transcript: conversation.set_logging and get_logging."""

from __future__ import annotations

from chalicelib.ops.common import OpOutput, OrgScoped
from chalicelib.registry import OpContext, op
from chalicelib.store.namespaces import conversation_logging_enabled, set_conversation_logging
from chalicelib.store.pool import autocommit_connection


class SetLoggingInput(OrgScoped):
    enabled: bool


class SetLoggingOutput(OpOutput):
    namespace: str
    enabled: bool


@op(
    "conversation.set_logging",
    role="admin",
    kind="idempotent",
    audited=True,
    mcp="unlisted",
)
def set_logging(inp: SetLoggingInput, ctx: OpContext) -> SetLoggingOutput:
    """Switch transcript recording for one namespace (off until an admin turns it on)."""
    with ctx.deps.pool.connection() as conn:
        enabled = set_conversation_logging(conn, inp.org, inp.namespace, inp.enabled)
    return SetLoggingOutput(namespace=inp.namespace, enabled=enabled)


class GetLoggingInput(OrgScoped):
    pass


@op("conversation.get_logging", role="viewer", kind="read", mcp="unlisted")
def get_logging(inp: GetLoggingInput, ctx: OpContext) -> SetLoggingOutput:
    """Whether this namespace records transcripts (false for a namespace never switched on)."""
    with autocommit_connection(ctx.deps.pool) as conn:
        enabled = conversation_logging_enabled(conn, inp.org, inp.namespace)
    return SetLoggingOutput(namespace=inp.namespace, enabled=enabled)
