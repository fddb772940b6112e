"""The Claude Code plugin as a package: the README's install and update steps, its settings
(userConfig) reaching the hooks, its MCP server registration answering, and its version
bumped whenever its files change."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.functional.test_capture import LINES, PLUGIN, ROOT, UUIDS, Session, post, turns
from tests.functional.test_guide import blocks_of
from tests.live_server import live_server

MARKETPLACE = ROOT / "integrations" / ".claude-plugin" / "marketplace.json"
RECORDED = ROOT / "integrations" / "claude-code.version"
USER_CONFIG = re.compile(r"\$\{user_config\.([A-Za-z_]\w*)\}")

# A stand-in for the `claude` CLI: the plugin subcommands the README runs, each checked as
# Claude Code would (the marketplace file, the plugin entry, the manifest, the hooks, the MCP
# file), the plugin copied to a cache directory named by its version.
FAKE_CLAUDE = r"""#!/usr/bin/env python3
import json, os, re, shutil, sys
from pathlib import Path

state_file = Path(os.environ["FAKE_CLAUDE_STATE"])
state = {"markets": {}, "installed": {}}
if state_file.exists():
    state = json.loads(state_file.read_text())
with open(os.environ["FAKE_CLAUDE_CALLS"], "a") as calls:
    calls.write(json.dumps(sys.argv[1:]) + "\n")

def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)

def market(name):
    if name not in state["markets"]:
        fail(f"unknown marketplace {name}")
    root = Path(state["markets"][name])
    return root, json.loads((root / ".claude-plugin" / "marketplace.json").read_text())

def install(ref):
    plugin, _, name = ref.partition("@")
    root, listing = market(name)
    entry = next((p for p in listing["plugins"] if p["name"] == plugin), None) or fail(f"no {ref}")
    source = (root / entry["source"]).resolve()
    manifest = json.loads((source / ".claude-plugin" / "plugin.json").read_text())
    for key in manifest.get("userConfig", {}):
        if not re.fullmatch(r"[A-Za-z_]\w*", key):
            fail(f"userConfig key {key!r} is not an identifier")
    json.loads((source / "hooks" / "hooks.json").read_text())
    json.loads((source / ".mcp.json").read_text())
    version = manifest.get("version") or entry.get("version")
    cache = Path(os.environ["HOME"]) / ".claude" / "plugins" / "cache" / name / plugin / version
    if not cache.exists():
        shutil.copytree(source, cache)
    state["installed"][ref] = version

args = sys.argv[1:]
if args[:3] == ["plugin", "marketplace", "add"] and len(args) == 4:
    path = Path(args[3])
    listing = json.loads((path / ".claude-plugin" / "marketplace.json").read_text())
    state["markets"][listing["name"]] = str(path)
elif args[:3] == ["plugin", "marketplace", "update"] and len(args) == 4:
    market(args[3])
elif args[:2] in (["plugin", "install"], ["plugin", "update"]) and len(args) == 3:
    if args[1] == "update" and args[2] not in state["installed"]:
        fail(f"{args[2]} is not installed")
    install(args[2])
else:
    fail(f"unknown command: {args}")
state_file.write_text(json.dumps(state))
"""


def readme_plugin_blocks() -> list[str]:
    """The README's blocks that run `claude plugin`, as written."""
    blocks = [b.text for b in blocks_of(ROOT / "README.md") if "claude plugin" in b.text]
    assert len(blocks) == 2, "the README shows one install block and one update block"
    return blocks


