"""The Cursor hook's second round, against the real server: recall at sessionStart, briefs and
extraction at preCompact and sessionEnd, plain-text transcripts, lines of unknown roles,
stdin left open, and merging its hooks into a hooks.json the person already has."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.functional.test_capture import (
    CONVERSATION,
    CURSOR_HOOK,
    CURSOR_TURNS,
    FIXTURES,
    ROOT,
    cursor_hook,
    cursor_stop,
    environment,
    namespace,
    post,
    recorded,
)
from tests.live_server import live_server

THREAD = f"cursor-{CONVERSATION}"
MERGE = ROOT / "integrations" / "cursor" / "merge-hooks.py"


@pytest.fixture(scope="module")
def server(database_url):
    with live_server(database_url) as base:
        yield base


def checkout(path: Path, branch: str) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", branch, str(path)], check=True)
    return path


def test_session_start_adds_what_loom_knows_for_the_workspace(server, tmp_path):
    """GIVEN a memory of the cursor agent and a brief of the workspace's project and branch
    WHEN Cursor's sessionStart hook runs THEN it answers additional_context holding both."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path)
    post(server, "memory.set", namespace=ns, agent="cursor", user_id="-",
         key="notify/retry_policy", value="Webhooks retry only 429 and 5xx.")  # fmt: skip
    post(server, "session.brief_save", namespace=ns, agent="cursor", user_id="-",
         session_id="c-1", project="notify", branch="retry", trigger="session_end",
         events=[{"kind": "user", "text": "Add a retry to the webhook sender."}])  # fmt: skip
    roots = [str(checkout(tmp_path / "notify", "retry"))]
    done = cursor_hook(env, "sessionStart", None, workspace_roots=roots, is_background_agent=False)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["additional_context"]
    assert "Webhooks retry only 429 and 5xx." in context
    assert "# Session brief auto/notify/retry" in context


def test_session_start_fails_open_within_its_budget(server, tmp_path):
    """GIVEN Loom down WHEN sessionStart runs THEN it answers {} and exits 0 in time."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = environment(server, "any", tmp_path, LOOM_BASE_URL=f"http://127.0.0.1:{port}")
    started = time.monotonic()
    done = cursor_hook(env, "sessionStart", None)
    assert (done.returncode, done.stdout) == (0, "{}\n")
    assert time.monotonic() - started < 10


def test_precompact_and_session_end_save_briefs_and_queue_extraction_once(server, tmp_path):
    """GIVEN Cursor's transcript of a workspace on branch `retry` WHEN preCompact, then
    sessionEnd (twice) run THEN the brief auto/notify/retry is saved with each trigger, every
    turn is stored, and one deferred extraction holds the five turns, tagged source:cursor."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path)
    roots = [str(checkout(tmp_path / "notify", "retry"))]
    transcript = FIXTURES / "cursor-transcript.jsonl"
    cursor_hook(env, "preCompact", transcript, workspace_roots=roots, trigger="auto")
    brief = post(
        server, "session.brief_get", namespace=ns, agent="*", brief_key="auto/notify/retry"
    )
    assert (brief["found"], brief["trigger"]) == (True, "precompact")
    for _ in range(2):
        done = cursor_hook(env, "sessionEnd", transcript, workspace_roots=roots, reason="completed")
        assert (done.returncode, done.stdout) == (0, "{}\n")
    brief = post(
        server, "session.brief_get", namespace=ns, agent="*", brief_key="auto/notify/retry"
    )
    assert brief["source_sessions"] == [THREAD]
    assert recorded(server, ns, THREAD) == CURSOR_TURNS
    batches = post(server, "memory.extraction_status", namespace=ns, agent="*")["batches"]
    assert [(b["status"], b["sizes"]["messages"]) for b in batches] == [("pending", 5)]


def test_session_end_queues_extraction_while_recording_is_off(server, tmp_path):
    """GIVEN a namespace that does not record WHEN sessionEnd runs THEN no turn is stored but
    the session still goes to deferred extraction (it comes first)."""
    ns = namespace(server, recording=False)
    env = environment(server, ns, tmp_path)
    cursor_hook(env, "sessionEnd", FIXTURES / "cursor-transcript.jsonl", reason="completed")
    assert recorded(server, ns, THREAD) == []
    batches = post(server, "memory.extraction_status", namespace=ns, agent="*")["batches"]
    assert [b["sizes"]["messages"] for b in batches] == [5]


