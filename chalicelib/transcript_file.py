"""Transcript files for `loom ingest-transcript`: Markdown `# user` sections or a JSON array."""

from __future__ import annotations

import json
import re

ROLES = ("user", "assistant", "system", "tool")
_HEADING = re.compile(r"^#\s+(user|assistant|system|tool)\s*$", re.IGNORECASE)


class TranscriptError(ValueError):
    """The file is not a transcript this command reads."""


def parse_transcript(text: str) -> list[tuple[str, str]]:
    """(role, content) turns, in order; JSON when the text starts with '['."""
    if text.lstrip().startswith("["):
        return _parse_json(text)
    return _parse_markdown(text)


def _parse_json(text: str) -> list[tuple[str, str]]:
    try:
        items = json.loads(text)
    except ValueError as exc:
        raise TranscriptError(f"not valid JSON: {exc}") from exc
    if not isinstance(items, list):
        raise TranscriptError("a JSON transcript is an array of {role, content} objects")
    turns = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise TranscriptError(f"item {i} is not an object with a string 'content'")
        role = str(item.get("role", "")).lower()
        if role not in ROLES:
            raise TranscriptError(f"item {i} has role {item.get('role')!r}; use one of {ROLES}")
        turns.append((role, item["content"]))
    return turns


def _parse_markdown(text: str) -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = []
    role: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            if role is not None:
                turns.append((role, "\n".join(lines).strip()))
            role, lines = match.group(1).lower(), []
        elif role is not None:
            lines.append(line)
        elif line.strip():
            raise TranscriptError("text before the first '# user' or '# assistant' heading")
    if role is not None:
        turns.append((role, "\n".join(lines).strip()))
    if not turns:
        raise TranscriptError("no '# user' / '# assistant' sections found")
    return [(r, c) for r, c in turns if c]
