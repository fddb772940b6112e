"""Reading a Claude Code session transcript (JSON Lines, one entry a line): its turns, the
brief events and tool observations it holds, and what Loom's own tools served in it.
Standard library only."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

MAX_RECALLED_KEYS = 200
MAX_SESSION_VALUES = 100
EVENT_CHARS = 4000
OBSERVATION_CHARS = 20_000
EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}
SEARCH_TOOLS = {"Grep": "pattern", "Glob": "pattern", "WebSearch": "query", "WebFetch": "url"}
# Loom's own MCP tools (mcp__<server>__loom_<op>): what they served is an echo, not an action.
LOOM_TOOL = re.compile(r"(?:^|__)loom_[a-z0-9_]+$")
# Slash-command bookkeeping Claude Code writes as user entries; not something the person said.
CLIENT_MARKUP = re.compile(
    r"^\s*<(command-name|command-message|command-args|local-command-stdout|local-command-stderr)>"
)


def read_transcript(path: str) -> list[dict[str, Any]]:
    """Every complete line, parsed; a line being written (no newline yet) waits for next time.
    A line that is not JSON stays in place as an empty entry, so line numbers hold."""
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return []
    lines = raw.split(b"\n")[:-1]  # the last piece has no newline: complete lines only
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = {}
        entries.append(entry if isinstance(entry, dict) else {})
    return entries


def _dict(value: Any) -> dict[str, Any]:
    """A field that should hold an object, as one: a line of another shape (a string message,
    a string tool input) reads as empty instead of stopping the whole transcript."""
    return value if isinstance(value, dict) else {}


def _blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    content = _dict(entry.get("message")).get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _text(blocks: list[dict[str, Any]], kind: str = "text", field: str = "text") -> str:
    parts = [str(b.get(field) or "") for b in blocks if b.get("type") == kind]
    return "\n\n".join(p for p in parts if p.strip())


def _conversational(entry: dict[str, Any]) -> bool:
    return (
        entry.get("type") in ("user", "assistant")
        and not entry.get("isMeta")
        and not entry.get("isSidechain")
        and not entry.get("isCompactSummary")
        and bool(entry.get("uuid"))
    )


def turns_of(entries: list[dict[str, Any]], start: int = 0) -> list[dict[str, Any]]:
    """User and assistant turns from line `start` on, msg_id = the entry's uuid. A thinking
    block written as its own entry rides on the next text of the same model message."""
    out: list[dict[str, Any]] = []
    reasoning: dict[str, str] = {}
    for line, entry in enumerate(entries):
        if not _conversational(entry):
            continue
        blocks = _blocks(entry)
        message_id = str(_dict(entry.get("message")).get("id") or "")
        thinking = _text(blocks, "thinking", "thinking")
        if thinking:
            reasoning[message_id] = "\n\n".join(
                x for x in (reasoning.get(message_id), thinking) if x
            )
        text = _text(blocks)
        if not text.strip() or (entry["type"] == "user" and CLIENT_MARKUP.match(text)):
            continue
        carried = reasoning.pop(message_id, "") if entry["type"] == "assistant" else ""
        if line < start:
            continue
        out.append(
            {
                "line": line,
                "msg_id": str(entry["uuid"]),
                "role": entry["type"],
                "content": text,
                "reasoning": carried,
                "ts": entry.get("timestamp") or None,
                "cwd": entry.get("cwd") or "",
                "git_branch": entry.get("gitBranch") or "",
            }
        )
    return out


def _tool_names(entries: list[dict[str, Any]]) -> dict[str, str]:
    return {
        str(b.get("id")): str(b.get("name") or "")
        for e in entries
        for b in _blocks(e)
        if b.get("type") == "tool_use"
    }


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(c.get("text") or "")
            for c in content
            if isinstance(c, dict) and c.get("type") == "text"
        )
    return ""


def _tool_summary(name: str, tool_input: dict[str, Any]) -> tuple[str, list[str]]:
    """A one-line account of a tool call, and the files it touched."""
    path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
    files = [path] if path else []
    if name == "Bash":
        return str(tool_input.get("command") or ""), files
    if name in SEARCH_TOOLS:
        return str(tool_input.get(SEARCH_TOOLS[name]) or ""), files
    if path:
        return f"{name} {path}", files
    return f"{name} {json.dumps(tool_input, ensure_ascii=False)[:300]}", files


def events_of(entries: list[dict[str, Any]], start: int, end: int) -> list[dict[str, Any]]:
    """Brief events (the spec's ten kinds) for lines start..end-1."""
    names = _tool_names(entries)
    events: list[dict[str, Any]] = []
    for entry in entries[start:end]:
        ts = entry.get("timestamp") or None
        if entry.get("isCompactSummary"):
            summary = _text(_blocks(entry))
            if summary:
                events.append({"kind": "summary", "text": summary[:20_000], "ts": ts})
            continue
        if entry.get("type") not in ("user", "assistant") or entry.get("isSidechain"):
            continue
        blocks = _blocks(entry)
        text = _text(blocks)
        if text.strip() and not entry.get("isMeta") and not CLIENT_MARKUP.match(text):
            events.append({"kind": entry["type"], "text": text[:EVENT_CHARS], "ts": ts})
        for b in blocks:
            if b.get("type") == "tool_use":
                name = str(b.get("name") or "")
                if LOOM_TOOL.search(name):
                    continue
                summary, files = _tool_summary(name, _dict(b.get("input")))
                if name in EDIT_TOOLS:
                    kind = "edit"
                elif name == "Read":
                    kind = "read"
                elif name == "Bash":
                    kind = "command"
                elif name in SEARCH_TOOLS:
                    kind = "search"
                else:
                    kind = "tool"
                event = {"kind": kind, "text": summary[:EVENT_CHARS], "tool": name, "ts": ts}
                events.append({**event, "files": files})
            elif b.get("type") == "tool_result" and b.get("is_error"):
                tool = names.get(str(b.get("tool_use_id")), "")
                text = _result_text(b)[:EVENT_CHARS]
                events.append({"kind": "error", "text": text, "tool": tool, "ts": ts})
    return events


def observations_of(entries: list[dict[str, Any]], start: int) -> list[tuple[int, dict[str, Any]]]:
    """(line, observe.record body) for each tool call from line `start` on, with its result."""
    results: dict[str, str] = {}
    for entry in entries:
        for b in _blocks(entry):
            if b.get("type") == "tool_result":
                results[str(b.get("tool_use_id"))] = _result_text(b)
    out = []
    for line, entry in enumerate(entries):
        if line < start or entry.get("type") != "assistant" or entry.get("isSidechain"):
            continue
        for b in _blocks(entry):
            name = str(b.get("name") or "")
            if b.get("type") != "tool_use" or LOOM_TOOL.search(name):
                continue
            tool_input = _dict(b.get("input"))
            summary, files = _tool_summary(name, tool_input)
            body = {
                "tool": name[:200],
                "action": (summary or name)[:2000],
                "input": json.dumps(tool_input, ensure_ascii=False)[:OBSERVATION_CHARS],
                "output": results.get(str(b.get("id")), "")[:OBSERVATION_CHARS],
                "files": [f[:1000] for f in files][:100],
                "ts": entry.get("timestamp") or None,
            }
            out.append((line, body))
    return out


def served_by_loom(entries: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(recalled_keys, session_values): what the session's Loom tools served, wrote or asked,
    so extraction drops facts that only echo them."""
    keys: list[str] = []
    values: list[str] = []
    loom_calls: set[str] = set()

    def walk(node: Any, depth: int = 0) -> None:
        if depth > 6:
            return
        if isinstance(node, dict):
            if isinstance(node.get("key"), str):
                keys.append(node["key"])
            if isinstance(node.get("value"), str):
                values.append(node["value"])
            for v in node.values():
                walk(v, depth + 1)
        elif isinstance(node, list):
            for v in node:
                walk(v, depth + 1)

    for entry in entries:
        for b in _blocks(entry):
            if b.get("type") == "tool_use" and LOOM_TOOL.search(str(b.get("name") or "")):
                loom_calls.add(str(b.get("id")))
                tool_input = _dict(b.get("input"))
                for field in ("query", "question", "value", "content", "text"):
                    if isinstance(tool_input.get(field), str):
                        values.append(tool_input[field])
                for field in ("key", "keys", "memory_key"):
                    named = tool_input.get(field)
                    if isinstance(named, str):
                        keys.append(named)
                    elif isinstance(named, list):
                        keys.extend(k for k in named if isinstance(k, str))
            elif b.get("type") == "tool_result" and str(b.get("tool_use_id")) in loom_calls:
                text = _result_text(b)
                try:
                    walk(json.loads(text))
                except ValueError:
                    values.append(text)
    return _recent_unique(keys, MAX_RECALLED_KEYS), _recent_unique(values, MAX_SESSION_VALUES)


def _recent_unique(items: list[str], cap: int) -> list[str]:
    seen: dict[str, None] = {}
    for item in reversed(items):
        item = item.strip()[:2000]
        if len(item) >= 3 and item not in seen:
            seen[item] = None
    return list(seen)[:cap][::-1]
