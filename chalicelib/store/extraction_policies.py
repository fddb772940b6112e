"""Operator extraction policies (the org's and a namespace's)."""

from __future__ import annotations

from psycopg import Connection


def effective_policy(conn: Connection, org: str, namespace: str) -> str | None:
    """The policy text a namespace's model calls run under, if any. Policies are set with
    extraction_policy.set, which arrives with the extraction plane; until then none is set."""
    return None