def test_the_readmes_install_and_update_steps_run_as_written(tmp_path):
    """GIVEN a `claude` on PATH that checks each plugin command as Claude Code would
    WHEN the README's install block, then its update block, run from the checkout THEN each
    exits 0, the plugin is installed from the checkout's marketplace and the update installs
    the plugin's current version."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(FAKE_CLAUDE.replace("python3", Path(sys.executable).name, 1))
    (bin_dir / "claude").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
        "HOME": str(tmp_path / "home"),
        "FAKE_CLAUDE_STATE": str(tmp_path / "state.json"),
        "FAKE_CLAUDE_CALLS": str(tmp_path / "calls.jsonl"),
    }
    for block in readme_plugin_blocks():
        done = subprocess.run(
            ["bash", "-e", "-c", block], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [c[:3] for c in calls] == [
        ["plugin", "marketplace", "add"],
        ["plugin", "install", "loom@loom"],
        ["plugin", "marketplace", "update"],
        ["plugin", "update", "loom@loom"],
    ]
    version = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())["version"]
    cached = tmp_path / "home" / ".claude" / "plugins" / "cache" / "loom" / "loom" / version
    assert (cached / "scripts" / "loom_capture.py").is_file()


def plugin_digest() -> str:
    """The plugin's files, as Claude Code copies them: every file but compiled Python."""
    digest = hashlib.sha256()
    for path in sorted(p for p in PLUGIN.rglob("*") if p.is_file()):
        if "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        digest.update(path.relative_to(PLUGIN).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_the_plugins_version_is_bumped_whenever_its_files_change():
    """Claude Code keeps a plugin's copy by version: files changed under the same version
    never reach an installed plugin. The recorded hash goes with the version it was taken at."""
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    listed = json.loads(MARKETPLACE.read_text())["plugins"][0]
    assert manifest["version"] == listed["version"], "plugin.json and marketplace.json disagree"
    recorded_version, recorded_hash = RECORDED.read_text().split()
    now = plugin_digest()
    if now != recorded_hash:
        bumped = _version(manifest["version"]) > _version(recorded_version)
        advice = "record" if bumped else "bump the version in plugin.json and record"
        pytest.fail(
            f"the plugin's files changed: {advice} the new hash in {RECORDED.name}:"
            f" {manifest['version']} {now}"
        )
    assert manifest["version"] == recorded_version


@pytest.fixture(scope="module")
def server(database_url):
    with live_server(database_url) as base:
        yield base


def test_the_plugins_settings_reach_the_hooks_and_loom_variables_override_them(server, tmp_path):
    """GIVEN the plugin's settings as Claude Code hands them to a hook
    (CLAUDE_PLUGIN_OPTION_<KEY>) and no LOOM_* variable WHEN the Stop hook runs THEN the
    turns go to the configured server and namespace; GIVEN LOOM_NAMESPACE as well THEN that
    one wins."""
    s = Session(server, tmp_path)
    s.grow(len(LINES))
    chosen = f"cc-{uuid.uuid4().hex[:10]}"
    post(server, "conversation.set_logging", namespace=chosen, enabled=True)
    s.env = {k: v for k, v in s.env.items() if k not in ("LOOM_BASE_URL", "LOOM_NAMESPACE")}
    options = {"CLAUDE_PLUGIN_OPTION_BASE_URL": server, "CLAUDE_PLUGIN_OPTION_NAMESPACE": chosen}
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert {f"CLAUDE_PLUGIN_OPTION_{k.upper()}" for k in manifest["userConfig"]} >= set(options)
    assert s.hook("stop", **options).returncode == 0
    assert [t["msg_id"] for t in turns(server, chosen)] == UUIDS
    for state in (tmp_path / "state").glob("*.json"):
        state.unlink()
    s.hook("stop", **options, LOOM_NAMESPACE=s.namespace)
    assert [t["msg_id"] for t in turns(server, s.namespace)] == UUIDS


