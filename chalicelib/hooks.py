"""Named points inside the workers' and writes' steps where a test holds, fails or interleaves
a step; production sets none, so reaching a point does nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Each point, and what it passes to the function set on it.
POINTS = {
    "erasure.batch": "before each batch the erasure worker runs (job)",
    "erasure.finished": "once a job is marked done, before that commits (job)",
    "extraction_policy.counted": "once a namespace policy set has counted the org's (org)",
    "guard_sweep.read": "once the guard sweep has read a batch, before it withdraws (rows)",
    "entities.read": "once the entity extractor has read a batch, before it writes (rows)",
    "learnings.supporter_written": "once a filing has written its supporter row, before it"
    " writes the candidate again (candidate_id)",
    "model_calls.read": "before a server reads which orgs' model calls are off ()",
    "memories.locked": "once a memory write has read its keys' rows, locked (org, keys)",
    "observe.claimed": "once an observe pass has claimed its sessions (rows)",
    "observe.read": "once an observe pass has read a session's observations (org, session_id)",
}


class Hooks:
    """The functions tests set on named points (`POINTS`); `at` runs the one set, if any."""

    def __init__(self) -> None:
        self._at: dict[str, Callable[..., object]] = {}

    def on(self, point: str, fn: Callable[..., object]) -> None:
        if point not in POINTS:  # a misspelt point would never run, and its test prove nothing
            raise KeyError(f"no hook point {point!r}; the points are {sorted(POINTS)}")
        self._at[point] = fn

    def at(self, point: str, **seen: Any) -> None:
        fn = self._at.get(point)
        if fn is not None:
            fn(**seen)
