"""The audit trail: one hash-only row per audited call."""

from __future__ import annotations

from psycopg import Connection


def write_audit(
    conn: Connection, *, org: str, namespace: str, op: str, principal: str, body_sha256: str
) -> None:
    conn.execute(
        "INSERT INTO loom.audit_log (org, namespace, op, principal, body_sha256)"
        " VALUES (%s, %s, %s, %s, %s)",
        (org, namespace, op, principal, body_sha256),
    )