def test_a_plain_text_transcript_lands_its_turns(server, tmp_path):
    """GIVEN Cursor's plain-text agent transcript WHEN the stop hook runs THEN each `user:`
    and `A:` block is a turn, without the thinking and tool parts."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path)
    assert cursor_stop(env, FIXTURES / "cursor-transcript.txt").returncode == 0
    stored = recorded(server, ns, THREAD)
    assert [role for role, _ in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[1][1].endswith("retries 429 and 5xx answers up to three times.")
    assert not any("[Tool" in text or "Thinking" in text for _, text in stored)


def test_a_line_of_an_unknown_role_is_skipped(server, tmp_path):
    """GIVEN Cursor's transcript with a line of a role no turn has WHEN the stop hook runs
    THEN every turn lands and that line is left out."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path)
    lines = (FIXTURES / "cursor-transcript.jsonl").read_text().splitlines(keepends=True)
    odd = json.dumps({"role": "checkpoint", "message": {"content": [{"type": "text",
                      "text": "Saved a checkpoint."}]}}) + "\n"  # fmt: skip
    transcript = tmp_path / f"{CONVERSATION}.jsonl"
    transcript.write_text("".join(lines[:2] + [odd] + lines[2:]))
    assert cursor_stop(env, transcript).returncode == 0
    assert recorded(server, ns, THREAD) == CURSOR_TURNS


def test_the_hook_reads_its_input_while_stdin_stays_open(server, tmp_path):
    """GIVEN a client that writes the hook input and leaves stdin open WHEN the stop hook runs
    THEN it reads the one object, sends the turns and exits 0."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path)
    hook_input = {"conversation_id": CONVERSATION, "hook_event_name": "stop",
                  "transcript_path": str(FIXTURES / "cursor-transcript.jsonl")}  # fmt: skip
    hook = subprocess.Popen(
        ["sh", str(CURSOR_HOOK)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    assert hook.stdin is not None and hook.stdout is not None
    hook.stdin.write(json.dumps(hook_input).encode())
    hook.stdin.flush()
    try:
        assert hook.wait(timeout=20) == 0
        assert hook.stdout.read() == b"{}\n"
    finally:
        hook.kill()
        hook.stdin.close()
    assert recorded(server, ns, THREAD) == CURSOR_TURNS


def test_merging_keeps_the_persons_hooks_and_adds_loom_once(tmp_path):
    """GIVEN a hooks.json holding the person's own stop and afterFileEdit hooks WHEN the merge
    runs, twice THEN theirs are kept, Loom's entry is on each of its four events once."""
    target = tmp_path / "hooks.json"
    theirs = {"stop": [{"command": "./hooks/notify.sh"}],
              "afterFileEdit": [{"command": "./hooks/format.sh"}]}  # fmt: skip
    mine = {"version": 1, "hooks": theirs}
    target.write_text(json.dumps(mine))
    for _ in range(2):
        done = subprocess.run([sys.executable, str(MERGE), str(target)], capture_output=True)
        assert done.returncode == 0, done.stderr
    hooks = json.loads(target.read_text())["hooks"]
    ours = {"command": "./hooks/loom-session-hook.sh"}
    assert hooks["stop"] == [{"command": "./hooks/notify.sh"}, ours]
    assert hooks["afterFileEdit"] == [{"command": "./hooks/format.sh"}]
    for event in ("sessionStart", "preCompact", "sessionEnd"):
        assert hooks[event] == [ours]


def test_turns_refused_while_recording_is_off_are_sent_once_it_is_on(server, tmp_path):
    """GIVEN a namespace that does not record WHEN the stop hook runs THEN nothing is stored
    and nothing counted as sent; once recording is on, the next stop sends every turn."""
    ns = namespace(server, recording=False)
    env = environment(server, ns, tmp_path)
    cursor_stop(env, FIXTURES / "cursor-transcript.jsonl")
    assert recorded(server, ns, THREAD) == []
    post(server, "conversation.set_logging", namespace=ns, enabled=True)
    cursor_stop(env, FIXTURES / "cursor-transcript.jsonl")
    assert recorded(server, ns, THREAD) == CURSOR_TURNS