def mcp_call(url: str, headers: dict[str, str], message: dict[str, Any]) -> tuple[Any, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(message).encode(),
        headers={
            **headers,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read()), answer.headers


def test_the_plugins_mcp_server_answers_with_the_users_settings(server):
    """GIVEN the plugin's .mcp.json with the user's settings put in as Claude Code does
    (${user_config.KEY}) WHEN an MCP client opens a session and lists the tools THEN Loom
    answers, in the configured namespace, for the claude-code agent."""
    namespace = f"cc-{uuid.uuid4().hex[:10]}"
    values = {"base_url": server, "token": "", "namespace": namespace}
    (entry,) = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"].values()
    assert entry["type"] == "http"
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    used = set(USER_CONFIG.findall(json.dumps(entry)))
    assert used <= set(manifest["userConfig"]), "every setting it names is one the user is asked"

    def fill(text: str) -> str:
        return USER_CONFIG.sub(lambda m: values[m[1]], text)

    url = fill(entry["url"])
    headers = {k: fill(v) for k, v in entry["headers"].items()}
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "claude-code", "version": "2.0.14"}}}  # fmt: skip
    opened, answer_headers = mcp_call(url, headers, hello)
    assert opened["result"]["serverInfo"]["name"]
    headers["Mcp-Session-Id"] = answer_headers["Mcp-Session-Id"]
    listed, _ = mcp_call(url, headers, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    names = [tool["name"] for tool in listed["result"]["tools"]]
    assert any("context_pack" in name for name in names), names
    remember = {"key": "k/mcp", "value": "Set over MCP."}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "loom_memory_set", "arguments": remember}}  # fmt: skip
    mcp_call(url, headers, call)
    found = post(server, "memory.get", namespace=namespace, agent="claude-code", key="k/mcp")
    assert "Set over MCP." in json.dumps(found)


def skill_commands() -> list[str]:
    text = (PLUGIN / "skills" / "loom-session" / "SKILL.md").read_text()
    return [line.strip() for line in text.splitlines() if line.strip().startswith("python3 ")]


def test_the_skill_reaches_loom_with_the_plugins_settings(server, tmp_path):
    """GIVEN a saved brief in the namespace the person chose at install WHEN the skill's two
    commands run as Claude Code writes them (its settings put in for ${user_config.KEY}), with
    no LOOM_* variable THEN they list and load that brief; WHEN the settings are left unfilled
    THEN LOOM_* variables still take the commands there."""
    s = Session(server, tmp_path)
    s.grow(len(LINES))
    s.hook("session-end")
    env = {k: v for k, v in s.env.items() if k not in ("LOOM_BASE_URL", "LOOM_NAMESPACE")}
    values = {"base_url": server, "namespace": s.namespace}
    listing, loading = skill_commands()
    skill_dir = str(PLUGIN / "skills" / "loom-session")

    def run(command: str, filled: bool, **extra: str) -> str:
        command = command.replace("${CLAUDE_SKILL_DIR}", skill_dir)
        command = command.replace("python3 ", f"{sys.executable} -E -s -S ", 1)
        command = command.replace("<brief_key>", "auto/billing/ledger-move")
        if filled:
            command = USER_CONFIG.sub(lambda m: values[m[1]], command)
        done = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, env={**env, **extra}
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert run(listing, filled=True).startswith("auto/billing/ledger-move · rev 1")
    assert run(loading, filled=True).startswith("# Session brief auto/billing/ledger-move")
    unfilled = run(listing, filled=False, LOOM_BASE_URL=server, LOOM_NAMESPACE=s.namespace)
    assert unfilled.startswith("auto/billing/ledger-move · rev 1")


@pytest.mark.parametrize(
    "stdin",
    [
        "",
        "not json",
        "[1, 2]",
        json.dumps({"session_id": 5, "transcript_path": ["x"], "cwd": 7, "prompt": {"a": 1},
                    "last_assistant_message": [1], "source": None}),
    ],
)  # fmt: skip
def test_hook_input_of_any_shape_never_breaks_a_hook(server, tmp_path, stdin):
    """GIVEN an empty namespace and hook input that is empty, not JSON, not an object, or an
    object whose fields have the wrong types WHEN every hook runs on it THEN each exits 0 and
    prints nothing, on stdout or stderr."""
    s = Session(server, tmp_path, LOOM_HOOK_INPUT_WAIT="1")
    for event in ("session-start", "user-prompt-submit", "stop", "precompact", "session-end"):
        done = subprocess.run(
            [sys.executable, "-E", "-s", "-S", str(PLUGIN / "scripts" / "loom_capture.py"), event],
            input=stdin, capture_output=True, text=True, env=s.env, timeout=30,
        )  # fmt: skip
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), event
        # A hook logs what it catches: input that is no object is refused as such, and no
        # field of the wrong type may raise a programming error inside it.
        logged = s.log.read_text() if s.log.exists() else ""
        assert not re.search(r"(Attribute|Type|Key|Index)Error", logged), (event, logged)
