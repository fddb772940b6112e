"""Opaque page cursors: a timestamp and the ids that break its ties, base64 JSON."""

from __future__ import annotations

import base64
import json
from datetime import datetime

from chalicelib.errors import BadRequestError
from chalicelib.storable import unstorable


def encode_cursor(ts: datetime, *ids: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([ts.isoformat(), *ids]).encode()).decode()


def decode_cursor(cursor: str, n_ids: int) -> tuple[datetime, list[str]]:
    """The cursor's timestamp and ids; a cursor this server did not issue is a 400."""
    try:
        ts, *ids = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        when = datetime.fromisoformat(ts)
        # Ids the database could not hold (a NUL, a lone surrogate) are none this server issued.
        if len(ids) != n_ids or not all(isinstance(i, str) for i in ids) or unstorable(ids):
            raise ValueError("not the ids a cursor carries")
    except (ValueError, TypeError, RecursionError) as exc:  # deep nesting exhausts the parser
        raise BadRequestError("cursor is not one this server issued; pass next_cursor") from exc
    return when, ids
