"""One typed record from a transcript: validated against its schema, retried, then stubbed."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.extraction import prompts
from chalicelib.extraction.pipeline import ExtractionFailedError, Run
from chalicelib.extraction.steps import call_model
from chalicelib.providers.llm import LLMError
from chalicelib.services.memory_writer import Entry, write_entries

VALIDATION_RETRIES = 2
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def field_problems(record: dict[str, Any], schema: dict[str, Any]) -> dict[str, str]:
    """{field: problem} for required fields missing and values of the wrong type."""
    problems = {}
    props: dict[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if record.get(name) is None:
            problems[name] = "required"
    for name, spec in props.items():
        value = record.get(name)
        if value is None or name in problems:
            continue
        wanted = spec.get("type") if isinstance(spec, dict) else None
        kinds = [wanted] if isinstance(wanted, str) else list(wanted or [])
        allowed = tuple(t for k in kinds for t in _TYPES.get(k, ()))
        wrong_bool = isinstance(value, bool) and bool not in allowed
        if allowed and (not isinstance(value, allowed) or wrong_bool):
            problems[name] = f"must be {' or '.join(kinds)}"
    return problems


def extract_record(run: Run, schema: dict[str, Any], key: str) -> list[str]:
    """Write the record at `key`; returns the fields written as null after the retries."""
    if not run.deps.llm.answers:
        return []
    system = prompts.system_prompt(prompts.record_prompt(schema), run.instructions, run.policy)
    base = prompts.transcript_prompt(
        segment=list(enumerate(run.messages)),
        context=run.last_messages,
        categories=[],
        existing=[],
        observation_date=run.observation_date,
    )
    user = base
    record: dict[str, Any] = {}
    problems: dict[str, str] = {}
    for _ in range(1 + VALIDATION_RETRIES):
        try:
            record = call_model(run, system, user)
        except (LLMError, ValueError) as exc:
            raise ExtractionFailedError(f"the extraction call failed: {exc}") from exc
        problems = field_problems(record, schema)
        if not problems:
            break
        user = base + "\n\nYour last answer had these problems; fix them: " + json.dumps(problems)
    props = schema.get("properties") or {}
    clean = {name: record.get(name) for name in props}
    for name in problems:
        clean[name] = None
    run.written = write_entries(
        run.deps,
        org=run.org,
        namespace=run.namespace,
        user_id=run.user_id,
        entries=[
            Entry(
                key=key, value=json.dumps(clean, sort_keys=True), kind="record", tags=run.extra_tags
            )
        ],  # fmt: skip
        source="extraction",
        agent=run.agent,
        session_id=run.session_id,
        principal=run.caller.principal or "local",
        value_updates=True,
    )
    return sorted(problems)
