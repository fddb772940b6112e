"""A brief's sections: state sections are replaced, decisions, dead ends and done accumulate."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

ITEM_CHARS = 600
Item = Annotated[str, StringConstraints(strip_whitespace=True, max_length=ITEM_CHARS)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000)]

# Each list's cap: old items fall off first.
CAPS = {
    "decisions": 20,
    "dead_ends": 12,
    "done": 20,
    "open_questions": 10,
    "next_steps": 8,
    "key_files": 20,
    "constraints": 10,
    "pointers": 12,
}
ACCUMULATING = ("decisions", "dead_ends", "done")
RENDERED_MAX_CHARS = 12_000
EventKind = Literal[
    "user", "assistant", "edit", "command", "error", "read", "search", "tool", "note", "summary"
]


class BriefSections(BaseModel):
    """The structured brief, as agents write it and as the model answers it."""

    model_config = ConfigDict(extra="ignore")

    goal: Text = ""
    status: Text = ""
    decisions: list[Item] = Field(default_factory=list)
    dead_ends: list[Item] = Field(default_factory=list)
    done: list[Item] = Field(default_factory=list)
    open_questions: list[Item] = Field(default_factory=list)
    next_steps: list[Item] = Field(default_factory=list)
    key_files: list[Item] = Field(default_factory=list)
    constraints: list[Item] = Field(default_factory=list)
    pointers: list[Item] = Field(default_factory=list)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def merge(stored: BriefSections, new: BriefSections) -> BriefSections:
    """New state sections replace stored ones when given; accumulating lists append; caps hold."""
    merged = stored.model_dump()
    for name, value in new.model_dump().items():
        if name in ACCUMULATING:
            merged[name] = _unique(merged[name] + value)
        elif value:
            merged[name] = _unique(value) if isinstance(value, list) else value
    for name, cap in CAPS.items():
        merged[name] = merged[name][-cap:]
    return fit(BriefSections.model_validate(merged))


_TITLES = {
    "decisions": "Decisions",
    "dead_ends": "Dead ends",
    "done": "Done",
    "open_questions": "Open questions",
    "next_steps": "Next steps",
    "key_files": "Key files",
    "constraints": "Constraints",
    "pointers": "Pointers",
}


def render(key: str, revision: int, s: BriefSections) -> str:
    """The brief as text, ready to show."""
    lines = [f"# Session brief {key} (revision {revision})"]
    if s.goal:
        lines.append(f"Goal: {s.goal}")
    if s.status:
        lines.append(f"Status: {s.status}")
    for name, title in _TITLES.items():
        items = getattr(s, name)
        if items:
            lines.append(f"{title}:")
            lines.extend(f"- {item}" for item in items)
    return "\n".join(lines)


def fit(s: BriefSections, key_room: int = 200) -> BriefSections:
    """Drop the oldest items of the longest lists until the rendered brief fits its bound."""
    budget = RENDERED_MAX_CHARS - key_room
    while len(render("", 0, s)) > budget:
        name = max(CAPS, key=lambda n: len(getattr(s, n)))
        items = getattr(s, name)
        if not items:
            break
        s = s.model_copy(update={name: items[1:]})
    return s
