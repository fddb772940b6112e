#!/usr/bin/env python3
"""Loom capture for Claude Code: the plugin's hooks and the loom-session skill's commands.

    loom_capture.py stop | precompact | session-end | session-start   (a hook; JSON on stdin)
    loom_capture.py briefs [--project P]                              (the skill: list briefs)
    loom_capture.py brief KEY                                         (the skill: load one)

Python standard library only, so it runs on any machine with python3. A hook always exits 0:
a Loom that is down or slow costs at most the configured timeouts, and errors go to the log
file, never into the session. Progress is kept per session in a small state file, so a hook
run again resumes where the last one stopped and never sends a turn twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from loom_transcript import (
    events_of,
    observations_of,
    read_transcript,
    served_by_loom,
    turns_of,
)

try:  # POSIX: one run per session at a time
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

SOURCE_TAG = "source:claude-code"
MAX_EVENTS_PER_SAVE = 4000  # session.brief_save's bound
MAX_MESSAGES_PER_EXTRACTION = 400  # memory.set_from_messages' bound
LAST_MESSAGES = 20
LOG_MAX_BYTES = 1_000_000

# ---- configuration -------------------------------------------------------------------------


def _flag(value: str | None, default: bool) -> bool:
    if value is None or not value.strip():
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def _number(value: str | None, default: float) -> float:
    try:
        return float(value) if value else default
    except ValueError:
        return default


class Config:
    """Everything comes from the environment (see the README's "Capturing sessions")."""

    def __init__(self, env: dict[str, str]):
        state_home = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        self.base_url = (
            env.get("LOOM_BASE_URL") or env.get("LOOM_URL") or "http://127.0.0.1:7777"
        ).rstrip("/")
        self.token = env.get("LOOM_TOKEN", "")
        self.org = env.get("LOOM_ORG", "")
        self.namespace = env.get("LOOM_NAMESPACE") or "default"
        self.agent = env.get("LOOM_AGENT") or "claude-code"
        self.user_id = env.get("LOOM_USER_ID") or "-"
        self.capture = _flag(env.get("LOOM_CAPTURE_CONVERSATIONS"), True)
        self.timeout = _number(env.get("LOOM_HOOK_TIMEOUT"), 5.0)
        self.budget = _number(env.get("LOOM_HOOK_BUDGET"), 20.0)
        self.recheck_seconds = _number(env.get("LOOM_RECORDING_RECHECK_SECONDS"), 300.0)
        root = Path(env.get("LOOM_HOOK_STATE_DIR") or Path(state_home) / "loom" / "claude-code")
        self.state_dir = root
        self.log_file = Path(env.get("LOOM_HOOK_LOG") or root / "hooks.log")


def log(cfg: Config, message: str) -> None:
    """One line in the log file; never raises (a hook must not fail on its own log)."""
    with contextlib.suppress(OSError):
        cfg.log_file.parent.mkdir(parents=True, exist_ok=True)
        if cfg.log_file.exists() and cfg.log_file.stat().st_size > LOG_MAX_BYTES:
            tail = cfg.log_file.read_bytes()[-LOG_MAX_BYTES // 2 :]
            cfg.log_file.write_bytes(tail)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        with cfg.log_file.open("a", encoding="utf-8") as f:
            f.write(f"{stamp} {message}\n")


# ---- the HTTP client -----------------------------------------------------------------------


class LoomUnavailable(Exception):
    """Loom did not answer in time, or answered 5xx: stop this run and try again later."""


class LoomRefused(Exception):
    """Loom refused this body as it is (400, 409, 413, 422): skip it rather than resend it
    forever. A wrong token or an unknown op is a setting to fix: that stays unavailable."""


REFUSED = (400, 409, 413, 422)


class Client:
    def __init__(self, cfg: Config, budget: float):
        self.cfg = cfg
        self.deadline = time.monotonic() + budget

    def call(self, op: str, body: dict[str, Any]) -> dict[str, Any]:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0.05:
            raise LoomUnavailable(f"{op}: the hook's time budget is spent")
        full = {"namespace": self.cfg.namespace, "agent": self.cfg.agent, **body}
        if self.cfg.org:
            full["org"] = self.cfg.org
        headers = {"Content-Type": "application/json"}
        if self.cfg.token:
            headers["Authorization"] = f"Bearer {self.cfg.token}"
        data = json.dumps(_storable(full)).encode("utf-8")
        request = urllib.request.Request(
            f"{self.cfg.base_url}/v1/{op}", data=data, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=min(self.cfg.timeout, remaining)) as r:
                return dict(json.loads(r.read() or b"{}"))
        except urllib.error.HTTPError as exc:
            detail = _error_message(exc)
            if exc.code in REFUSED:
                raise LoomRefused(f"{op}: {exc.code} {detail}") from exc
            raise LoomUnavailable(f"{op}: {exc.code} {detail}") from exc
        except (OSError, ValueError) as exc:  # URLError, timeouts, resets, bad JSON
            raise LoomUnavailable(f"{op}: {exc}") from exc

    def send(self, op: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """`call`, but a refused body is logged and skipped (None)."""
        try:
            return self.call(op, body)
        except LoomRefused as exc:
            log(self.cfg, f"skipped: {exc}")
            return None


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read())["error"]["message"])
    except Exception:
        return exc.reason if isinstance(exc.reason, str) else ""


def _storable(value: Any) -> Any:
    """PostgreSQL text holds no U+0000 and no lone UTF-16 surrogate (half an emoji a cut
    string leaves); a transcript can hold both. They are removed, rather than the server
    refusing the whole turn, brief or extraction."""
    if isinstance(value, str):
        return value.encode("utf-8", "ignore").decode("utf-8").replace("\x00", "")
    if isinstance(value, list):
        return [_storable(v) for v in value]
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    return value


# ---- per-session state ---------------------------------------------------------------------


class State:
    """Cursors (transcript line indexes) per session, and the cached recording verdict."""

    def __init__(self, cfg: Config, session_id: str):
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:120] or "unknown"
        self.path = cfg.state_dir / f"{safe}.json"
        self.data: dict[str, Any] = {
            "append_line": 0,
            "brief_line": 0,
            "extract_line": 0,
            "observe_line": 0,
            "recording": None,
        }
        with contextlib.suppress(OSError, ValueError):
            self.data.update(json.loads(self.path.read_text(encoding="utf-8")))

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.data[key] = value

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data), encoding="utf-8")
        os.replace(tmp, self.path)


