"""The model revises the brief once per window of events; a failed window is skipped, and a
named model the provider does not serve gives way to the deployment's."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import ValidationError

from chalicelib.brief.events import BriefEvent, event_line
from chalicelib.brief.sections import BriefSections, merge
from chalicelib.policies import policy_block
from chalicelib.providers.llm import LLM, LLMError, LLMResult, ModelNotFoundError

REVISER_SYSTEM = (
    "You maintain a session brief: the resumable state of one line of work, read after a"
    " compaction, the next day or by a teammate. Given the current brief as JSON and the"
    " events since, answer ONLY a JSON object with these keys: goal (string), status (string),"
    " decisions, dead_ends, done, open_questions, next_steps, key_files, constraints, pointers"
    " (lists of short strings). Give the full current state for goal, status, open_questions,"
    " next_steps, key_files, constraints and pointers; give only NEW items for decisions,"
    " dead_ends and done. Keep items short and concrete; never include secrets."
)


@dataclass
class Revision:
    sections: BriefSections
    model: str | None = None  # the model asked last; None = the deployment's
    windows: int = 0
    failed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    errors: list[str] = field(default_factory=list)


def revise(
    llm: LLM,
    model: str | None,
    stored: BriefSections,
    windows: list[list[BriefEvent]],
    policy: str | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> Revision:
    """Revise window by window; a model error or an answer that does not parse skips it.
    An operator's extraction policy ends the system prompt. Once `stop` says so (the org's
    model calls switched off) no further window is asked: those revised are kept."""
    system = REVISER_SYSTEM + (policy_block(policy) if policy else "")
    out = Revision(sections=stored, model=model)
    for window in windows:
        if stop():
            break
        out.windows += 1
        prompt = f"Current brief:\n{out.sections.model_dump_json()}\n\nEvents:\n" + "\n".join(
            event_line(e) for e in window
        )
        try:
            result = _ask(llm, system, prompt, out)
            answer = BriefSections.model_validate(result.data or {})
        except (LLMError, ValidationError, json.JSONDecodeError) as exc:
            out.failed += 1
            out.errors.append(str(exc)[:200])
            continue
        out.tokens_in += result.tokens_in
        out.tokens_out += result.tokens_out
        out.sections = merge(out.sections, answer)
    return out


def _ask(llm: LLM, system: str, prompt: str, out: Revision) -> LLMResult:
    """One window's call. A named model the provider does not serve is dropped for the
    deployment's LLM, for this window and the rest, as a model without its key would be."""
    try:
        return llm.complete(system, prompt, json_output=True, model=out.model)
    except ModelNotFoundError:
        if out.model is None:
            raise
        out.model = None
        return llm.complete(system, prompt, json_output=True, model=None)
