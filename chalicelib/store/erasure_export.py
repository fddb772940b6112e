"""The paged export of everything held about an erasure subject."""

from __future__ import annotations

from typing import Any

from psycopg import Connection, sql
from psycopg.rows import dict_row

from chalicelib.store.erasure import ErasedTable, Subject, subject_match


def exported_columns(conn: Connection, table: ErasedTable) -> list[str]:
    """Every column but vectors and search indexes (derived, and no one's words)."""
    schema, name = table.name.split(".")
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = %s"
        " AND table_name = %s AND udt_name NOT IN ('vector', 'tsvector')"
        " ORDER BY ordinal_position",
        (schema, name),
    ).fetchall()
    return [r[0] for r in rows]


def export_page(
    conn: Connection,
    table: ErasedTable,
    s: Subject,
    *,
    include_tombstoned: bool,
    after: list[Any] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """Up to `limit` of the subject's rows of `table`, by primary key after `after`."""
    cols = exported_columns(conn, table)
    conds = [subject_match(table, s, "x")]
    if table.tombstone is not None and not include_tombstoned:
        conds.append(sql.SQL("x.{} IS NULL").format(sql.Identifier(table.tombstone)))
    key = sql.SQL(", ").join(sql.SQL("x.{}").format(sql.Identifier(k)) for k in table.key)
    params = s.params() | {"limit": limit}
    if after is not None:
        marks = sql.SQL(", ").join(sql.Placeholder(f"k{i}") for i in range(len(after)))
        conds.append(sql.SQL("({}) > ({})").format(key, marks))
        params.update({f"k{i}": v for i, v in enumerate(after)})
    query = sql.SQL("SELECT {cols} FROM {t} x WHERE {where} ORDER BY {key} LIMIT %(limit)s").format(
        cols=sql.SQL(", ").join(sql.SQL("x.{}").format(sql.Identifier(c)) for c in cols),
        t=table.ident,
        where=sql.SQL(" AND ").join(conds),
        key=key,
    )
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()
