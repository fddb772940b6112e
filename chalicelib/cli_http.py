"""What the `loom` commands send to a running server (`--url`, LOOM_TOKEN as the bearer token):
a transcript's turns, its session brief and its deferred extraction (`ingest-transcript`), and
what Loom recalls for a session or a prompt (`recall`). For a hook on a machine that reaches
Loom only over HTTP."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from chalicelib.brief.events import MAX_EVENTS
from chalicelib.errors import LoomError

EVENT_CHARS = 4000  # a brief event's text, as the Claude Code plugin cuts it
MAX_MESSAGES_PER_EXTRACTION = 400  # memory.set_from_messages' bound
LAST_MESSAGES = 20
CONVERSATIONAL = ("user", "assistant")


def post_op(base_url: str, op: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One op over HTTP; a refusal or an unreachable server is a LoomError saying why."""
    headers = {"Content-Type": "application/json"}
    if token := os.environ.get("LOOM_TOKEN"):
        headers["Authorization"] = f"Bearer {token}"
    url = base_url.rstrip("/") + f"/v1/{op}"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return dict(json.loads(resp.read() or b"{}"))
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = str(exc.reason)
        if exc.code == 401:
            message += ". Set LOOM_TOKEN to a token from `loom token mint`"
        raise LoomError(f"{url} answered {exc.code}: {message}") from exc
    except (OSError, ValueError) as exc:
        raise LoomError(f"cannot reach {base_url}: {exc}") from exc


class DoneCount:
    """How many of a transcript's leading turns a step has handled, kept in a small file so a
    hook run again goes on from there (0 without the file, or when it counts more turns than
    the transcript holds)."""

    def __init__(self, path: Path, total: int):
        self.path = path
        try:
            self.count = int(path.read_text().strip() or 0)
        except (OSError, ValueError):
            self.count = 0
        if not 0 <= self.count <= total:
            self.count = 0

    def advance(self, count: int) -> None:
        self.count = count
        self.path.parent.mkdir(parents=True, exist_ok=True)
        part = self.path.with_name(self.path.name + ".part")
        part.write_text(f"{count}\n")
        part.replace(self.path)


def scope(args: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"namespace": args.namespace, "agent": args.agent}
    if args.org:
        body["org"] = args.org
    return body


def save_brief_over_http(
    args: Any, thread_id: str, turns: list[tuple[str, str]], done: DoneCount
) -> str:
    """session.brief_save with the turns not yet in a brief, as user and assistant events."""
    events = [
        {"kind": role, "text": content[:EVENT_CHARS]}
        for role, content in turns[done.count :]
        if role in CONVERSATIONAL
    ][-MAX_EVENTS:]
    if not events:
        return "brief: nothing new"
    body = scope(args) | {
        "session_id": thread_id,
        "user_id": args.user_id,
        "project": args.project,
        "branch": args.branch,
        "trigger": args.brief,
        "events": events,
        "event_cursor": str(len(turns)),
    }
    answer = post_op(args.url, "session.brief_save", body, args.timeout)
    done.advance(len(turns))
    if not answer.get("changed"):
        return f"brief {answer.get('brief_key')}: unchanged ({answer.get('reason')})"
    return f"brief {answer.get('brief_key')}: revision {answer.get('revision')}"


def extract_over_http(
    args: Any, thread_id: str, turns: list[tuple[str, str]], done: DoneCount
) -> str:
    """memory.set_from_messages (deferred) with the turns not handed over yet, each batch
    counted as sent before the next: the queue is not idempotent, so none goes twice."""
    said = []
    while done.count < len(turns):
        end = min(len(turns), done.count + MAX_MESSAGES_PER_EXTRACTION)
        batch = _messages(turns[done.count : end])
        before = _messages(turns[: done.count])[-LAST_MESSAGES:]
        body = scope(args) | {
            "session_id": thread_id,
            "user_id": args.user_id,
            "messages": batch,
            "last_messages": before,
            "extra_tags": [f"source:{args.agent}"],
            "defer": True,
        }
        if batch:
            answer = post_op(args.url, "memory.set_from_messages", body, args.timeout)
            said.append(f"extraction queued {answer.get('queue_id')} ({len(batch)} turns)")
        done.advance(end)
    return "; ".join(said) or "extraction: nothing new"


def _messages(turns: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"role": r, "content": c[:200_000]} for r, c in turns if r in CONVERSATIONAL]


def recall_over_http(args: Any) -> str:
    """context.pack for a session's scope (project and branch) or a prompt (query), as text."""
    body = scope(args) | {"user_id": args.user_id, "budget_tokens": args.tokens}
    for field in ("project", "branch", "query"):
        if getattr(args, field):
            body[field] = getattr(args, field)
    return str(post_op(args.url, "context.pack", body, args.timeout).get("text") or "")
