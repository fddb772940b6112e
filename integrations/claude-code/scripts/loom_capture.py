#!/usr/bin/env python3
"""Loom capture for Claude Code: the plugin's hooks and the loom-session skill's commands.

    loom_capture.py session-start | user-prompt-submit | stop | precompact | session-end
                                                          (a hook; one JSON object on stdin)
    loom_capture.py briefs [--project P]                  (the skill: list briefs)
    loom_capture.py brief KEY                             (the skill: load one)

Python standard library only, so it runs on any machine with python3. A hook always exits 0:
a Loom that is down or slow costs at most the configured timeouts, and errors go to the log
file, never into the session. Progress is kept per session in a small state file, so a hook
run again resumes where the last one stopped and never sends a turn twice; a session whose
end work did not fit its hook, or that ended without SessionEnd, is queued on disk and
finished by the next hook.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from loom_hook_io import (
    Client,
    Config,
    LoomRefused,
    LoomUnavailable,
    State,
    log,
    read_hook_input,
    read_json,
    safe_name,
    session_lock,
    write_json,
)
from loom_recall import prompt_recall, session_start_recall
from loom_transcript import (
    events_of,
    observations_of,
    read_transcript,
    served_by_loom,
    turns_of,
)

SOURCE_TAG = "source:claude-code"
MAX_EVENTS_PER_SAVE = 4000  # session.brief_save's bound
MAX_MESSAGES_PER_EXTRACTION = 400  # memory.set_from_messages' bound
LAST_MESSAGES = 20

# ---- what each hook does -------------------------------------------------------------------


def capture_turns(
    cfg: Config, client: Client, state: State, session_id: str, entries: list[dict[str, Any]]
) -> None:
    """conversation.append each new turn, msg_id = its uuid. A turn the namespace refused
    (logging_disabled) stays unsent, and so do the ones after it: they go once recording is
    on. The capture switch turned off is the person's choice: those turns are never sent."""
    if not cfg.capture:
        state["append_line"] = max(state["append_line"], len(entries))
        return
    for turn in turns_of(entries, state["append_line"]):
        if recording_known_off(cfg, state):
            return
        if is_early_reply(state, turn):
            state["early_reply"] = ""  # sent by an earlier Stop from the hook input
        else:
            answer = client.send("conversation.append", append_body(cfg, session_id, turn))
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


