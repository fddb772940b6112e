"""Identity fields every op shares, with the spec's '-' defaults."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    PrivateAttr,
    StringConstraints,
)

from chalicelib.names import Name, is_name  # noqa: F401  (the ops' own name)

Ident = Annotated[str, StringConstraints(max_length=256)]


def _storable(value: datetime) -> datetime:
    """PostgreSQL keeps UTC offsets under 16 hours, and a moment must stay within years 1-9999
    in UTC to be read back."""
    offset = value.utcoffset()
    if offset is not None:
        if abs(offset) >= timedelta(hours=16):
            raise ValueError("UTC offset must be under 16 hours")
        try:
            value.astimezone(UTC)
        except OverflowError as exc:
            raise ValueError("moment is outside years 1-9999 in UTC") from exc
    return value


# A moment a client sends that is stored or compared in SQL.
Moment = Annotated[datetime, AfterValidator(_storable)]


class OpInput(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


class OpOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Input fields the handler did not apply, named in ignored_args beside unknown fields.
    _not_applied: list[str] = PrivateAttr(default_factory=list)


class OrgScoped(OpInput):
    org: Name
    namespace: Name


class AgentScoped(OrgScoped):
    agent: Ident


# A B-tree entry holds at most 2,704 bytes: a row whose key columns take more cannot be
# indexed. The ids that key a turn (org, namespace, thread, message, agent or model) are
# bounded together, below that with room for the model's name and the entry's own overhead.
TURN_KEY_BYTES_MAX = 2_400


def check_turn_key(*ids: str) -> None:
    """Refuse ids that together would not fit a turn's index entries (a 422 before anything is
    written, where the database would refuse them halfway through)."""
    size = sum(len(i.encode("utf-8", "surrogatepass")) for i in ids)
    if size > TURN_KEY_BYTES_MAX:
        raise ValueError(
            f"the message's ids (org, namespace, thread, message id, agent) take {size} bytes"
            f" of UTF-8; together they may take at most {TURN_KEY_BYTES_MAX}"
        )
