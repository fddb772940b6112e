"""What every Loom hook run needs: its settings, its input, its log, the HTTP client, the
per-session state file and the per-session lock. Python standard library only."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

try:  # POSIX: one run per session at a time
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOG_MAX_BYTES = 1_000_000
# The plugin's userConfig values reach a hook as CLAUDE_PLUGIN_OPTION_<KEY>; LOOM_* overrides.
PLUGIN_OPTION = "CLAUDE_PLUGIN_OPTION_"

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


def _setting(env: dict[str, str], name: str, option: str = "") -> str:
    """LOOM_<NAME> when set, else the plugin option the person gave at install (if any)."""
    if env.get(name):
        return env[name]
    if option:
        for key in (PLUGIN_OPTION + option.upper(), PLUGIN_OPTION + option):
            if env.get(key, "").strip():
                return env[key].strip()
    return ""


class Config:
    """Everything comes from the environment (see the README's "Capturing sessions")."""

    def __init__(self, env: dict[str, str]):
        state_home = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        base_url = _setting(env, "LOOM_BASE_URL", "base_url") or env.get("LOOM_URL")
        self.base_url = (base_url or "http://127.0.0.1:7777").rstrip("/")
        self.token = _setting(env, "LOOM_TOKEN", "token")
        self.org = env.get("LOOM_ORG", "")
        self.namespace = _setting(env, "LOOM_NAMESPACE", "namespace") or "default"
        self.agent = env.get("LOOM_AGENT") or "claude-code"
        self.user_id = env.get("LOOM_USER_ID") or "-"
        self.capture = _flag(env.get("LOOM_CAPTURE_CONVERSATIONS"), True)
        self.timeout = _number(env.get("LOOM_HOOK_TIMEOUT"), 5.0)
        self.budget = _number(env.get("LOOM_HOOK_BUDGET"), 20.0)
        self.recheck_seconds = _number(env.get("LOOM_RECORDING_RECHECK_SECONDS"), 300.0)
        self.lock_wait = _number(env.get("LOOM_HOOK_LOCK_WAIT"), 10.0)
        self.input_wait = _number(env.get("LOOM_HOOK_INPUT_WAIT"), 5.0)
        self.recall_tokens = int(
            _number(_setting(env, "LOOM_RECALL_TOKENS", "recall_tokens"), 1500)
        )
        self.recall_budget = _number(env.get("LOOM_RECALL_BUDGET"), 4.0)
        self.orphan_after = _number(env.get("LOOM_ORPHAN_AFTER_SECONDS"), 600.0)
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


def git(cwd: str, *args: str) -> str:
    """What `git -C cwd ARGS` prints, or "" (no git, not a checkout, 2 s passed)."""
    if not cwd:
        return ""
    try:
        done = subprocess.run(["git", "-C", cwd, *args], capture_output=True, text=True, timeout=2)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


# ---- the hook's input ----------------------------------------------------------------------


def read_hook_input(wait: float) -> str:
    """The hook input: one JSON object, taken as soon as it is whole. A client may leave stdin
    open after writing it, so end of input is never waited for; at most `wait` seconds pass
    between reads before what arrived is taken as it is."""
    if os.name != "posix":  # pragma: no cover - no select() on Windows pipes
        return sys.stdin.read()
    fd = sys.stdin.fileno()
    buffer = b""
    decoder = json.JSONDecoder()
    while True:
        ready, _, _ = select.select([fd], [], [], wait)
        chunk = os.read(fd, 65536) if ready else b""
        if not chunk:  # end of input, or nothing more within the wait
            return buffer.decode("utf-8", "replace")
        buffer += chunk
        text = buffer.decode("utf-8", "ignore").lstrip()
        with contextlib.suppress(ValueError):
            _, end = decoder.raw_decode(text)
            return text[:end]


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

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def call(self, op: str, body: dict[str, Any]) -> dict[str, Any]:
        remaining = self.remaining()
        if remaining <= 0.05:
            raise LoomUnavailable(f"{op}: the hook's time budget is spent")
        full = {"namespace": self.cfg.namespace, "agent": self.cfg.agent, **body}
        if self.cfg.org:
            full["org"] = self.cfg.org
        headers = {"Content-Type": "application/json"}
        if self.cfg.token:
            headers["Authorization"] = f"Bearer {self.cfg.token}"
        data = json.dumps(storable(full)).encode("utf-8")
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


def storable(value: Any) -> Any:
    """PostgreSQL text holds no U+0000 and no lone UTF-16 surrogate (half an emoji a cut
    string leaves); a transcript can hold both. They are removed, rather than the server
    refusing the whole turn, brief or extraction."""
    if isinstance(value, str):
        return value.encode("utf-8", "ignore").decode("utf-8").replace("\x00", "")
    if isinstance(value, list):
        return [storable(v) for v in value]
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    return value


# ---- per-session state ---------------------------------------------------------------------


def safe_name(session_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:120] or "unknown"


def read_json(path: Path) -> dict[str, Any]:
    """A small JSON object from disk, or {} when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Whole or not at all: a run killed mid-write leaves the previous file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


class State:
    """Cursors (transcript line indexes) per session, the cached recording verdict, and where
    the session's transcript is (so a later hook can finish a session that ended badly)."""

    def __init__(self, cfg: Config, session_id: str):
        self.path = cfg.state_dir / f"{safe_name(session_id)}.json"
        self.data: dict[str, Any] = {
            "session_id": session_id,
            "append_line": 0,
            "brief_line": 0,
            "extract_line": 0,
            "observe_line": 0,
            "recording": None,
            "early_reply": "",
            "ended": False,
        }
        self.data.update(read_json(self.path))

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.data[key] = value

    def save(self) -> None:
        write_json(self.path, self.data)


@contextlib.contextmanager
def session_lock(cfg: Config, session_id: str, wait: float):
    """Yield True once this run holds the session, waiting up to `wait` seconds for another
    run of it to finish; False when that run is still busy after the wait."""
    if fcntl is None:
        yield True
        return
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    with (cfg.state_dir / f"{safe_name(session_id)}.lock").open("w") as handle:
        deadline = time.monotonic() + max(0.0, wait)
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.1)
        yield True
