"""The Claude Code plugin's second round, against the real server: recall at SessionStart and
before each prompt, and the runtime cases that used to lose a session (stdin left open, a held
lock, a transcript one reply behind, a session that ended without SessionEnd, SessionEnd's
work that does not fit its hook)."""

from __future__ import annotations

import contextlib
import fcntl
import http.server
import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.functional.test_capture import (
    HOOK,
    LINES,
    SESSION,
    UUIDS,
    Session,
    post,
    turns,
)
from tests.live_server import live_server

REPLY = json.loads(LINES[18])["message"]["content"][0]["text"]


@pytest.fixture(scope="module")
def server(database_url):
    with live_server(database_url) as base:
        yield base


def remember(server: str, namespace: str, key: str, value: str) -> None:
    """A memory of the claude-code agent's shared scope, where the hooks read."""
    post(server, "memory.set", namespace=namespace, agent="claude-code", user_id="-",
         key=key, value=value)  # fmt: skip


def context_of(done: subprocess.CompletedProcess[str], event: str) -> str:
    assert done.returncode == 0, done.stderr
    if not done.stdout:
        return ""
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == event
    return str(output["additionalContext"])


def git_checkout(path: Path, branch: str) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", branch, str(path)], check=True)
    return path


def test_session_start_adds_the_scopes_pack_and_a_prompt_adds_only_what_is_new(server, tmp_path):
    """GIVEN a namespace holding a memory, a document served to claude-code, one served to
    another bot, and briefs of this project on two branches
    WHEN SessionStart runs in a checkout of the project on one branch THEN its
    additionalContext holds the memory, the served document and that branch's brief only;
    WHEN a prompt is submitted after a second memory was written THEN the prompt's
    additionalContext holds the new memory and not what the session start gave; the same
    prompt again adds nothing."""
    s = Session(server, tmp_path, LOOM_RECALL_TOKENS="4000")
    ns, agent = s.namespace, "claude-code"
    remember(server, ns, "billing/ledger/invoice_table", "Invoices live in ledger_v2.invoices.")
    publish = {"namespace": ns, "agent": agent}
    post(server, "knowledge.publish", **publish, uri="doc://runbook", title="Billing runbook",
         text="Run the export after the ledger closes.", tags=["agent:claude-code"])  # fmt: skip
    post(server, "knowledge.publish", **publish, uri="doc://other", title="Other bot's sheet",
         text="Only the other bot reads this.", tags=["agent:other-bot"])  # fmt: skip
    s.grow(len(LINES))
    s.hook("session-end")  # the brief auto/billing/ledger-move
    post(server, "session.brief_save", namespace=ns, agent=agent, user_id="-",
         session_id="s-main", project="billing", branch="main", trigger="manual",
         events=[{"kind": "user", "text": "Release notes for the main branch."}])  # fmt: skip
    checkout = git_checkout(tmp_path / "billing", "ledger-move")

    start = context_of(s.hook("session-start", {"cwd": str(checkout)}), "SessionStart")
    assert "Invoices live in ledger_v2.invoices." in start
    assert "Billing runbook" in start and "Other bot's sheet" not in start
    assert "# Session brief auto/billing/ledger-move" in start
    assert "# Session brief auto/billing/main" not in start  # only named, with the others

    remember(server, ns, "billing/ledger/close_day", "The ledger closes on the 3rd business day.")
    prompt = {"prompt": "When does the ledger close, and where do invoices live?"}
    added = context_of(s.hook("user-prompt-submit", prompt), "UserPromptSubmit")
    assert "The ledger closes on the 3rd business day." in added
    assert "Invoices live in ledger_v2.invoices." not in added
    again = s.hook("user-prompt-submit", prompt)
    assert (again.returncode, again.stdout) == (0, "")


def test_the_recall_budget_bounds_what_session_start_adds(server, tmp_path):
    """GIVEN many memories WHEN SessionStart runs with a small recall budget THEN what it adds
    stays within it (context.pack's estimate: four bytes a token)."""
    s = Session(server, tmp_path, LOOM_RECALL_TOKENS="150")
    for n in range(20):
        remember(server, s.namespace, f"facts/f{n}", f"Fact number {n} about the ledger. " * 4)
    start = context_of(s.hook("session-start"), "SessionStart")
    assert "Fact number" in start
    assert len(start.encode()) < 150 * 4 + 200  # the pack, and one line naming the namespace


