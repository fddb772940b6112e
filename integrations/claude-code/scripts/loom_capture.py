#!/usr/bin/env python3
"""Loom capture for Claude Code: the plugin's hooks and the loom-session skill's commands.

    loom_capture.py session-start | user-prompt-submit | stop | precompact | session-end
                                                          (a hook; one JSON object on stdin)
    loom_capture.py briefs [--project P]                  (the skill: list briefs)
    loom_capture.py brief KEY                             (the skill: load one)
      both with [--base-url URL] [--namespace NS]         (the plugin's settings)

Python standard library only, so it runs on any machine with python3. A hook always exits 0:
a Loom that is down or slow costs at most the configured timeouts, and errors go to the log
file, never into the session. Progress is kept per session in a small state file, so a hook
run again resumes where the last one stopped and never sends a turn twice; a session whose
end work did not fit its hook, or that ended without SessionEnd, is queued on disk and
finished by the next hook.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from loom_hook_io import (
    PLUGIN_OPTION,
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
from loom_send import Run, capture_turns, end_session, save_brief, send_early_reply
from loom_transcript import read_transcript


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
                end_session(Run(cfg, client, state, entries, job))
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


def capture(event: str, run: Run) -> None:
    if event == "session-end":
        end_session(run)
        return
    run.state["ended"] = False
    if event == "precompact":
        save_brief(run, "precompact")
    capture_turns(run)
    if event == "stop":
        send_early_reply(run)


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
            capture(event, Run(cfg, client, state, read_transcript(transcript), hook_input))
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


def skill_options(args: list[str], env: dict[str, str]) -> argparse.Namespace | None:
    """The skill's command line. `--base-url` and `--namespace` carry the plugin's settings
    (Claude Code writes them into the skill's text; hooks get them from the environment): they
    count as the plugin's options, so LOOM_* still overrides them, and one left unfilled
    (still `${user_config...}`) is ignored."""
    parser = argparse.ArgumentParser(prog="loom_capture.py", add_help=False)
    parser.add_argument("command", choices=("briefs", "brief"))
    parser.add_argument("key", nargs="?", default="")
    for flag in ("--project", "--base-url", "--namespace"):
        parser.add_argument(flag, default="")
    try:
        opts = parser.parse_args(args)
    except SystemExit:
        return None
    for option, value in (("BASE_URL", opts.base_url), ("NAMESPACE", opts.namespace)):
        if value and "${" not in value:
            env.setdefault(PLUGIN_OPTION + option, value)
    return None if opts.command == "brief" and not opts.key else opts


def skill_main(args: list[str], env: dict[str, str]) -> int:
    opts = skill_options(args, env)
    if opts is None:
        print(__doc__, file=sys.stderr)
        return 2
    cfg = Config(env)
    client = Client(cfg, cfg.budget)
    try:
        if opts.command == "briefs":
            body = {"user_id": cfg.user_id, "limit": 20, "project": opts.project}
            rendered = client.call("session.brief_list", body).get("rendered") or ""
            print(rendered or f"No saved briefs in namespace {cfg.namespace!r}.")
            return 0
        body = {"user_id": cfg.user_id, "brief_key": opts.key, "full": True}
        answer = client.call("session.brief_get", body)
        if not answer.get("found"):
            print(f"No brief {opts.key!r} in namespace {cfg.namespace!r}.", file=sys.stderr)
            return 1
        print(answer.get("rendered") or "")
        return 0
    except (LoomUnavailable, LoomRefused) as exc:
        print(f"Loom at {cfg.base_url}: {exc}", file=sys.stderr)
        return 1


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
