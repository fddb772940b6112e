"""Transcript files for `loom ingest-transcript`: Markdown `# user` sections, a JSON array of
{role, content}, or JSON Lines (one such object a line, or Cursor's agent transcript lines)."""

from __future__ import annotations

import hashlib
import json
import re

ROLES = ("user", "assistant", "system", "tool")
_HEADING = re.compile(r"^#\s+(user|assistant|system|tool)\s*$", re.IGNORECASE)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
# Cursor wraps what the person typed in <user_query> tags.
_USER_QUERY = re.compile(r"^\s*<user_query>\s*(.*?)\s*</user_query>\s*$", re.DOTALL)


def transcript_thread_id(text: str) -> str:
    """A thread id derived from the file's content, so re-ingesting lands in the same thread."""
    return "ingest-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def turn_msg_id(thread_id: str, index: int, role: str, content: str) -> str:
    """Position-aware: two identical turns of one transcript stay two turns. The database and
    HTTP paths both use it, so they never double a turn."""
    digest = hashlib.sha256(f"{thread_id}\x1f{index}\x1f{role}\x1f{content}".encode()).hexdigest()
    return f"t{index}-{digest[:24]}"


def clean_turns(turns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The turns without what a turn's text cannot hold (NUL characters, lone surrogates),
    and without any turn left empty."""
    out = []
    for role, content in turns:
        text = content.encode("utf-8", "ignore").decode("utf-8").replace("\x00", "")
        if text.strip():
            out.append((role, text))
    return out


class TranscriptError(ValueError):
    """The file is not a transcript this command reads."""


def parse_transcript(text: str) -> list[tuple[str, str]]:
    """(role, content) turns, in order; JSON when the text starts with '[', JSON Lines when
    it starts with '{'."""
    if text.lstrip().startswith("["):
        return _parse_json(text)
    if text.lstrip().startswith("{"):
        return _parse_json_lines(text)
    return _parse_markdown(text)


def _parse_json_lines(text: str) -> list[tuple[str, str]]:
    """One object a line: {role, content}, or Cursor's {role, message: {content: [blocks]}}.
    Only text is a turn: a line with no text (a tool call, a tool result) is skipped."""
    turns = []
    # Lines end at "\n" only: a JSON string may hold U+2028 or U+0085 unescaped, which
    # str.splitlines() would break a line at.
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise TranscriptError(f"line {n} is not valid JSON: {exc}") from exc
        except RecursionError as exc:
            raise TranscriptError(f"line {n} nests too deeply to be a turn") from exc
        if not isinstance(item, dict):
            raise TranscriptError(f"line {n} is not a JSON object")
        role = str(item.get("role", "")).lower()
        if role not in ROLES:
            raise TranscriptError(f"line {n} has role {item.get('role')!r}; use one of {ROLES}")
        content = _line_text(item)
        if role == "user":
            content = _USER_QUERY.sub(r"\1", content)
        if content.strip():
            turns.append((role, content.strip()))
    return turns


def _line_text(item: dict) -> str:
    content = item.get("content")
    if content is None and isinstance(item.get("message"), dict):
        content = item["message"].get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(b.get("text") or "")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        ]
        return "\n\n".join(p for p in parts if p.strip())
    return ""


def _parse_json(text: str) -> list[tuple[str, str]]:
    try:
        items = json.loads(text)
    except ValueError as exc:
        raise TranscriptError(f"not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise TranscriptError("the JSON nests too deeply to be an array of turns") from exc
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
    """`# user` / `# assistant` (or system, tool) headings start turns; a heading line inside
    a fenced code block (``` or ~~~) is the turn's text, like a shell comment in a script."""
    turns: list[tuple[str, str]] = []
    role: str | None = None
    lines: list[str] = []
    fence: str | None = None  # the open fence's marker
    for line in text.splitlines():
        marker = _FENCE.match(line)
        if marker and (fence is None or marker.group(1)[0] == fence[0]):
            if fence is None:
                fence = marker.group(1)
            elif len(marker.group(1)) >= len(fence) and not line.strip()[len(marker.group(1)) :]:
                fence = None
        match = None if fence is not None or marker else _HEADING.match(line)
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
