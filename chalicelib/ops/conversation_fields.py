"""The fields the transcript's ops share: ids, roles, bounded metadata, and 'any agent'."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import StringConstraints

Role = Literal["user", "assistant", "system", "tool"]
ThreadId = Annotated[str, StringConstraints(min_length=1, max_length=256)]
MsgId = Annotated[str, StringConstraints(max_length=256)]
Content = Annotated[str, StringConstraints(max_length=1_000_000)]
MAX_METADATA_BYTES = 64 * 1024
ANY_AGENT = ("", "-", "*")


def metadata_bounded(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None and len(json.dumps(value, default=str)) > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is larger than {MAX_METADATA_BYTES} bytes of JSON")
    return value


def any_agent(agent: str) -> str | None:
    """'' / '-' / '*' read every agent's turns; any other value reads that agent's."""
    return None if agent in ANY_AGENT else agent
