"""The capture integrations on recorded transcripts, against the real server: the Claude Code
plugin's hooks, the Cursor hook and the generic ingest script (both hand the file to
`loom ingest-transcript --url`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.live_server import live_server

ROOT = Path(__file__).parents[2]
PLUGIN = ROOT / "integrations" / "claude-code"
HOOK = PLUGIN / "scripts" / "loom_capture.py"
FIXTURES = ROOT / "tests" / "fixtures" / "capture"
FIXTURE = FIXTURES / "claude-code-session.jsonl"
LINES = FIXTURE.read_text().splitlines(keepends=True)
SESSION = json.loads(LINES[1])["sessionId"]
# The user and assistant turns of the fixture, by transcript line.
TURN_LINES = [1, 3, 14, 17, 18]
UUIDS = [json.loads(LINES[n])["uuid"] for n in TURN_LINES]


@pytest.fixture(scope="module")
def server(database_url):
    with live_server(database_url) as base:
        yield base


def post(server: str, op: str, **body: Any) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{server}/v1/{op}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        return dict(json.loads(resp.read()))


def turns(server: str, namespace: str) -> list[dict[str, Any]]:
    rows = post(server, "conversation.list", namespace=namespace, agent="*", thread_id=SESSION)
    return list(rows["rows"])


class Session:
    """A Claude Code session in progress: its transcript grows, its hooks run."""

    def __init__(self, server: str, tmp_path: Path, recording: bool = True, **env: str):
        self.server = server
        self.namespace = f"cc-{uuid.uuid4().hex[:10]}"
        self.transcript = tmp_path / f"{SESSION}.jsonl"
        self.transcript.write_text("")
        self.log = tmp_path / "hooks.log"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        self.env.update(
            LOOM_BASE_URL=server,
            LOOM_NAMESPACE=self.namespace,
            LOOM_HOOK_STATE_DIR=str(tmp_path / "state"),
            LOOM_HOOK_LOG=str(self.log),
            **env,
        )
        post(server, "conversation.set_logging", namespace=self.namespace, enabled=recording)

    def grow(self, upto: int) -> None:
        """The transcript as Claude Code has written it up to line `upto`."""
        self.transcript.write_text("".join(LINES[:upto]))

    def hook_input(self, event: str, **fields: Any) -> dict[str, Any]:
        """The JSON object Claude Code writes to a hook's stdin for `event`."""
        names = {"stop": "Stop", "precompact": "PreCompact", "session-end": "SessionEnd"}
        names |= {"user-prompt-submit": "UserPromptSubmit"}
        return {
            "session_id": SESSION,
            "transcript_path": str(self.transcript),
            "cwd": "/home/dev/billing",
            "hook_event_name": names.get(event, "SessionStart"),
            **fields,
        }

    def hook(
        self, event: str, fields: dict[str, Any] | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        # -E -s -S: no site-packages and no PYTHON* settings: the standard library alone
        return subprocess.run(
            [sys.executable, "-E", "-s", "-S", str(HOOK), event],
            input=json.dumps(self.hook_input(event, **(fields or {}))),
            capture_output=True,
            text=True,
            env={**self.env, **env},
            timeout=30,
        )


def test_the_stop_hook_appends_each_new_turn_once_with_the_transcript_uuid(server, tmp_path):
    """GIVEN a recording namespace WHEN the Stop hook runs as the session grows, again with
    nothing new, and again after its state file is lost THEN each user and assistant turn is
    in the thread once, msg_id = its transcript uuid, in order."""
    s = Session(server, tmp_path)
    s.grow(5)
    assert s.hook("stop").returncode == 0
    assert [t["msg_id"] for t in turns(server, s.namespace)] == UUIDS[:2]
    s.grow(len(LINES))
    s.hook("stop")
    s.hook("stop")
    for state in (tmp_path / "state").glob("*.json"):
        state.unlink()
    s.hook("stop")
    stored = turns(server, s.namespace)
    assert [t["msg_id"] for t in stored] == UUIDS
    assert [t["role"] for t in stored] == ["user", "assistant", "assistant", "user", "assistant"]
    assert stored[1]["reasoning"].startswith("Find where the export job queries invoices")
    assert stored[0]["metadata"]["git_branch"] == "ledger-move"
    assert not any("<command-name>" in t["content"] for t in stored)


def test_lines_of_an_unexpected_shape_leave_the_other_turns_and_the_brief_alone(server, tmp_path):
    """GIVEN a transcript holding, among its turns, an entry whose message is a string and a
    tool call whose input is a string
    WHEN the Stop hook and then the SessionEnd hook run
    THEN every turn is stored and the session's brief saved: an odd line reads as empty
    instead of stopping the hooks."""
    odd = [
        json.dumps({"type": "assistant", "uuid": "odd-1", "message": "just a string"}) + "\n",
        json.dumps(
            {"type": "assistant", "uuid": "odd-2", "sessionId": SESSION,
             "message": {"role": "assistant", "id": "msg-odd", "content": [
                 {"type": "tool_use", "id": "t1", "name": "Bash", "input": "ls -la"}]}}
        ) + "\n",
    ]  # fmt: skip
    s = Session(server, tmp_path)
    s.transcript.write_text("".join(LINES[:4] + odd + LINES[4:]))
    assert s.hook("stop").returncode == 0
    assert [t["msg_id"] for t in turns(server, s.namespace)] == UUIDS
    assert s.hook("session-end").returncode == 0
    brief = post(server, "session.brief_get", namespace=s.namespace, agent="*", project="billing")
    assert brief["found"] and brief["trigger"] == "session_end", brief
    assert "Error" not in (s.log.read_text() if s.log.exists() else "")


def test_turns_refused_while_recording_is_off_are_sent_once_it_is_on(server, tmp_path):
    """GIVEN a namespace that does not record WHEN the Stop hook runs THEN nothing is stored
    and the refused turns stay unsent; the verdict is cached (no call while it holds), and
    once recording is on and the cache re-checked, every turn lands, those said while it was
    off included."""
    s = Session(server, tmp_path, recording=False)
    s.grow(5)
    s.hook("stop")
    assert turns(server, s.namespace) == []
    post(server, "conversation.set_logging", namespace=s.namespace, enabled=True)
    s.grow(15)
    s.hook("stop")  # the cached "off" still holds: no call made, nothing appended
    assert turns(server, s.namespace) == []
    s.grow(len(LINES))
    s.hook("stop", LOOM_RECORDING_RECHECK_SECONDS="0")
    assert [t["msg_id"] for t in turns(server, s.namespace)] == UUIDS


def test_the_capture_switch_turns_appends_off(server, tmp_path):
    s = Session(server, tmp_path, LOOM_CAPTURE_CONVERSATIONS="false")
    s.grow(len(LINES))
    assert s.hook("stop").returncode == 0
    assert turns(server, s.namespace) == []


def test_precompact_and_session_end_save_briefs_with_their_triggers(server, tmp_path, pool):
    """GIVEN a session WHEN PreCompact and then SessionEnd fire THEN each saves a revision of
    auto/<project>/<branch> with its trigger from the events since the last save (cursor =
    transcript line), and a hook run again with nothing new writes no revision."""
    s = Session(server, tmp_path)
    s.grow(13)
    s.hook("precompact")
    s.hook("precompact")
    brief = post(server, "session.brief_get", namespace=s.namespace, agent="*", project="billing")
    assert (brief["brief_key"], brief["trigger"], brief["revision"]) == (
        "auto/billing/ledger-move", "precompact", 1,
    )  # fmt: skip
    assert brief["author"] == "deterministic"  # built on the server: no model on the client
    assert "Goal: The billing export still reads invoices" in brief["rendered"]
    s.grow(len(LINES))
    s.hook("session-end")
    s.hook("session-end")
    brief = post(
        server, "session.brief_get", namespace=s.namespace, agent="*",
        brief_key="auto/billing/ledger-move", include_sections=True,
    )  # fmt: skip
    assert (brief["trigger"], brief["revision"], brief["revisions"]) == ("session_end", 2, 2)
    assert brief["source_sessions"] == [SESSION]
    assert "/home/dev/billing/export/job.py" in brief["sections"]["key_files"]
    with pool.connection() as conn:
        cursor = conn.execute(
            "SELECT last_event_cursor FROM loom.session_briefs WHERE namespace = %s",
            (s.namespace,),
        ).fetchone()
    assert cursor == (str(len(LINES)),)


def test_briefs_are_not_saved_while_recording_is_off(server, tmp_path):
    s = Session(server, tmp_path, recording=False)
    s.grow(len(LINES))
    s.hook("precompact")
    s.hook("session-end")
    listed = post(server, "session.brief_list", namespace=s.namespace, agent="*")
    assert listed["briefs"] == []


def test_session_end_hands_the_session_to_deferred_extraction_once(server, tmp_path, pool):
    """GIVEN a session that used Loom's memory search WHEN SessionEnd fires (twice) THEN one
    deferred extraction holds its five turns, tagged source:claude-code, with the key and text
    Loom served; its four tool actions are recorded and crystallized once, Loom's own not."""
    s = Session(server, tmp_path, recording=False)  # extraction does not need recording
    s.grow(len(LINES))
    s.hook("session-end")
    s.hook("session-end")
    batches = post(server, "memory.extraction_status", namespace=s.namespace, agent="*")
    assert [(b["status"], b["sizes"]["messages"]) for b in batches["batches"]] == [("pending", 5)]
    with pool.connection() as conn:
        (request,) = conn.execute(
            "SELECT request FROM loom.memory_extraction_queue WHERE namespace = %s",
            (s.namespace,),
        ).fetchone()
        observed = conn.execute(
            "SELECT tool, action, crystallized_at IS NOT NULL FROM loom.observations"
            " WHERE namespace = %s AND session_id = %s ORDER BY id",
            (s.namespace, SESSION),
        ).fetchall()
    assert request["extra_tags"] == ["source:claude-code"]
    assert request["session_id"] == SESSION
    assert request["recalled_keys"] == ["billing/ledger/invoice_table"]
    assert request["session_values"] == [
        "ledger v2 invoices table",
        "Invoices live in ledger_v2.invoices since the March migration.",
    ]
    assert [m["content"][:24] for m in request["messages"]] == [
        "The billing export still",
        "I'll find where the expo",
        "The export job now reads",
        "Update that test too. Th",
        "Done: the test now expec",
    ]
    assert observed == [
        ("Grep", "FROM invoices", True),
        ("Read", "Read /home/dev/billing/export/job.py", True),
        ("Edit", "Edit /home/dev/billing/export/job.py", True),
        ("Bash", "pytest tests/test_export.py -q", True),
    ]


def test_a_turn_holding_a_lone_surrogate_loses_only_that_character(server, tmp_path):
    """GIVEN a transcript whose first user turn ends in half an emoji (a lone surrogate, as a
    cut JavaScript string leaves)
    WHEN the Stop hook, then SessionEnd, fire
    THEN every turn is stored (that one without the character), and one deferred extraction
    holds all five turns.
    """
    s = Session(server, tmp_path)
    entry = json.loads(LINES[1])
    entry["message"]["content"] += " \ud83d"
    s.transcript.write_text("".join([LINES[0], json.dumps(entry) + "\n", *LINES[2:]]))
    assert s.hook("stop").returncode == 0
    stored = turns(server, s.namespace)
    assert [t["msg_id"] for t in stored] == UUIDS
    assert "\ud83d" not in stored[0]["content"]
    assert s.hook("session-end").returncode == 0
    batches = post(server, "memory.extraction_status", namespace=s.namespace, agent="*")
    assert [b["sizes"]["messages"] for b in batches["batches"]] == [5]


def test_the_session_start_primer_only_names_the_saved_briefs(server, tmp_path):
    """GIVEN no brief THEN the primer says nothing; GIVEN a saved brief THEN the primer names
    its key and loads none of it; the loom-session skill's commands list and load it."""
    s = Session(server, tmp_path, LOOM_RECALL_TOKENS="0")  # recall off: the primer alone
    empty = s.hook("session-start")
    assert (empty.returncode, empty.stdout) == (0, "")
    s.grow(len(LINES))
    s.hook("session-end")
    primer = json.loads(s.hook("session-start").stdout)["hookSpecificOutput"]
    assert primer["hookEventName"] == "SessionStart"
    assert "auto/billing/ledger-move" in primer["additionalContext"]
    assert "Status:" not in primer["additionalContext"]
    assert "/loom:loom-session" in primer["additionalContext"]

    skill = PLUGIN / "skills" / "loom-session" / "SKILL.md"
    assert "disable-model-invocation: true" in skill.read_text()
    run = [sys.executable, "-E", "-s", "-S", str(HOOK)]
    listed = subprocess.run([*run, "briefs"], capture_output=True, text=True, env=s.env)
    assert listed.stdout.startswith("auto/billing/ledger-move · rev 1")
    loaded = subprocess.run(
        [*run, "brief", "auto/billing/ledger-move"], capture_output=True, text=True, env=s.env
    )
    assert loaded.stdout.startswith("# Session brief auto/billing/ledger-move (revision 1)")


@pytest.fixture
def silent_port():
    """A port that accepts connections and never answers: a server that hangs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


@pytest.mark.parametrize("where", ["down", "hanging"])
def test_a_server_that_is_down_or_hangs_never_breaks_a_hook(server, tmp_path, where, request):
    """GIVEN Loom down (nothing listens) or hanging (never answers) WHEN every hook runs THEN
    each exits 0 within its timeout, prints nothing, and the error is in the log file; the
    turns land once Loom is back."""
    s = Session(server, tmp_path)
    s.grow(len(LINES))
    if where == "down":
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]  # closed again: nothing listens there
    else:
        port = request.getfixturevalue("silent_port")
    away = {"LOOM_BASE_URL": f"http://127.0.0.1:{port}", "LOOM_HOOK_TIMEOUT": "1"}
    for event in ("session-start", "user-prompt-submit", "stop", "precompact", "session-end"):
        started = time.monotonic()
        done = s.hook(event, {"prompt": "Where do invoices live?"}, **away)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert time.monotonic() - started < 4
    assert "conversation.append" in s.log.read_text()
    s.hook("stop")
    assert [t["msg_id"] for t in turns(server, s.namespace)] == UUIDS


def test_the_plugin_follows_claude_codes_layout():
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    market = json.loads((ROOT / "integrations" / ".claude-plugin" / "marketplace.json").read_text())
    assert manifest["name"] == "loom" == market["plugins"][0]["name"]
    assert (ROOT / "integrations" / market["plugins"][0]["source"]).resolve() == PLUGIN
    assert sorted(hooks) == ["PreCompact", "SessionEnd", "SessionStart", "Stop", "UserPromptSubmit"]
    for event, groups in hooks.items():
        (hook,) = groups[0]["hooks"]
        assert "${CLAUDE_PLUGIN_ROOT}/scripts/loom_capture.py" in hook["command"]
        # longer than the script's own budget: LOOM_RECALL_BUDGET (4 s) before a prompt,
        # LOOM_HOOK_BUDGET (20 s) elsewhere
        assert hook["timeout"] > (4 if event == "UserPromptSubmit" else 20)


# ---- Cursor and exported transcripts ------------------------------------------------------

CURSOR_HOOK = ROOT / "integrations" / "cursor" / "cursor-session-hook.sh"
INGEST = ROOT / "integrations" / "generic" / "ingest.sh"
CONVERSATION = "cdefee2d-2727-4b73-bf77-d9d830f31d2a"


def recorded(server: str, namespace: str, thread_id: str) -> list[tuple[str, str]]:
    rows = post(server, "conversation.list", namespace=namespace, agent="*", thread_id=thread_id)
    return [(r["role"], r["content"]) for r in rows["rows"]]


def namespace(server: str, recording: bool = True) -> str:
    name = f"tx-{uuid.uuid4().hex[:10]}"
    post(server, "conversation.set_logging", namespace=name, enabled=recording)
    return name


def environment(server: str, ns: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
    env.update(
        LOOM_BASE_URL=server,
        LOOM_NAMESPACE=ns,
        LOOM_CLI=str(Path(sys.executable).parent / "loom"),
        LOOM_HOOK_LOG=str(tmp_path / "hooks.log"),
        LOOM_ENV_FILE=str(tmp_path / "no-env-file"),
        XDG_STATE_HOME=str(tmp_path / "state"),
    )
    return {**env, **extra}


def cursor_hook(
    env: dict[str, str], event: str, transcript: Path | None, **fields: Any
) -> subprocess.CompletedProcess[str]:
    """The Cursor hook script run for `event` with the input Cursor writes for it."""
    hook_input = {
        "conversation_id": CONVERSATION,
        "generation_id": "26b45fb6-bdea-439c-b2dc-5e97ee00ecea",
        "hook_event_name": event,
        "workspace_roots": ["/home/dev/notify"],
        "cursor_version": "2.0.77",
        **({"transcript_path": str(transcript)} if transcript else {}),
        **fields,
    }
    return subprocess.run(
        ["sh", str(CURSOR_HOOK)],
        input=json.dumps(hook_input),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def cursor_stop(env: dict[str, str], transcript: Path) -> subprocess.CompletedProcess[str]:
    return cursor_hook(env, "stop", transcript, status="completed", loop_count=0)


CURSOR_TURNS = [
    ("user", "Add a retry with backoff to the webhook sender in notify/webhook.ts."),
    (
        "assistant",
        "I'll wrap the POST in a retry loop: three attempts, doubling the delay from 200 ms.",
    ),
    ("assistant", "Done. sendWebhook now retries 429 and 5xx answers up to three times."),
    ("user", "Don't retry on 4xx other than 429."),
    ("assistant", "Right: only 429 and 5xx are retried; any other 4xx fails at once."),
]


def test_the_cursor_hook_lands_each_turn_once_as_the_conversation_grows(server, tmp_path):
    """GIVEN Cursor's agent transcript (JSON Lines) WHEN the stop hook runs after each agent
    turn and once more THEN thread cursor-<conversation_id> holds every text turn once, the
    <user_query> wrapper and tool-only lines left out; the hook answers {} and exits 0."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path)
    lines = (FIXTURES / "cursor-transcript.jsonl").read_text().splitlines(keepends=True)
    transcript = tmp_path / f"{CONVERSATION}.jsonl"
    transcript.write_text("".join(lines[:4]))
    first = cursor_stop(env, transcript)
    assert (first.returncode, first.stdout) == (0, "{}\n")
    transcript.write_text("".join(lines))
    cursor_stop(env, transcript)
    cursor_stop(env, transcript)
    assert recorded(server, ns, f"cursor-{CONVERSATION}") == CURSOR_TURNS


def test_each_cursor_stop_sends_only_the_turns_not_sent_before(server, tmp_path):
    """GIVEN Cursor's transcript, first with its first three text turns, then whole
    WHEN the stop hook runs after each, and once more
    THEN the first run stores three turns, the second stores the two new ones and re-sends
    none (no duplicate answered), and the last has nothing new to send."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path)
    lines = (FIXTURES / "cursor-transcript.jsonl").read_text().splitlines(keepends=True)
    transcript = tmp_path / f"{CONVERSATION}.jsonl"
    for upto in (4, len(lines), len(lines)):
        transcript.write_text("".join(lines[:upto]))
        cursor_stop(env, transcript)
    said = [line for line in (tmp_path / "hooks.log").read_text().splitlines() if "thread" in line]
    assert [line.split(": ", 1)[1] for line in said] == ["3 stored", "2 stored", "nothing new"]
    assert recorded(server, ns, f"cursor-{CONVERSATION}") == CURSOR_TURNS


def test_a_cursor_turn_holding_a_nul_does_not_lose_the_conversation(server, tmp_path):
    """GIVEN Cursor's transcript whose second turn holds a NUL character
    WHEN the stop hook runs THEN every turn is stored, the NUL removed from its text."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path)
    lines = (FIXTURES / "cursor-transcript.jsonl").read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace("three attempts", "three\\u0000 attempts")
    transcript = tmp_path / f"{CONVERSATION}.jsonl"
    transcript.write_text("".join(lines))
    assert cursor_stop(env, transcript).returncode == 0
    assert recorded(server, ns, f"cursor-{CONVERSATION}") == CURSOR_TURNS


def test_the_cursor_hook_stores_nothing_while_recording_is_off(server, tmp_path):
    ns = namespace(server, recording=False)
    env = environment(server, ns, tmp_path)
    done = cursor_stop(env, FIXTURES / "cursor-transcript.jsonl")
    assert (done.returncode, done.stdout) == (0, "{}\n")
    assert recorded(server, ns, f"cursor-{CONVERSATION}") == []
    assert "does not record conversations" in (tmp_path / "hooks.log").read_text()


def test_the_cursor_capture_switch_turns_the_hook_off(server, tmp_path):
    ns = namespace(server)
    env = environment(server, ns, tmp_path, LOOM_CAPTURE_CONVERSATIONS="false")
    assert cursor_stop(env, FIXTURES / "cursor-transcript.jsonl").returncode == 0
    assert recorded(server, ns, f"cursor-{CONVERSATION}") == []


@pytest.mark.parametrize(
    "name, first, last",
    [
        (
            "generic-session.md",
            ("user", "Which region does the reporting cluster run in?"),
            ("assistant", "The weekly report job now reads from the eu-central-1 replica; the"
             " primary only takes writes."),
        ),
        (
            "generic-session.json",
            ("user", "Our staging database moved to db-staging-2.internal last week."),
            ("assistant", "Understood: nightly backups at 02:30 UTC."),
        ),
    ],
)  # fmt: skip
def test_the_generic_script_ingests_an_exported_transcript_once(
    server, tmp_path, name, first, last
):
    """GIVEN an exported transcript (Markdown sections or a JSON array) WHEN ingest.sh runs
    twice on it THEN its four turns are in the named thread once."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path)
    for _ in range(2):
        done = subprocess.run(
            ["sh", str(INGEST), str(FIXTURES / name), "exported-1"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0
    assert "thread exported-1: 4 duplicate" in done.stderr
    turns = recorded(server, ns, "exported-1")
    assert (len(turns), turns[0], turns[-1]) == (4, first, last)


def test_the_http_ingest_gives_a_turn_the_same_id_as_the_database_ingest(
    server, tmp_path, database_url
):
    """GIVEN a transcript ingested straight into the database WHEN the same file goes through
    the HTTP path THEN nothing is added: both derive the same thread and message ids."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path, LOOM_DATABASE_URL=database_url, LOOM_EMBEDDER="fake")
    loom = env["LOOM_CLI"]
    file = str(FIXTURES / "generic-session.md")
    base = [loom, "ingest-transcript", "--namespace", ns, "--file", file]
    direct = subprocess.run(base, capture_output=True, text=True, env=env, timeout=60)
    assert direct.stdout.endswith(": 4 stored\n"), direct.stderr
    over_http = subprocess.run(
        [*base, "--url", server], capture_output=True, text=True, env=env, timeout=60
    )
    assert over_http.stdout.endswith(": 4 duplicate\n"), over_http.stderr


def test_the_http_ingest_refuses_a_file_with_a_turn_append_refuses_and_sends_nothing(
    server, tmp_path
):
    """GIVEN a recording namespace and a three-turn JSON transcript whose third turn holds a
    NUL character
    WHEN it is ingested over HTTP THEN the command exits 2 naming the turn, and the server
    holds no turn of it (the file is checked whole before the first append is sent)."""
    ns = namespace(server)
    env = environment(server, ns, tmp_path)
    f = tmp_path / "t.json"
    f.write_text(json.dumps([{"role": "user", "content": "one"}, {"role": "assistant",
                 "content": "two"}, {"role": "user", "content": "th\u0000ree"}]))  # fmt: skip
    cmd = [env["LOOM_CLI"], "ingest-transcript", "--namespace", ns, "--file", str(f)]
    done = subprocess.run(
        [*cmd, "--thread-id", "refused-1", "--url", server],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "turn 3" in done.stderr and "Nothing was appended" in done.stderr
    assert recorded(server, ns, "refused-1") == []


def test_a_hanging_or_down_server_leaves_both_scripts_exiting_0_in_time(
    server, tmp_path, silent_port
):
    """GIVEN Loom hanging, then down WHEN the Cursor hook and ingest.sh run THEN each exits 0
    within its timeout and the error is in the log file."""
    ns = namespace(server)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    for port in (silent_port, closed):
        url = f"http://127.0.0.1:{port}"
        env = environment(server, ns, tmp_path, LOOM_BASE_URL=url, LOOM_HOOK_TIMEOUT="1")
        started = time.monotonic()
        hook = cursor_stop(env, FIXTURES / "cursor-transcript.jsonl")
        assert (hook.returncode, hook.stdout) == (0, "{}\n")
        script = subprocess.run(
            ["sh", str(INGEST), str(FIXTURES / "generic-session.json")],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert script.returncode == 0
        assert "cannot reach" in script.stderr
        assert time.monotonic() - started < 10
    assert "cannot reach" in (tmp_path / "hooks.log").read_text()


def test_a_stuck_ingest_is_stopped_by_the_hooks_budget(server, tmp_path, silent_port):
    """GIVEN a per-call timeout longer than the hook's budget WHEN Loom hangs THEN the hook
    still ends within its budget."""
    url = f"http://127.0.0.1:{silent_port}"
    env = environment(
        server, "any", tmp_path, LOOM_BASE_URL=url, LOOM_HOOK_TIMEOUT="30", LOOM_HOOK_BUDGET="2"
    )
    started = time.monotonic()
    hook = cursor_stop(env, FIXTURES / "cursor-transcript.jsonl")
    assert (hook.returncode, hook.stdout) == (0, "{}\n")
    assert time.monotonic() - started < 6
    assert "ended with status" in (tmp_path / "hooks.log").read_text()
