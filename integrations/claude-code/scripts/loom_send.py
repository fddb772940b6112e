"""What a Claude Code session sends to Loom: its turns (with the reply a lagging transcript
lacks), its session brief, its deferred extraction and its tool observations, each from the
per-session cursor on. Python standard library only."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loom_hook_io import Client, Config, State, git, log
from loom_transcript import (
    events_of,
    observations_of,
    served_by_loom,
    turns_of,
)

SOURCE_TAG = "source:claude-code"
MAX_EVENTS_PER_SAVE = 4000  # session.brief_save's bound
MAX_MESSAGES_PER_EXTRACTION = 400  # memory.set_from_messages' bound
LAST_MESSAGES = 20


@dataclass
class Run:
    """One hook run on one session: its settings, its client (and time), the session's state
    and transcript, and the hook's input."""

    cfg: Config
    client: Client
    state: State
    entries: list[dict[str, Any]]
    hook_input: dict[str, Any]

    @property
    def session_id(self) -> str:
        return str(self.state["session_id"])


# ---- what each hook sends -------------------------------------------------------------------


def capture_turns(run: Run) -> None:
    """conversation.append each new turn, msg_id = its uuid. A turn the namespace refused
    (logging_disabled) stays unsent, and so do the ones after it: they go once recording is
    on. The capture switch turned off is the person's choice: those turns are never sent."""
    cfg, state, entries = run.cfg, run.state, run.entries
    if not cfg.capture:
        state["append_line"] = max(state["append_line"], len(entries))
        return
    for turn in turns_of(entries, state["append_line"]):
        if recording_known_off(cfg, state):
            return
        if is_early_reply(state, turn):
            state["early_reply"] = ""  # sent by an earlier Stop from the hook input
        else:
            answer = run.client.send("conversation.append", append_body(run, turn))
            if note_recording(state, answer):
                return
        state["append_line"] = turn["line"] + 1
    state["append_line"] = max(state["append_line"], len(entries))


def recording_known_off(cfg: Config, state: State) -> bool:
    verdict = state["recording"]
    fresh = bool(verdict) and time.time() - verdict["checked"] < cfg.recheck_seconds
    return fresh and not verdict["on"]


def note_recording(state: State, answer: dict[str, Any] | None) -> bool:
    """Cache what an append said of recording; True when it refused with logging_disabled."""
    if answer is None:
        return False
    off = answer.get("reason") == "logging_disabled"
    state["recording"] = {"on": not off, "checked": time.time()}
    return off


def append_body(run: Run, turn: dict[str, Any]) -> dict[str, Any]:
    metadata = {"source": "claude-code", "session_id": run.session_id}
    for field in ("ts", "cwd", "git_branch"):
        if turn.get(field):
            metadata[field] = turn[field]
    return {
        "thread_id": run.session_id,
        "msg_id": turn["msg_id"],
        "role": turn["role"],
        "content": turn["content"],
        "reasoning": turn["reasoning"],
        "user_id": run.cfg.user_id,
        "metadata": metadata,
    }


def _same_reply(content: str, reply: str) -> bool:
    content = content.strip()
    return bool(reply) and (content == reply or content.endswith(reply))


def is_early_reply(state: State, turn: dict[str, Any]) -> bool:
    return turn["role"] == "assistant" and _same_reply(turn["content"], state["early_reply"])


def _reply_in_transcript(entries: list[dict[str, Any]], reply: str) -> bool:
    """Whether the transcript holds `reply` after the person's last turn."""
    for turn in reversed(turns_of(entries)):
        if turn["role"] == "user":
            return False
        if _same_reply(turn["content"], reply):
            return True
    return False


def send_early_reply(run: Run) -> None:
    """Stop: the transcript file can be one reply behind when the hook runs; the input's
    last_assistant_message holds that reply. It is sent now, and its line in the file is
    skipped when the file catches up."""
    cfg, state, entries = run.cfg, run.state, run.entries
    reply = run.hook_input.get("last_assistant_message")
    reply = reply.strip() if isinstance(reply, str) else ""
    caught_up = state["append_line"] >= len(entries) and not recording_known_off(cfg, state)
    if not reply or not cfg.capture or not caught_up or reply == state["early_reply"]:
        return
    if _reply_in_transcript(entries, reply):
        return
    digest = hashlib.sha256(f"{run.session_id}\x1f{reply}".encode()).hexdigest()[:32]
    turn = {"msg_id": f"reply-{digest}", "role": "assistant", "content": reply}
    turn |= {"reasoning": "", "cwd": str(run.hook_input.get("cwd") or "")}
    answer = run.client.send("conversation.append", append_body(run, turn))
    if answer is not None and not note_recording(state, answer):
        state["early_reply"] = reply


