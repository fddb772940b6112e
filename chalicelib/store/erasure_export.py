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


# The key column types a cursor value stands for: integers by their range, and text.
_INTEGER_BITS = {"int2": 16, "int4": 32, "int8": 64}
_TEXT_TYPES = ("text", "varchar", "bpchar")
CURSOR_TYPES = (*_INTEGER_BITS, *_TEXT_TYPES)


def key_types(conn: Connection, table: ErasedTable) -> list[str]:
    """The type (udt_name) of each column of the table's primary key, in key order."""
    schema, name = table.name.split(".")
    rows = conn.execute(
        "SELECT column_name, udt_name FROM information_schema.columns WHERE table_schema = %s"
        " AND table_name = %s AND column_name = ANY(%s)",
        (schema, name, list(table.key)),
    ).fetchall()
    types = {r[0]: r[1] for r in rows}
    return [types[k] for k in table.key]


def _fits(value: Any, udt: str) -> bool:
    if udt in _INTEGER_BITS:
        bound = 2 ** (_INTEGER_BITS[udt] - 1)
        return isinstance(value, int) and not isinstance(value, bool) and -bound <= value < bound
    if udt in _TEXT_TYPES:
        return isinstance(value, str) and "\x00" not in value
    return False


def key_fits(conn: Connection, table: ErasedTable, values: list[Any]) -> bool:
    """Whether `values` can be a primary key of `table`: one value of each key column's type."""
    types = key_types(conn, table)
    return len(values) == len(types) and all(
        _fits(v, udt) for v, udt in zip(values, types, strict=True)
    )


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
    conds = [subject_match(table, s, "x", named=True)]
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
