"""The deterministic builder: goal, status, files, errors and pointers; never decisions."""

from __future__ import annotations

import re

from chalicelib.brief.events import BriefEvent
from chalicelib.brief.sections import ITEM_CHARS, BriefSections

_URL = re.compile(r"https?://\S+")
_SHORT = 300


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHORT else text[: _SHORT - 1] + "…"


def _fits(item: str) -> bool:
    return len(item.strip()) <= ITEM_CHARS


def build(stored: BriefSections, events: list[BriefEvent]) -> BriefSections:
    """A revision read straight off the events."""
    users = [e.text for e in events if e.kind == "user" and e.text.strip()]
    # Status: what the assistant last said, else the last note (never the client's summary).
    latest = [e.text for e in events if e.kind == "assistant" and e.text.strip()] or [
        e.text for e in events if e.kind == "note" and e.text.strip()
    ]
    # A path or link longer than an item can hold is left out: cut short, it would lead nowhere.
    files = [f for e in events if e.kind in ("edit", "read") for f in e.files if _fits(f)]
    errors = [e.text for e in events if e.kind == "error" and e.text.strip()]
    commands = [e.text for e in events if e.kind == "command" and e.text.strip()]
    urls = [u for e in events for u in _URL.findall(e.text) if _fits(u)]
    return BriefSections(
        goal=stored.goal or (_clip(users[0]) if users else ""),
        status=_clip(latest[-1]) if latest else stored.status,
        key_files=list(dict.fromkeys(reversed(files)))[:20][::-1] or stored.key_files,
        open_questions=[f"error: {_clip(t)}" for t in errors[-5:]] or stored.open_questions,
        pointers=[_clip(c) for c in commands[-6:]] + urls[-6:] or stored.pointers,
    )
