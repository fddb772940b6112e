"""What happened since the last save, as clients send it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from chalicelib.brief.sections import EventKind

MAX_EVENTS = 4000


class BriefEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")

    kind: EventKind
    text: Annotated[str, StringConstraints(max_length=20_000)] = ""
    ts: datetime | None = None
    files: Annotated[
        list[Annotated[str, StringConstraints(max_length=1000)]], Field(max_length=200)
    ] = Field(default_factory=list)
    tool: Annotated[str, StringConstraints(max_length=200)] = ""


def event_line(e: BriefEvent) -> str:
    """One event as a line of the model's prompt."""
    extra = f" [{e.tool}]" if e.tool else ""
    files = f" (files: {', '.join(e.files)})" if e.files else ""
    return f"{e.kind}{extra}: {e.text}{files}"


def windows(
    events: list[BriefEvent], window_chars: int, max_windows: int
) -> list[list[BriefEvent]]:
    """Events cut into windows of about `window_chars`; the most recent `max_windows` kept."""
    out: list[list[BriefEvent]] = [[]]
    size = 0
    for e in events:
        n = len(event_line(e))
        if out[-1] and size + n > window_chars:
            out.append([])
            size = 0
        out[-1].append(e)
        size += n
    out = [w for w in out if w]
    return out[-max_windows:]
