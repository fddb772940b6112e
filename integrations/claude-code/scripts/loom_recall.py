"""Recall: what Loom knows, added to the session's context. At SessionStart, `context.pack` for
the session's scope (memories, the knowledge served to this agent, the brief of the current
project and branch); before each prompt, what `context.pack` finds for the prompt, less what
this session was given already. Python standard library only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loom_hook_io import Client, Config, git, read_json, safe_name, write_json

MIN_PACK_TOKENS = 100  # context.pack's lower bound; a smaller budget turns recall off


def _given_path(cfg: Config, session_id: str) -> Path:
    return cfg.state_dir / f"{safe_name(session_id)}.recalled.json"


def _source_of(section: str, item: dict[str, Any]) -> str:
    """One item's identity, whatever its kind: memory key and version, knowledge uri and
    chunk, brief key and revision."""
    return json.dumps([section, {k: v for k, v in sorted(item.items()) if k != "text"}])


def _render(sections: list[tuple[str, list[dict[str, Any]]]]) -> str:
    parts = []
    for name, items in sections:
        lines = "\n".join(str(item.get("text") or "") for item in items)
        parts.append(f"## {name.capitalize()}\n{lines}")  # memories, knowledge, brief
    return "\n\n".join(parts)


def pack(cfg: Config, client: Client, session_id: str, body: dict[str, Any], fresh: bool) -> str:
    """context.pack; the items this session has not been given yet, as Markdown. `fresh`
    starts the session's record over (a new start, a resume, a compaction or /clear: what
    was given before is no longer in the model's context)."""
    answer = client.call(
        "context.pack",
        {"user_id": cfg.user_id, "session_id": session_id or "-", **body},
    )
    given_path = _given_path(cfg, session_id)
    given = set() if fresh else set(read_json(given_path).get("sources") or [])
    new: list[tuple[str, list[dict[str, Any]]]] = []
    for section in answer.get("sections") or []:
        name = str(section.get("name") or "")
        items = [i for i in section.get("items") or [] if _source_of(name, i) not in given]
        given.update(_source_of(name, i) for i in items)
        if items:
            new.append((name, items))
    write_json(given_path, {"sources": sorted(given)})
    return _render(new)


def session_start_recall(
    cfg: Config, client: Client, hook_input: dict[str, Any], session_id: str
) -> str:
    """The scope's memories, knowledge and the brief of this project and branch."""
    if cfg.recall_tokens < MIN_PACK_TOKENS:
        return ""
    cwd = str(hook_input.get("cwd") or "")
    body: dict[str, Any] = {"budget_tokens": min(cfg.recall_tokens, 32_000)}
    if cwd:
        body["project"] = Path(cwd).name
        # the branch checked out; an unborn one names itself, a detached HEAD names none
        body["branch"] = git(cwd, "symbolic-ref", "--short", "-q", "HEAD")
    return pack(cfg, client, session_id, body, fresh=True)


def prompt_recall(cfg: Config, client: Client, hook_input: dict[str, Any], session_id: str) -> str:
    """What context.pack finds for the prompt, less what the session already holds."""
    prompt = hook_input.get("prompt")
    prompt = prompt.strip() if isinstance(prompt, str) else ""
    if cfg.recall_tokens < MIN_PACK_TOKENS or not prompt:
        return ""
    body = {"query": prompt[:10_000], "budget_tokens": min(cfg.recall_tokens, 32_000)}
    found = pack(cfg, client, session_id, body, fresh=False)
    return f"Loom recalled for this prompt:\n\n{found}" if found else ""
