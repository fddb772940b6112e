"""A context block within a token budget: sections share it, and what one leaves unused passes
to the others.

Tokens are estimated, not counted by a model's tokenizer (each model has its own): one token
per four characters of the UTF-8 text, rounded up, which English prose and code under the
common BPE vocabularies do not exceed on average. The estimate is stated in the answer as
`tokens`, and the packed text never estimates above the budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """The stated estimate: one token per four characters (UTF-8 bytes), rounded up."""
    return math.ceil(len(text.encode("utf-8")) / CHARS_PER_TOKEN)


@dataclass
class Item:
    """One entry of a section as it is shown (`text`, one Markdown block) with its source."""

    text: str
    source: dict[str, object] = field(default_factory=dict)


@dataclass
class Section:
    """A titled list of items, best first, and its share of the budget (a weight)."""

    name: str
    title: str
    share: float
    items: list[Item]


@dataclass
class Packed:
    text: str
    sections: list[dict[str, object]]
    tokens: int
    truncated: bool


def _cost(item: Item) -> int:
    return estimate_tokens(item.text + "\n")


def allocate(budget: int, shares: dict[str, float], needs: dict[str, int]) -> dict[str, int]:
    """Each section's tokens: the budget split by share, each capped at what the section needs,
    the share a section leaves unused passed on to the others by their shares."""
    left = budget
    grant = {name: 0 for name in shares}
    open_ = {name for name in shares if needs.get(name, 0) > 0}
    while open_ and left > 0:
        weight = sum(shares[n] for n in open_)
        if weight <= 0:
            break
        offer = {n: int(left * shares[n] / weight) for n in open_}
        done = {n for n in open_ if needs[n] - grant[n] <= offer[n]}
        if done:  # those fully served take what they need; the rest is offered again
            for n in done:
                left -= needs[n] - grant[n]
                grant[n] = needs[n]
            open_ -= done
            continue
        for n in open_:
            grant[n] += offer[n]
            left -= offer[n]
        break
    return grant


def _cut(text: str, tokens: int) -> str:
    """The text's start within `tokens`, cut at a word bound, marked as cut."""
    limit = tokens * CHARS_PER_TOKEN - 4  # room for the mark and the line's end
    raw = text.encode("utf-8")[: max(0, limit)].decode("utf-8", "ignore")
    cut = raw.rsplit(" ", 1)[0] if " " in raw else raw
    return cut + " …" if cut else ""


def pack(
    sections: list[Section], budget: int, refuse: Callable[[str], bool] = lambda text: False
) -> Packed:
    """Markdown with one part per section that has items (its heading, then its items in order),
    within `budget` estimated tokens. A section takes its items whole while they fit its grant;
    when its first does not fit, that one is cut to fit, unless the cut is refused (a cut can
    make a shape the whole text did not show). `truncated`: an item was left out or cut."""
    heads = {s.name: f"## {s.title}\n" for s in sections}
    # A heading's cost counts the blank line that parts are joined with.
    head_cost = {name: estimate_tokens("\n" + head) for name, head in heads.items()}
    needs = {
        s.name: head_cost[s.name] + sum(_cost(i) for i in s.items) if s.items else 0
        for s in sections
    }
    grants = allocate(budget, {s.name: s.share for s in sections}, needs)
    parts: list[str] = []
    shown: list[dict[str, object]] = []
    truncated = False
    for s in sections:
        room = grants[s.name] - head_cost[s.name]
        taken: list[Item] = []
        for item in s.items:
            cost = _cost(item)
            if cost <= room:
                taken.append(item)
                room -= cost
                continue
            truncated = True
            if not taken and room > 2:
                cut = Item(_cut(item.text, room - 1), item.source)
                if cut.text and _cost(cut) <= room and not refuse(cut.text):
                    taken.append(cut)
                    room -= _cost(cut)
            break
        if taken:
            parts.append(heads[s.name] + "".join(i.text + "\n" for i in taken))
            shown.append({"name": s.name, "items": [dict(i.source, text=i.text) for i in taken]})
    text = "\n".join(parts)
    return Packed(text=text, sections=shown, tokens=estimate_tokens(text), truncated=truncated)
