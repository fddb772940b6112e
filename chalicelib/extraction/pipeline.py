"""The extraction pipeline: a state handed through named steps, each timed.

`loom.llm_extract` fails closed (502 EXTRACTION_FAILED, nothing written); every other step
fails open and is named in `pipeline_errors`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from chalicelib.auth import Caller
from chalicelib.config import Settings
from chalicelib.deps import Deps
from chalicelib.errors import BadRequestError, LoomError
from chalicelib.observability import logger
from chalicelib.store.extraction_support import Drop

DEFAULT_STEPS = (
    "loom.fetch_namespace_categories",
    "loom.fetch_existing_memories",
    "loom.llm_extract",
    "loom.drop_recall_echoes",
    "loom.drop_session_echoes",
    "loom.drop_activity_narration",
    "loom.drop_non_durable",
    "loom.verify_durable",
    "loom.hash_dedup",
    "loom.bulk_write",
)
MAX_STEPS = 16
CODING_SOURCES = ("source:claude-code", "source:codex", "source:cursor")
# The tag the observe_extract worker puts on a trajectory replay of the observe plane.
OBSERVE_REPLAY = "source:observe"


def is_coding_capture(extra_tags: list[str]) -> bool:
    """A coding client's capture (its source tag), or a trajectory replay from the observe
    plane: only these run loom.drop_non_durable and loom.verify_durable, and none of them
    uses agent learnings."""
    return any(tag in CODING_SOURCES or tag == OBSERVE_REPLAY for tag in extra_tags)


class ExtractionFailedError(LoomError):
    status, code = 502, "EXTRACTION_FAILED"
    # The tokens the failed request's model calls still cost (an answer that did not parse
    # was paid for): the body names them beside the error, as a response would.
    spent: dict[str, int] | None = None

    def to_body(self) -> dict[str, Any]:
        return {**super().to_body(), **(self.spent or {})}


@dataclass
class Fact:
    key: str
    value: str
    tags: list[str]
    indices: list[int]
    span: str = ""
    about: str = "user"
    valid_at: datetime | None = None


@dataclass
class Run:
    """Everything one extraction reads and produces."""

    deps: Deps
    caller: Caller
    live: Settings
    org: str
    namespace: str
    agent: str
    user_id: str
    session_id: str
    request_id: str
    messages: list[dict[str, Any]]
    last_messages: list[dict[str, Any]]
    observation_date: date
    extra_tags: list[str]
    instructions: str
    policy: str | None
    recalled_keys: list[str]
    session_values: list[str]
    valid_at: datetime | None
    agent_learnings: bool
    evidence_ids: list[int] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    existing: list[tuple[str, str]] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    # The bot's rules about itself: filed for review after the pipeline, never as memories.
    agent_rules: list[Fact] = field(default_factory=list)
    learning_candidates: int = 0
    # The model's forget requests, each marked `by_content` when its text is matched too.
    forget: list[dict[str, Any]] = field(default_factory=list)
    digest: str = ""
    written: list[Any] = field(default_factory=list)
    # The fact each written key came from (a step after the write may drop it from `facts`).
    written_from: dict[str, Fact] = field(default_factory=dict)
    drops: list[Drop] = field(default_factory=list)
    pipeline_errors: list[str] = field(default_factory=list)
    stage_ms: dict[str, float] = field(default_factory=dict)
    model_calls: int = 0  # made (a cached answer is none), held to the request's ceiling
    tokens_in: int = 0
    tokens_out: int = 0
    cached_tokens_in: int = 0  # of tokens_in, what the provider served from its prompt cache
    # Calls Loom's own response cache answered (no model call, no tokens), and their prompts'
    # tokens: kept apart from what the provider counted.
    response_cache_hits: int = 0
    response_cache_tokens_in: int = 0
    segments: int = 0
    segmenter: str = "whole"

    @property
    def coding_capture(self) -> bool:
        return is_coding_capture(self.extra_tags)

    def drop(self, stage: str, reason: str, facts: list[Fact]) -> None:
        """Take facts out of the run and count them (loom.memory_drops)."""
        if not facts:
            return
        gone = {id(f) for f in facts}
        self.facts = [f for f in self.facts if id(f) not in gone]
        self.drops.append(Drop(stage, reason, len(facts), facts[0].value[:200]))


Step = Callable[[Run], None]
STEPS: dict[str, Step] = {}


def step(name: str) -> Callable[[Step], Step]:
    """Register an in-process step under its id (operators may register their own)."""

    def register(fn: Step) -> Step:
        STEPS[name] = fn
        return fn

    return register


def check_steps(names: list[str] | None) -> None:
    """HTTP hooks are refused; at most 16 steps."""
    for name in names or []:
        if name.startswith("hook."):
            raise BadRequestError(f"pipeline step {name!r}: HTTP hook steps are refused")


def run_pipeline(run: Run, names: list[str] | None) -> None:
    """Run the steps in order: the extraction call fails closed, every other step fails open."""
    for name in names or DEFAULT_STEPS:
        fn = STEPS.get(name)
        if fn is None:
            run.pipeline_errors.append(f"unknown_step:{name}")
            continue
        started = time.perf_counter()
        try:
            run_step(run, name, fn)
        finally:
            run.stage_ms[f"step.{name}"] = round((time.perf_counter() - started) * 1000, 2)


def run_step(run: Run, name: str, fn: Step) -> None:
    """One step of a run: the extraction call fails closed (502 EXTRACTION_FAILED); any other
    step's failure is named in pipeline_errors, its own writes rolled back, and the run goes
    on."""
    try:
        fn(run)
    except ExtractionFailedError:
        raise
    except LoomError as exc:
        if name == "loom.llm_extract":
            raise ExtractionFailedError(exc.message) from exc
        run.pipeline_errors.append(f"{name}:{exc.message[:200]}")
    except Exception as exc:
        if name == "loom.llm_extract":
            # An unforeseen error's text may carry what the tenant must not read (a
            # provider's answer): the log has it, the answer its type.
            logger.exception("extraction call failed", extra={"step": name})
            raise ExtractionFailedError(
                f"the extraction call failed ({type(exc).__name__}); see the server log"
            ) from exc
        run.pipeline_errors.append(f"{name}:{type(exc).__name__}")
