"""Opaque page cursors: the sort key of a page's last row, base64 JSON. A key is a tuple of
typed values (a timestamp, then the ids that break its ties, in most pages)."""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any

from chalicelib.errors import BadRequestError
from chalicelib.storable import unstorable


def encode_key(*values: Any) -> str:
    """A cursor carrying `values` (a datetime as ISO 8601)."""
    shown = [v.isoformat() if isinstance(v, datetime) else v for v in values]
    return base64.urlsafe_b64encode(json.dumps(shown).encode()).decode()


def decode_key(cursor: str, kinds: tuple[type, ...]) -> list[Any]:
    """The values a cursor carries, one of each kind in order (datetime, bool, int, float or
    str; an int stands for a float); one this server did not issue is a 400."""
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        if not isinstance(values, list) or len(values) != len(kinds):
            raise ValueError("not the values a cursor carries")
        return [_read(v, kind) for v, kind in zip(values, kinds, strict=True)]
    except (ValueError, TypeError, RecursionError) as exc:  # deep nesting exhausts the parser
        raise BadRequestError("cursor is not one this server issued; pass next_cursor") from exc


def _read(value: Any, kind: type) -> Any:
    if kind is datetime:
        if not isinstance(value, str):
            raise ValueError("not a timestamp")
        return datetime.fromisoformat(value)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    # bool is an int to Python: only a bool stands for a bool, and none for a number.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ValueError(f"not a {kind.__name__}")
    # Text the database could not hold (a NUL, a lone surrogate) is none this server issued.
    if isinstance(value, str) and unstorable(value) is not None:
        raise ValueError("not storable")
    return value


def encode_cursor(ts: datetime, *ids: str) -> str:
    return encode_key(ts, *ids)


def decode_cursor(cursor: str, n_ids: int) -> tuple[datetime, list[str]]:
    """The cursor's timestamp and ids; a cursor this server did not issue is a 400."""
    ts, *ids = decode_key(cursor, (datetime, *(str,) * n_ids))
    return ts, ids