def test_a_hook_whose_stdin_stays_open_reads_one_object_and_finishes(server, tmp_path):
    """GIVEN a client that writes the hook input and never closes stdin WHEN the Stop and the
    UserPromptSubmit hooks run THEN each reads the one JSON object, does its work and exits 0
    well within the wait it would give a silent client."""
    s = Session(server, tmp_path, LOOM_HOOK_INPUT_WAIT="30")
    s.grow(len(LINES))
    for event in ("stop", "user-prompt-submit"):
        started = time.monotonic()
        hook = subprocess.Popen(
            [sys.executable, "-E", "-s", "-S", str(HOOK), event],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=s.env,
        )
        assert hook.stdin is not None
        hook.stdin.write(json.dumps(s.hook_input(event, prompt="Where?")).encode())
        hook.stdin.flush()  # and left open
        try:
            assert hook.wait(timeout=10) == 0
        finally:
            hook.kill()
            hook.stdin.close()
        assert time.monotonic() - started < 8
    assert [t["msg_id"] for t in turns(server, s.namespace)] == UUIDS


@contextlib.contextmanager
def held_lock(state_dir: Path) -> Iterator[None]:
    """The session's lock, held as another run of its hooks would hold it."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with (state_dir / f"{SESSION}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def test_a_hook_waits_for_another_run_of_its_session_then_sends(server, tmp_path):
    """GIVEN another run holding the session's lock WHEN the Stop hook runs THEN it waits
    (nothing sent while the lock is held) and, once the lock is released, sends every turn."""
    s = Session(server, tmp_path)
    s.grow(len(LINES))
    with held_lock(tmp_path / "state"):
        hook = subprocess.Popen(
            [sys.executable, "-E", "-s", "-S", str(HOOK), "stop"],
            stdin=subprocess.PIPE,
            env=s.env,
        )
        assert hook.stdin is not None
        hook.stdin.write(json.dumps(s.hook_input("stop")).encode())
        hook.stdin.close()
        time.sleep(1.5)
        assert hook.poll() is None
        assert turns(server, s.namespace) == []
    assert hook.wait(timeout=10) == 0
    assert [t["msg_id"] for t in turns(server, s.namespace)] == UUIDS


def test_the_wait_for_a_held_lock_is_bounded_and_loses_nothing(server, tmp_path):
    """GIVEN a lock that stays held WHEN the Stop hook runs with a 1 s wait THEN it exits 0
    within a few seconds, saying so in the log; the next Stop sends the turns."""
    s = Session(server, tmp_path, LOOM_HOOK_LOCK_WAIT="1")
    s.grow(len(LINES))
    with held_lock(tmp_path / "state"):
        started = time.monotonic()
        assert s.hook("stop").returncode == 0
        assert time.monotonic() - started < 5
        assert turns(server, s.namespace) == []
    assert "another run still holds this session" in s.log.read_text()
    s.hook("stop")
    assert [t["msg_id"] for t in turns(server, s.namespace)] == UUIDS


def test_a_transcript_one_reply_behind_still_sends_the_reply_once(server, tmp_path):
    """GIVEN a transcript missing the last assistant reply and a Stop input whose
    last_assistant_message holds it WHEN the Stop hook runs THEN the reply is stored; WHEN the
    file catches up and Stop runs again THEN it is not stored twice."""
    s = Session(server, tmp_path)
    s.grow(18)  # up to the person's last turn: the reply is not written yet
    s.hook("stop", {"last_assistant_message": REPLY, "stop_hook_active": False})
    stored = turns(server, s.namespace)
    assert [t["msg_id"] for t in stored] == UUIDS[:4] + [stored[4]["msg_id"]]
    assert (stored[4]["role"], stored[4]["content"]) == ("assistant", REPLY)
    s.grow(len(LINES))
    s.hook("stop", {"last_assistant_message": REPLY, "stop_hook_active": False})
    assert [t["content"] for t in turns(server, s.namespace)].count(REPLY) == 1


def test_a_session_that_ended_without_session_end_is_finished_at_the_next_start(
    server, tmp_path, pool
):
    """GIVEN a session whose Stop hooks ran but that was killed before its last Stop and its
    SessionEnd WHEN another session starts THEN the killed session's turns are all sent, its
    brief saved and its extraction queued, once (a later start does it no more)."""
    s = Session(server, tmp_path, LOOM_ORPHAN_AFTER_SECONDS="0")
    s.grow(15)
    s.hook("stop")
    s.grow(len(LINES))  # the last turns, written before the kill; no Stop, no SessionEnd
    other = tmp_path / "other-session.jsonl"
    other.write_text("")
    next_start = {"session_id": "other-session", "transcript_path": str(other), "source": "startup"}
    for _ in range(2):
        assert s.hook("session-start", next_start).returncode == 0
    assert [t["msg_id"] for t in turns(server, s.namespace)] == UUIDS
    batches = post(server, "memory.extraction_status", namespace=s.namespace, agent="*")
    assert [(b["status"], b["sizes"]["messages"]) for b in batches["batches"]] == [("pending", 5)]
    brief = post(server, "session.brief_get", namespace=s.namespace, agent="*", project="billing")
    assert brief["found"] and brief["trigger"] == "session_end"


def test_a_session_still_in_use_elsewhere_is_not_ended_by_another_start(server, tmp_path):
    """GIVEN a session whose transcript was written a moment ago (open in another window)
    WHEN another session starts with the default idle time THEN the first is left alone: no
    extraction queued, no brief saved for it."""
    s = Session(server, tmp_path)
    s.grow(len(LINES))
    s.hook("stop")
    other = tmp_path / "other-session.jsonl"
    other.write_text("")
    s.hook("session-start", {"session_id": "other-session", "transcript_path": str(other)})
    batches = post(server, "memory.extraction_status", namespace=s.namespace, agent="*")
    assert batches["batches"] == []
    assert post(server, "session.brief_list", namespace=s.namespace, agent="*")["briefs"] == []


class CutOffProxy(http.server.ThreadingHTTPServer):
    """Forwards calls to Loom, noting each op, until `answers` calls were answered; after that
    it holds every call unanswered, as a network that drops out would."""

    def __init__(self, target: str, answers: int):
        self.target, self.answers, self.ops = target, answers, []  # type: ignore[var-annotated]
        self.released = threading.Event()
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    server: CutOffProxy

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        op = self.path.rsplit("/", 1)[-1]
        if len(self.server.ops) >= self.server.answers:
            self.server.released.wait(10)
            return
        self.server.ops.append(op)
        request = urllib.request.Request(
            self.server.target + self.path, data=body, method="POST",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as answer:
            data = answer.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_session_end_sends_brief_and_extraction_first_and_queues_the_rest(server, tmp_path, pool):
    """GIVEN a network that answers SessionEnd's first two calls and then drops out
    WHEN SessionEnd runs THEN those two calls were the brief and the extraction, the hook
    exits 0 within its time, and the rest (the tool observations) waits on disk;
    WHEN another session's Stop hook runs later THEN the observations are recorded."""
    s = Session(server, tmp_path, recording=False)
    s.grow(len(LINES))
    proxy = CutOffProxy(server, answers=2)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        started = time.monotonic()
        ended = s.hook("session-end", LOOM_BASE_URL=proxy.url, LOOM_HOOK_TIMEOUT="1")
        assert ended.returncode == 0
        assert time.monotonic() - started < 8
        assert proxy.ops == ["session.brief_save", "memory.set_from_messages"]
    finally:
        proxy.released.set()
        proxy.shutdown()
    assert list((tmp_path / "state" / "pending").glob("*.json"))
    with pool.connection() as conn:
        count = "SELECT count(*) FROM loom.observations WHERE namespace = %s"
        assert conn.execute(count, (s.namespace,)).fetchone() == (0,)
        other = tmp_path / "other.jsonl"
        other.write_text("")
        s.hook("stop", {"session_id": "other-session", "transcript_path": str(other)})
        assert conn.execute(count, (s.namespace,)).fetchone() == (4,)
    assert not list((tmp_path / "state" / "pending").glob("*.json"))
    batches = post(server, "memory.extraction_status", namespace=s.namespace, agent="*")
    assert len(batches["batches"]) == 1  # the extraction was not handed over twice
