"""Transcript files for `loom ingest-transcript`: Markdown `# user` sections, a JSON array of
{role, content}, JSON Lines (one such object a line, or Cursor's agent transcript lines), or
Cursor's plain-text agent transcript (`user:` and `A:` blocks)."""

from __future__ import annotations

import hashlib
import json
import re

ROLES = ("user", "assistant", "system", "tool")
_HEADING = re.compile(r"^#\s+(user|assistant|system|tool)\s*$", re.IGNORECASE)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
# Cursor wraps what the person typed in <user_query> tags.
_USER_QUERY = re.compile(r"^\s*<user_query>\s*(.*?)\s*</user_query>\s*$", re.DOTALL)
_QUERY_PART = re.compile(r"<user_query>\s*(.*?)\s*(?:</user_query>|\Z)", re.DOTALL)
# Cursor's plain-text transcript: a block starts at `user:` or `A:`; inside a reply, `[Thinking]`
# lines are reasoning and `[Tool call]` / `[Tool result]` start a tool's part, up to a blank line.
_TEXT_USER = re.compile(r"^\s*user:\s?", re.IGNORECASE)
_TEXT_ASSISTANT = re.compile(r"^\s*A:\s?")
_TEXT_TOOL = re.compile(r"^\s*\[(Tool call|Tool result)\]", re.IGNORECASE)
_TEXT_THINKING = re.compile(r"^\s*\[Thinking\]")


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
    if _TEXT_USER.match(text.lstrip()):
        return _parse_cursor_text(text)
    return _parse_markdown(text)


def _parse_json_lines(text: str) -> list[tuple[str, str]]:
    """One object a line: {role, content}, or Cursor's {role, message: {content: [blocks]}}.
    Only text is a turn: a line with no text (a tool call, a tool result) is skipped, and so is
    a line of a role no turn has (a client's own bookkeeping)."""
    turns = []
    roles_seen = 0
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
            continue
        roles_seen += 1
        content = _line_text(item)
        if role == "user":
            content = _USER_QUERY.sub(r"\1", content)
        if content.strip():
            turns.append((role, content.strip()))
    if not roles_seen:
        raise TranscriptError(f"no line has a role of {ROLES}")
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


def _parse_cursor_text(text: str) -> list[tuple[str, str]]:
    """Cursor's plain-text agent transcript: `user:` blocks (what the person typed, inside
    <user_query> tags when present) and `A:` blocks (the reply's text, without its thinking
    and tool parts)."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        if _TEXT_USER.match(line):
            blocks.append(("user", [_TEXT_USER.sub("", line, count=1)]))
        elif _TEXT_ASSISTANT.match(line):
            blocks.append(("assistant", [_TEXT_ASSISTANT.sub("", line, count=1)]))
        elif blocks:
            blocks[-1][1].append(line)
    turns = []
    for role, lines in blocks:
        content = _user_text(lines) if role == "user" else _reply_text(lines)
        if content:
            turns.append((role, content))
    return turns


def _user_text(lines: list[str]) -> str:
    block = "\n".join(lines)
    queries = [q.strip() for q in _QUERY_PART.findall(block) if q.strip()]
    return "\n\n".join(queries) if queries else block.strip()


def _reply_text(lines: list[str]) -> str:
    kept, in_tool = [], False
    for line in lines:
        if _TEXT_TOOL.match(line):
            in_tool = True
        elif in_tool and not line.strip():
            in_tool = False
        elif not in_tool and not _TEXT_THINKING.match(line):
            kept.append(line)
    return "\n".join(kept).strip()
