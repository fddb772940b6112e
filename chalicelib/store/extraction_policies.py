"""Operator extraction policies: the org's own (namespace '') and namespaces' additions."""

from __future__ import annotations

from psycopg import Connection

ORG_SCOPE = ""


def set_policy(conn: Connection, org: str, namespace: str, policy: str) -> None:
    conn.execute(
        "INSERT INTO loom.extraction_policies (org, namespace, policy) VALUES (%s, %s, %s)"
        " ON CONFLICT (org, namespace) DO UPDATE SET policy = EXCLUDED.policy,"
        " updated_at = now()",
        (org, namespace, policy),
    )


def clear_policy(conn: Connection, org: str, namespace: str) -> bool:
    return bool(
        conn.execute(
            "DELETE FROM loom.extraction_policies WHERE org = %s AND namespace = %s",
            (org, namespace),
        ).rowcount
    )


def namespace_policy_count(conn: Connection, org: str) -> int:
    """How many namespace policies the org holds, counted under a lock on the org's policies
    held to the end of the transaction: two sets at once count one after the other, so the
    cap holds."""
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 3))", (f"extraction_policy\x1f{org}",)
    )
    row = conn.execute(
        "SELECT count(*) FROM loom.extraction_policies WHERE org = %s AND namespace <> ''",
        (org,),
    ).fetchone()
    return int(row[0]) if row else 0


def all_policies(conn: Connection) -> dict[tuple[str, str], str]:
    """Every org's policies: what each server holds and refreshes."""
    rows = conn.execute("SELECT org, namespace, policy FROM loom.extraction_policies").fetchall()
    return {(r[0], r[1]): r[2] for r in rows}