@contextlib.contextmanager
def session_lock(cfg: Config, session_id: str):
    """Yield True when this run holds the session; False when another run is still busy."""
    if fcntl is None:
        yield True
        return
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:120] or "unknown"
    with (cfg.state_dir / f"{safe}.lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True


# ---- what each hook does -------------------------------------------------------------------


def capture_turns(
    cfg: Config, client: Client, state: State, session_id: str, entries: list[dict[str, Any]]
) -> None:
    """conversation.append each new turn, msg_id = its uuid; skip while recording is off."""
    if not cfg.capture:  # switched off: these turns are not captured, now or later
        state["append_line"] = max(state["append_line"], len(entries))
        return
    for turn in turns_of(entries, state["append_line"]):
        verdict = state["recording"]
        fresh = verdict and time.time() - verdict["checked"] < cfg.recheck_seconds
        if fresh and not verdict["on"]:
            state["append_line"] = turn["line"] + 1  # the owner said no: not recorded, ever
            continue
        metadata = {"source": "claude-code", "session_id": session_id}
        for field in ("ts", "cwd", "git_branch"):
            if turn[field]:
                metadata[field] = turn[field]
        answer = client.send(
            "conversation.append",
            {
                "thread_id": session_id,
                "msg_id": turn["msg_id"],
                "role": turn["role"],
                "content": turn["content"],
                "reasoning": turn["reasoning"],
                "user_id": cfg.user_id,
                "metadata": metadata,
            },
        )
        off = answer is not None and answer.get("reason") == "logging_disabled"
        if answer is not None and (not fresh or off):
            state["recording"] = {"on": not off, "checked": time.time()}
        state["append_line"] = turn["line"] + 1
    state["append_line"] = max(state["append_line"], len(entries))


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


def primer(cfg: Config, client: Client, hook_input: dict[str, Any]) -> str:
    """SessionStart: name the saved briefs; loading one is the person's choice."""
    answer = client.call("session.brief_list", {"user_id": cfg.user_id, "limit": 10})
    rendered = str(answer.get("rendered") or "").strip()
    if not rendered:
        return ""
    return (
        f"Loom holds saved session briefs in namespace {cfg.namespace!r} (newest first):\n"
        f"{rendered}\n"
        "None is loaded. If the person wants to resume one, they run /loom:loom-session"
        " <brief_key>; do not load a brief on your own."
    )


def run_hook(event: str, cfg: Config, hook_input: dict[str, Any]) -> str:
    """One hook run; returns what to print on stdout (only SessionStart prints)."""
    session_id = str(hook_input.get("session_id") or "")
    transcript = str(hook_input.get("transcript_path") or "")
    if event == "session-start":
        client = Client(cfg, min(cfg.budget, 5.0))
        context = primer(cfg, client, hook_input)
        if not context:
            return ""
        output = {"hookEventName": "SessionStart", "additionalContext": context}
        return json.dumps({"hookSpecificOutput": output})
    if not session_id or not transcript:
        log(cfg, f"{event}: no session_id or transcript_path in the hook input")
        return ""
    with session_lock(cfg, session_id) as held:
        if not held:
            log(cfg, f"{event} {session_id}: another run holds this session; skipped")
            return ""
        state = State(cfg, session_id)
        client = Client(cfg, cfg.budget)
        entries = read_transcript(transcript)
        try:
            capture_turns(cfg, client, state, session_id, entries)
        finally:
            state.save()
        if event == "precompact":
            save_brief(cfg, client, state, session_id, entries, "precompact", hook_input)
        elif event == "session-end":
            save_brief(cfg, client, state, session_id, entries, "session_end", hook_input)
            hand_to_extraction(cfg, client, state, session_id, entries)
            record_observations(cfg, client, state, session_id, entries)
        state.save()
    return ""


HOOKS = ("stop", "precompact", "session-end", "session-start")


def hook_main(event: str, env: dict[str, str], stdin: str) -> int:
    cfg = Config(env)
    try:
        hook_input = json.loads(stdin or "{}")
        if not isinstance(hook_input, dict):
            raise ValueError("the hook input is not a JSON object")
        out = run_hook(event, cfg, hook_input)
        if out:
            print(out)
    except (LoomUnavailable, LoomRefused) as exc:
        log(cfg, f"{event}: {exc}")
    except BaseException as exc:  # a hook never breaks the session
        log(cfg, f"{event}: {type(exc).__name__}: {exc}")
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
        try:
            stdin = sys.stdin.read()
        except (OSError, ValueError):
            stdin = ""
        return hook_main(argv[1], dict(os.environ), stdin)
    if len(argv) >= 2:
        return skill_main(argv[1:], dict(os.environ))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
