"""The extraction prompts. The operator's policy always ends the system prompt."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from chalicelib.policies import policy_block

EXTRACT_SYSTEM = (
    "You extract durable facts from a conversation for a long-term memory. A durable fact"
    " will still be true and useful in a later session: preferences, personal details,"
    " relationships, plans with dates, decisions, constraints, outcomes. Skip greetings,"
    " chit-chat, one-moment status and narration of tool activity. Write each fact as one"
    " self-contained sentence in the third person, resolving relative dates against the"
    " observation date. Behaviour the assistant agrees to at the user's request is the"
    " user's preference, not a rule of the assistant. If the user asks to forget something,"
    " list it under forget.\n"
    'Answer ONLY a JSON object: {"facts": [{"subject": str, "attribute": str,'
    ' "value": str, "tags": [str], "source_message_indices": [int], "span": str,'
    ' "about": "user"|"agent"}], "forget": [{"subject": str, "attribute": str,'
    ' "text": str}], "digest": str}. subject names who or what the fact is about ("user"'
    ' for the person speaking); attribute names which property ("home city"); the key is'
    " built from those two, never from the value. span quotes the supporting words."
    " Use the namespace's categories as tags where they fit. Do not repeat an existing"
    " memory unless its value changed."
)
AGENT_LEARNINGS_BLOCK = (
    '\n\nAlso return rules the assistant states about its own behaviour ("I escalate any'
    ' refund over $500 to a human") as facts with "about": "agent", citing the assistant'
    " turn. Behaviour the assistant agrees to at the user's request (\"always answer me in"
    ' French" answered with "I will always answer you in French") is the user\'s preference,'
    ' not a rule of the bot: return it as a fact with "about": "user".'
)
RECORD_SYSTEM = (
    "You fill one typed record from a conversation. Answer ONLY a JSON object that matches"
    " this JSON schema; use null for a field the conversation does not give:\n{schema}"
)


def system_prompt(
    base: str, instructions: str, policy: str | None, *, agent_learnings: bool = False
) -> str:
    """Base, then the request's instructions, then (last) the operator's policy block."""
    prompt = base + (AGENT_LEARNINGS_BLOCK if agent_learnings else "")
    if instructions:
        prompt += f"\n\nInstructions from the caller:\n{instructions}"
    if policy:
        prompt += policy_block(policy)
    return prompt


def transcript_prompt(
    *,
    segment: list[tuple[int, dict[str, Any]]],
    context: list[dict[str, Any]],
    categories: list[str],
    existing: list[tuple[str, str]],
    observation_date: date,
) -> str:
    parts = [f"Observation date: {observation_date.isoformat()}"]
    if categories:
        parts.append("Namespace categories: " + ", ".join(categories))
    if existing:
        parts.append(
            "Existing memories (do not repeat):\n"
            + "\n".join(f"- {k}: {v[:300]}" for k, v in existing)
        )
    if context:
        parts.append(
            "Earlier turns, for context only (do not extract from them):\n"
            + "\n".join(f"{m['role']}: {m['content'][:2000]}" for m in context)
        )
    parts.append("Conversation:\n" + "\n".join(_line(i, m) for i, m in segment))
    return "\n\n".join(parts)


def _line(i: int, m: dict[str, Any]) -> str:
    who = m["role"] + (f" ({m['name']})" if m.get("name") else "")
    when = f" [{m['timestamp']}]" if m.get("timestamp") else ""
    return f"[{i}] {who}{when}: {m['content']}"


def verify_prompt(values: list[str]) -> str:
    return (
        "Which of these facts will NOT matter in a later session (status snapshots,"
        ' housekeeping, plans, narration)? Answer ONLY {"non_durable": [indices]}.\n'
        + "\n".join(f"[{i}] {v}" for i, v in enumerate(values))
    )


def record_prompt(schema: dict[str, Any]) -> str:
    return RECORD_SYSTEM.format(schema=json.dumps(schema))