def _project(entries: list[dict[str, Any]], hook_input: dict[str, Any]) -> tuple[str, str, str]:
    """(project, branch, cwd) for the brief's automatic key auto/<project>/<branch>."""
    cwd = str(hook_input.get("cwd") or "")
    branch = ""
    for entry in reversed(entries):
        cwd = cwd or str(entry.get("cwd") or "")
        branch = branch or str(entry.get("gitBranch") or "")
        if cwd and branch:
            break
    return (Path(cwd).name if cwd else ""), branch, cwd


def save_brief(run: Run, trigger: str) -> None:
    """session.brief_save with the events since the last save; event_cursor = transcript line."""
    state, entries = run.state, run.entries
    project, branch, cwd = _project(entries, run.hook_input)
    head_sha = git(cwd, "rev-parse", "HEAD")
    start = state["brief_line"]
    while start < len(entries):
        end = len(entries)
        events = events_of(entries, start, end)
        while len(events) > MAX_EVENTS_PER_SAVE:
            end = start + max(1, (end - start) // 2)
            events = events_of(entries, start, end)
        if events:
            body: dict[str, Any] = {
                "session_id": run.session_id,
                "user_id": run.cfg.user_id,
                "project": project,
                "branch": branch,
                "trigger": trigger,
                "events": events,
                "event_cursor": str(end),
            }
            if head_sha:
                body["head_sha"] = head_sha
            answer = run.client.send("session.brief_save", body)
            if answer is not None:
                log(run.cfg, f"{trigger} brief {answer.get('brief_key')}: {_outcome(answer)}")
        start = end
        state["brief_line"] = end
        state.save()


def _outcome(answer: dict[str, Any]) -> str:
    if answer.get("changed"):
        return f"revision {answer.get('revision')} ({answer.get('author')})"
    return f"unchanged ({answer.get('reason')})"


def hand_to_extraction(run: Run) -> None:
    """memory.set_from_messages(defer=true) with the turns not yet handed over, tagged as a
    coding capture, with what the session's Loom tools served."""
    state, entries = run.state, run.entries
    turns = turns_of(entries)
    new = [t for t in turns if t["line"] >= state["extract_line"]]
    recalled_keys, session_values = served_by_loom(entries)
    first = len(turns) - len(new)
    for i in range(0, len(new), MAX_MESSAGES_PER_EXTRACTION):
        batch = new[i : i + MAX_MESSAGES_PER_EXTRACTION]
        before = turns[max(0, first + i - LAST_MESSAGES) : first + i]
        answer = run.client.send(
            "memory.set_from_messages",
            {
                "session_id": run.session_id,
                "user_id": run.cfg.user_id,
                "messages": [_message(t) for t in batch],
                "last_messages": [_message(t) for t in before],
                "extra_tags": [SOURCE_TAG],
                "recalled_keys": recalled_keys,
                "session_values": session_values,
                "defer": True,
            },
        )
        state["extract_line"] = batch[-1]["line"] + 1
        state.save()  # not idempotent on the server: never send a batch twice
        if answer is not None:
            log(run.cfg, f"extraction queued {answer.get('queue_id')} ({len(batch)} turns)")
    state["extract_line"] = max(state["extract_line"], len(entries))


def _message(turn: dict[str, Any]) -> dict[str, Any]:
    message = {"role": turn["role"], "content": turn["content"][:200_000]}
    if turn["ts"]:
        message["timestamp"] = turn["ts"]
    return message


def record_observations(run: Run) -> None:
    """observe.record each tool action not yet recorded, then observe.crystallize."""
    state, entries = run.state, run.entries
    who = {"session_id": run.session_id, "user_id": run.cfg.user_id}
    recorded = 0
    for line, body in observations_of(entries, state["observe_line"]):
        recorded += run.client.send("observe.record", {**who, **body}) is not None
        state["observe_line"] = line + 1
        state.save()  # observe.record is not idempotent: keep the cursor with every write
    state["observe_line"] = max(state["observe_line"], len(entries))
    state.save()
    answer = run.client.call("observe.crystallize", who)
    log(run.cfg, f"observations: {recorded} recorded, {answer.get('observations')} crystallized")


def end_session(run: Run) -> None:
    """What a session's end sends, most valuable first: its brief and its extraction, then
    turns a Stop did not send, then tool observations."""
    run.state["ended"] = False
    save_brief(run, "session_end")
    hand_to_extraction(run)
    capture_turns(run)
    run.state.save()
    record_observations(run)
    run.state["ended"] = True