def append_body(cfg: Config, session_id: str, turn: dict[str, Any]) -> dict[str, Any]:
    metadata = {"source": "claude-code", "session_id": session_id}
    for field in ("ts", "cwd", "git_branch"):
        if turn.get(field):
            metadata[field] = turn[field]
    return {
        "thread_id": session_id,
        "msg_id": turn["msg_id"],
        "role": turn["role"],
        "content": turn["content"],
        "reasoning": turn["reasoning"],
        "user_id": cfg.user_id,
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


def send_early_reply(
    cfg: Config,
    client: Client,
    state: State,
    session_id: str,
    entries: list[dict[str, Any]],
    hook_input: dict[str, Any],
) -> None:
    """Stop: the transcript file can be one reply behind when the hook runs; the input's
    last_assistant_message holds that reply. It is sent now, and its line in the file is
    skipped when the file catches up."""
    reply = str(hook_input.get("last_assistant_message") or "").strip()
    caught_up = state["append_line"] >= len(entries) and not recording_known_off(cfg, state)
    if not reply or not cfg.capture or not caught_up or reply == state["early_reply"]:
        return
    if _reply_in_transcript(entries, reply):
        return
    digest = hashlib.sha256(f"{session_id}\x1f{reply}".encode()).hexdigest()[:32]
    turn = {"msg_id": f"reply-{digest}", "role": "assistant", "content": reply}
    turn |= {"reasoning": "", "cwd": str(hook_input.get("cwd") or "")}
    answer = client.send("conversation.append", append_body(cfg, session_id, turn))
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


def _head_sha(cwd: str) -> str:
    if not cwd:
        return ""
    try:
        done = subprocess.run(
            ["git", "-C", cwd, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=2
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def save_brief(
    cfg: Config,
    client: Client,
    state: State,
    session_id: str,
    entries: list[dict[str, Any]],
    trigger: str,
    hook_input: dict[str, Any],
) -> None:
    """session.brief_save with the events since the last save; event_cursor = transcript line."""
    project, branch, cwd = _project(entries, hook_input)
    head_sha = _head_sha(cwd)
    start = state["brief_line"]
    while start < len(entries):
        end = len(entries)
        events = events_of(entries, start, end)
        while len(events) > MAX_EVENTS_PER_SAVE:
            end = start + max(1, (end - start) // 2)
            events = events_of(entries, start, end)
        if events:
            body: dict[str, Any] = {
                "session_id": session_id,
                "user_id": cfg.user_id,
                "project": project,
                "branch": branch,
                "trigger": trigger,
                "events": events,
                "event_cursor": str(end),
            }
            if head_sha:
                body["head_sha"] = head_sha
            answer = client.send("session.brief_save", body)
            if answer is not None:
                log(cfg, f"{trigger} brief {answer.get('brief_key')}: {_outcome(answer)}")
        start = end
        state["brief_line"] = end
        state.save()


def _outcome(answer: dict[str, Any]) -> str:
    if answer.get("changed"):
        return f"revision {answer.get('revision')} ({answer.get('author')})"
    return f"unchanged ({answer.get('reason')})"


def hand_to_extraction(
    cfg: Config, client: Client, state: State, session_id: str, entries: list[dict[str, Any]]
) -> None:
    """memory.set_from_messages(defer=true) with the turns not yet handed over, tagged as a
    coding capture, with what the session's Loom tools served."""
    turns = turns_of(entries)
    new = [t for t in turns if t["line"] >= state["extract_line"]]
    recalled_keys, session_values = served_by_loom(entries)
    first = len(turns) - len(new)
    for i in range(0, len(new), MAX_MESSAGES_PER_EXTRACTION):
        batch = new[i : i + MAX_MESSAGES_PER_EXTRACTION]
        before = turns[max(0, first + i - LAST_MESSAGES) : first + i]
        answer = client.send(
            "memory.set_from_messages",
            {
                "session_id": session_id,
                "user_id": cfg.user_id,
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
            log(cfg, f"extraction queued {answer.get('queue_id')} ({len(batch)} turns)")
    state["extract_line"] = max(state["extract_line"], len(entries))


def _message(turn: dict[str, Any]) -> dict[str, Any]:
    message = {"role": turn["role"], "content": turn["content"][:200_000]}
    if turn["ts"]:
        message["timestamp"] = turn["ts"]
    return message


def record_observations(
    cfg: Config, client: Client, state: State, session_id: str, entries: list[dict[str, Any]]
) -> None:
    """observe.record each tool action not yet recorded, then observe.crystallize."""
    recorded = 0
    for line, body in observations_of(entries, state["observe_line"]):
        body = {"session_id": session_id, "user_id": cfg.user_id, **body}
        recorded += client.send("observe.record", body) is not None
        state["observe_line"] = line + 1
        state.save()  # observe.record is not idempotent: keep the cursor with every write
    state["observe_line"] = max(state["observe_line"], len(entries))
    state.save()
    answer = client.call("observe.crystallize", {"session_id": session_id, "user_id": cfg.user_id})
    log(cfg, f"observations: {recorded} recorded, {answer.get('observations')} crystallized")


def primer(cfg: Config, client: Client) -> str:
    """SessionStart: name the saved briefs; loading another one is the person's choice."""
    answer = client.call("session.brief_list", {"user_id": cfg.user_id, "limit": 10})
    rendered = str(answer.get("rendered") or "").strip()
    if not rendered:
        return ""
    return (
        f"Loom holds saved session briefs in namespace {cfg.namespace!r} (newest first):\n"
        f"{rendered}\n"
        "Only the brief of this project and branch, if any, is loaded above. If the person"
        " wants to resume another, they run /loom:loom-session <brief_key>; do not load a"
        " brief on your own."
    )


def start_context(cfg: Config, hook_input: dict[str, Any], session_id: str) -> str:
    """SessionStart: what Loom recalls for the session, then the saved briefs' names. Each
    part fails open on its own, within the recall's time."""
    client = Client(cfg, min(cfg.budget, cfg.recall_budget))
    recalled = briefs = ""
    try:
        recalled = session_start_recall(cfg, client, hook_input, session_id)
    except (LoomUnavailable, LoomRefused) as exc:
        log(cfg, f"session-start recall: {exc}")
    try:
        briefs = primer(cfg, client)
    except (LoomUnavailable, LoomRefused) as exc:
        log(cfg, f"session-start briefs: {exc}")
    if recalled:
        recalled = f"Loom (namespace {cfg.namespace!r}) recalls for this session:\n\n{recalled}"
    return "\n\n".join(part for part in (recalled, briefs) if part)


def end_session(
    cfg: Config,
    client: Client,
    state: State,
    session_id: str,
    entries: list[dict[str, Any]],
    hook_input: dict[str, Any],
) -> None:
    """What a session's end sends, most valuable first: its brief and its extraction, then
    turns a Stop did not send, then tool observations."""
    state["ended"] = False
    save_brief(cfg, client, state, session_id, entries, "session_end", hook_input)
    hand_to_extraction(cfg, client, state, session_id, entries)
    capture_turns(cfg, client, state, session_id, entries)
    state.save()
    record_observations(cfg, client, state, session_id, entries)
    state["ended"] = True


# ---- sessions left unfinished: queued on disk, finished by the next hook -------------------


def _pending(cfg: Config) -> Path:
    return cfg.state_dir / "pending"


def queue_end(cfg: Config, session_id: str, transcript: str, cwd: str) -> None:
    job = {"session_id": session_id, "transcript_path": transcript, "cwd": cwd}
    write_json(_pending(cfg) / f"{safe_name(session_id)}.json", job)


def queue_orphans(cfg: Config, current: str) -> None:
    """SessionStart: a session whose transcript has been idle `orphan_after` seconds and that
    never ran its end work (a crash, a kill, a closed terminal) is queued for it."""
    now = time.time()
    for path in cfg.state_dir.glob("*.json"):
        known = read_json(path)
        session_id, transcript = known.get("session_id"), known.get("transcript_path")
        if not session_id or session_id == current or known.get("ended") or not transcript:
            continue
        try:
            idle = now - Path(transcript).stat().st_mtime
        except OSError:
            idle = now - path.stat().st_mtime
        if idle >= cfg.orphan_after:
            log(cfg, f"session {session_id} ended without SessionEnd; queued")
            queue_end(cfg, str(session_id), str(transcript), str(known.get("cwd") or ""))


def finish_pending(cfg: Config, client: Client, current: str) -> None:
    """The queued sessions' end work, oldest first, while this run's time lasts; a session
    another run holds is left for later."""
    jobs = sorted(_pending(cfg).glob("*.json"), key=lambda p: p.stat().st_mtime)
    for path in jobs:
        job = read_json(path)
        session_id = str(job.get("session_id") or "")
        if not session_id or session_id == current:
            continue
        with session_lock(cfg, session_id, 0) as held:
            if not held:
                continue
            state = State(cfg, session_id)
            entries = read_transcript(str(job.get("transcript_path") or ""))
            try:
                end_session(cfg, client, state, session_id, entries, job)
            finally:
                state.save()
        path.unlink(missing_ok=True)
        log(cfg, f"session {session_id}: end work finished by a later hook")


def finish_left_work(cfg: Config, event: str, current: str, started: float) -> None:
    """After the hook's own work: the queued sessions, with what is left of its budget."""
    try:
        if event == "session-start":
            queue_orphans(cfg, current)
        if _pending(cfg).is_dir():
            spent = time.monotonic() - started
            finish_pending(cfg, Client(cfg, cfg.budget - spent), current)
    except (LoomUnavailable, LoomRefused) as exc:
        log(cfg, f"{event}: queued sessions wait: {exc}")
    except Exception as exc:  # a hook never breaks the session
        log(cfg, f"{event}: queued sessions: {type(exc).__name__}: {exc}")


# ---- one hook run --------------------------------------------------------------------------


def capture(
    event: str,
    cfg: Config,
    client: Client,
    state: State,
    entries: list[dict[str, Any]],
    hook_input: dict[str, Any],
) -> None:
    session_id = state["session_id"]
    if event == "session-end":
        end_session(cfg, client, state, session_id, entries, hook_input)
        return
    state["ended"] = False
    if event == "precompact":
        save_brief(cfg, client, state, session_id, entries, "precompact", hook_input)
    capture_turns(cfg, client, state, session_id, entries)
    if event == "stop":
        send_early_reply(cfg, client, state, session_id, entries, hook_input)


def run_hook(event: str, cfg: Config, hook_input: dict[str, Any]) -> str:
    """One hook run; returns what to print on stdout (SessionStart, UserPromptSubmit)."""
    session_id = str(hook_input.get("session_id") or "")
    transcript = str(hook_input.get("transcript_path") or "")
    cwd = str(hook_input.get("cwd") or "")
    if event in ("session-start", "user-prompt-submit"):
        return recall_output(event, cfg, hook_input, session_id)
    if not session_id or not transcript:
        log(cfg, f"{event}: no session_id or transcript_path in the hook input")
        return ""
    if event == "session-end":  # on disk first: should this run not finish, the next one will
        queue_end(cfg, session_id, transcript, cwd)
    client = Client(cfg, cfg.budget)
    with session_lock(cfg, session_id, min(cfg.lock_wait, client.remaining() - 1)) as held:
        if not held:
            log(cfg, f"{event} {session_id}: another run still holds this session; left for later")
            return ""
        state = State(cfg, session_id)
        state["transcript_path"], state["cwd"] = transcript, cwd or state.data.get("cwd", "")
        try:
            capture(event, cfg, client, state, read_transcript(transcript), hook_input)
        finally:
            state.save()
    if event == "session-end":
        (_pending(cfg) / f"{safe_name(session_id)}.json").unlink(missing_ok=True)
    return ""


def recall_output(event: str, cfg: Config, hook_input: dict[str, Any], session_id: str) -> str:
    if event == "session-start":
        context, name = start_context(cfg, hook_input, session_id), "SessionStart"
    else:
        client = Client(cfg, min(cfg.budget, cfg.recall_budget))
        context, name = prompt_recall(cfg, client, hook_input, session_id), "UserPromptSubmit"
    if not context:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}})


HOOKS = ("stop", "precompact", "session-end", "session-start", "user-prompt-submit")


def hook_main(event: str, env: dict[str, str], stdin: str) -> int:
    started = time.monotonic()
    cfg = Config(env)
    session_id = ""
    try:
        hook_input = json.loads(stdin or "{}")
        if not isinstance(hook_input, dict):
            raise ValueError("the hook input is not a JSON object")
        session_id = str(hook_input.get("session_id") or "")
        out = run_hook(event, cfg, hook_input)
        if out:
            print(out, flush=True)
    except (LoomUnavailable, LoomRefused) as exc:
        log(cfg, f"{event}: {exc}")
    except BaseException as exc:  # a hook never breaks the session
        log(cfg, f"{event}: {type(exc).__name__}: {exc}")
    if event != "user-prompt-submit":  # a prompt waits for its hook: nothing else there
        finish_left_work(cfg, event, session_id, started)
    return 0


# ---- the loom-session skill's commands -----------------------------------------------------


def skill_main(args: list[str], env: dict[str, str]) -> int:
    cfg = Config(env)
    client = Client(cfg, cfg.budget)
    try:
        if args[0] == "briefs":
            project = args[2] if len(args) > 2 and args[1] == "--project" else ""
            body = {"user_id": cfg.user_id, "limit": 20, "project": project}
            rendered = client.call("session.brief_list", body).get("rendered") or ""
            print(rendered or f"No saved briefs in namespace {cfg.namespace!r}.")
            return 0
        if args[0] == "brief" and len(args) > 1:
            body = {"user_id": cfg.user_id, "brief_key": args[1], "full": True}
            answer = client.call("session.brief_get", body)
            if not answer.get("found"):
                print(f"No brief {args[1]!r} in namespace {cfg.namespace!r}.", file=sys.stderr)
                return 1
            print(answer.get("rendered") or "")
            return 0
    except (LoomUnavailable, LoomRefused) as exc:
        print(f"Loom at {cfg.base_url}: {exc}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[1] in HOOKS:
        env = dict(os.environ)
        try:
            stdin = read_hook_input(Config(env).input_wait)
        except (OSError, ValueError):
            stdin = ""
        return hook_main(argv[1], env, stdin)
    if len(argv) >= 2:
        return skill_main(argv[1:], dict(os.environ))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
