"""Every command in README.md and docs/guide/*.md runs, in order, against a live server.

A page's ```sh, ```bash, ```python and ```ts blocks run one after another from a checkout's
root (shell blocks under `bash` with `set -e`; shell variables set by one block reach the
next; a TypeScript block as an ES module under tsx, importing `loom-sdk` as a project that
installed sdk-ts would), with `localhost:7777` / `127.0.0.1:7777` pointed at a server of the
test's own. Each block must exit 0 and print what its `# expect: TEXT` comments (`// expect:`
in TypeScript) say, in that order; an answer holding `"error":` fails unless an expectation
names `"error"`. ```text and ```json blocks are shown, not run; a block marked `no-run` is
counted, and any other fence fails the test, so no command can slip out of it.

A page runs against the server `make run` gives, unless it opens with
`<!-- guide-server: NAME=VALUE ... -->`: the settings its server runs with, which the page's
own text must name. `{stub}` is the local OpenAI-compatible stub, standing for the model
endpoint a user points LOOM_LLM_BASE_URL at. Each distinct server gets a fresh database in
the session's embedded PostgreSQL, as a fresh `make run` would.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests.live_server import live_server
from tests.openai_stub import OpenAIStub
from tests.sdk_ts import built_sdk_ts

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
RUN = {"sh", "bash", "python", "ts"}
SHOWN = {"text", "json"}  # answers and layouts: nothing to run
# Blocks that cannot run here, by page: each is a deliberate exception (README: `make run`
# itself, and a client this machine does not have: its install and update steps run in
# test_capture_plugin.py against a stand-in `claude`).
NO_RUN = {"README.md": 3}
DEFAULT_URL = re.compile(r"(?:localhost|127\.0\.0\.1):7777")
EXPECT = re.compile(r"(?:#|//)\s*expect:\s?(.*?)\s*$")


DIRECTIVE = re.compile(r"<!--\s*guide-server:(.*?)-->", re.S)
BLOCK_TIMEOUT = 150  # seconds; a block may wait for a worker's pass


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    flags: list[str]
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def expects(self) -> list[str]:
        return [m[1] for line in self.text.splitlines() if (m := EXPECT.search(line))]


def blocks_of(page: Path) -> list[Block]:
    """Every fenced block of a Markdown page (fences may be indented, as in a list)."""
    found: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,})(.*)$", lines[i])
        if m is None:
            i += 1
            continue
        indent, fence, info = m[1], m[2], m[3].split()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not re.match(rf"^\s*{fence}\s*$", lines[j]):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        lang = info[0] if info else ""
        found.append(Block(page, i + 1, lang, info[1:], "\n".join(body) + "\n"))
        i = j + 1
    return found


def runnable(page: Path) -> list[Block]:
    return [b for b in blocks_of(page) if b.lang in RUN and not b.flags]


def server_env(page: Path) -> dict[str, str]:
    m = DIRECTIVE.search(page.read_text())
    if m is None:
        return {}
    return dict(item.split("=", 1) for item in m[1].split())


RUN_PAGES = [p for p in PAGES if runnable(p)]


# ---- the page's static checks --------------------------------------------------------------


def test_every_block_is_known_checked_and_counted() -> None:
    """GIVEN every page WHEN its fences are read THEN each is a known kind, each runnable
    block checks its answer, and only the counted exceptions are left out."""
    problems: list[str] = []
    ran = skipped = 0
    for page in PAGES:
        left_out = 0
        for b in blocks_of(page):
            if b.lang not in RUN | SHOWN:
                problems.append(
                    f"{b.where}: fence {b.lang or '(none)'!r} is not one the test knows"
                )
            elif b.lang in SHOWN:
                continue
            elif b.flags == ["no-run"]:
                left_out += 1
            elif b.flags:
                problems.append(f"{b.where}: unknown fence flags {b.flags}")
            elif not b.expects:
                problems.append(f"{b.where}: no '# expect:' line says what the block prints")
            elif "7777" in DEFAULT_URL.sub("", b.text):
                problems.append(f"{b.where}: names port 7777 in a form the test cannot move")
            else:
                ran += 1
        skipped += left_out
        if left_out != NO_RUN.get(page.name, 0):
            problems.append(
                f"{page.relative_to(ROOT)}: {left_out} no-run block(s), expected"
                f" {NO_RUN.get(page.name, 0)}"
            )
        text = DIRECTIVE.sub("", page.read_text())
        for name, value in server_env(page).items():
            if "{stub}" not in value and f"{name}={value}" not in text:
                problems.append(f"{page.relative_to(ROOT)}: its text never says {name}={value}")
    assert not problems, "\n".join(problems)
    assert ran >= 60, f"only {ran} blocks run"
    print(f"guide: {ran} blocks run, {skipped} skipped")


def test_guide_index_lists_every_page() -> None:
    index = (ROOT / "docs" / "guide" / "index.md").read_text()
    missing = [
        p.name
        for p in PAGES
        if p.parent.name == "guide" and p.name != "index.md" and f"({p.name})" not in index
    ]
    assert not missing, f"docs/guide/index.md does not link {missing}"
    assert "docs/guide/" in (ROOT / "README.md").read_text()


def test_settings_page_lists_every_setting() -> None:
    """GIVEN the settings page WHEN its two tables are read THEN the live one names every live
    setting and the start-only one every other, as chalicelib/config.py has them."""
    from chalicelib.config import BOOT_ONLY, Settings

    text = (ROOT / "docs" / "guide" / "09-settings.md").read_text()
    live_part = text.split("## Live settings", 1)[1].split("\n## ", 1)[0]
    boot_part = text.split("## Settings read at start", 1)[1].split("\n## ", 1)[0]

    def named(part: str) -> set[str]:
        rows = "\n".join(line for line in part.splitlines() if line.startswith("|"))
        return set(re.findall(r"`LOOM_([A-Z0-9_]+)`", rows))

    live = {n.upper() for n in Settings.model_fields if n not in BOOT_ONLY}
    boot = {n.upper() for n in BOOT_ONLY} - {"LAMBDA_FUNCTION_NAME"}  # AWS sets that one
    assert named(live_part) == live, named(live_part) ^ live
    assert named(boot_part) == boot, named(boot_part) ^ boot


def test_cli_page_names_every_command_and_flag() -> None:
    """GIVEN the CLI page WHEN `loom`'s parser is walked THEN every command and every flag is
    named on the page."""
    from chalicelib.cli import build_parser

    text = (ROOT / "docs" / "guide" / "10-cli.md").read_text()
    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            if f"`{path}`" not in text:
                missing.append(path)
            for action in parser._actions:
                for flag in action.option_strings:
                    if flag.startswith("--") and flag != "--help" and f"`{flag}`" not in text:
                        missing.append(f"{path} {flag}")
        for sub in subs:
            for name, child in sub.choices.items():
                walk(child, f"{path} {name}")

    walk(build_parser(), "loom")
    assert not missing, f"docs/guide/10-cli.md does not name {missing}"


# ---- the model behind {stub} ---------------------------------------------------------------

# What the scripted model knows, by a word of the conversation: (subject, attribute, value,
# tag). A fact about health is left out when the operator's policy says so, as a model told
# "never store health data" would.
FACTS = {
    "Lisbon": ("user", "home city", "The user lives in Lisbon.", "personal"),
    "EUR": ("user", "billing currency", "The user wants to be billed in EUR.", "billing"),
    "weekly": ("team", "on-call rotation", "The team's on-call rotation is weekly.", "team"),
    "asthma": ("user", "health condition", "The user has asthma.", "health"),
    # A rule the bot states about itself, cited by its own words.
    "escalate": ("assistant", "refund escalation", "I escalate any refund over $500 to a human.",
                 "agent"),
}  # fmt: skip


def scripted_model(request: dict[str, Any]) -> str:
    system = request["messages"][0]["content"]
    user = request["messages"][-1]["content"]
    if system.startswith("You compact"):
        return (
            "The user and the assistant moved invoices to the new ledger; the export job still"
            " reads the old one and is to be updated by Friday."
        )
    if system.startswith("Write a short title"):
        return "Invoice ledger migration"
    if system.startswith("You maintain a session brief"):
        return json.dumps(
            {
                "goal": "Move invoices to the new ledger",
                "status": "Ledger writes done; export job pending",
                "decisions": ["Keep the old ledger read-only until March"],
                "next_steps": ["Update the export job"],
                "key_files": ["billing/export.py"],
            }
        )
    if system.startswith("You extract durable facts"):
        conversation = user.split("Conversation:\n", 1)[-1]
        policy = system.partition("OPERATOR EXTRACTION POLICY")[2].lower()
        facts = []
        for line in conversation.splitlines():
            index = int(line[1 : line.index("]")]) if line.startswith("[") else 0
            for word, (subject, attribute, value, tag) in FACTS.items():
                if word in line and not (tag == "health" and "health" in policy):
                    facts.append(
                        {
                            "subject": subject,
                            "attribute": attribute,
                            "value": value,
                            "tags": [tag],
                            "source_message_indices": [index],
                            "span": value if tag == "agent" else word,
                            "about": "agent" if tag == "agent" else "user",
                        }
                    )
        return json.dumps({"facts": facts, "forget": [], "digest": ""})
    return "{}"


# ---- running the pages ---------------------------------------------------------------------


def server_settings(page: Path, stub: OpenAIStub) -> dict[str, str]:
    """As `make run`: the local embedder and every worker on (each server has a database of
    its own), then what the page asks for."""
    return {
        "LOOM_EMBEDDER": "local",
        "LOOM_EXTRACTION_QUEUE_ENABLED": "true",
        "LOOM_ENTITY_EXTRACTOR_ENABLED": "true",
        "LOOM_EMBEDDING_WORKER_ENABLED": "true",
        "LOOM_CONVERSATION_TITLER_ENABLED": "true",
        **{k: v.replace("{stub}", stub.base_url) for k, v in server_env(page).items()},
    }


def run_group(
    admin_url: str, settings: dict[str, str], pages: list[Path], work: Path
) -> dict[Path, str | None]:
    """Serve one setting on a fresh database and run its pages in order: why each failed, or
    None."""
    name = f"guide_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # a name of our own making
    url = make_conninfo(admin_url, dbname=name)
    with live_server(url, **settings) as base:
        return {page: run_page(page, base, url, work / page.stem) for page in pages}


@pytest.fixture(scope="module")
def page_runs(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[Path, Future[dict[Path, str | None]]]]:
    """Every page's run, started at once: the pages of one server setting in order, the
    settings side by side (a page that waits on a worker's pass then holds up no other)."""
    work = tmp_path_factory.mktemp("guide")
    with OpenAIStub(dim=8, chat_reply=scripted_model) as stub:
        groups: dict[tuple[tuple[str, str], ...], list[Path]] = {}
        for page in RUN_PAGES:
            groups.setdefault(tuple(sorted(server_settings(page, stub).items())), []).append(page)
        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            runs: dict[Path, Future[dict[Path, str | None]]] = {}
            for key, pages in groups.items():
                done = pool.submit(run_group, database_url, dict(key), pages, work)
                runs.update(dict.fromkeys(pages, done))
            yield runs


def run_page(page: Path, base: str, database_url: str, work: Path) -> str | None:
    """Run a page's blocks in order; why the first wrong one is wrong, or None."""
    work.mkdir(parents=True)
    home = work / "home"
    home.mkdir()
    env = block_env(base, database_url, home)
    # The blocks run in a checkout of their own (links to this one's files), so what they
    # write (a transcript file, say) lands beside them and not in the repository.
    checkout = work / "checkout"
    checkout.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".loom"):
            (checkout / entry.name).symlink_to(entry)
    for block in runnable(page):
        code, output = run_block(block, base, env, work, checkout)
        wrong = check_answer(block, code, output)
        if wrong is not None:
            return f"{block.where}: {wrong}\n--- block ---\n{block.text}--- output ---\n{output}"
    return None


def block_env(base: str, database_url: str, home: Path) -> dict[str, str]:
    """What a user's shell holds beside `make run`: no LOOM_* settings but the database the
    CLI finds (here the server's), and no activated virtualenv."""
    venv_bin = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_", "OPENAI_"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env.pop("VIRTUAL_ENV", None)
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CONFIG_HOME=str(home / ".config"),
        LOOM_DATABASE_URL=database_url,
        LOOM_BASE_URL=base,  # where the integrations' scripts look by default
        NO_PROXY="127.0.0.1,localhost",
    )
    return env


SH_PROLOGUE = """\
__guide_before=" $(compgen -v | tr '\\n' ' ') "
set -e
[ -f "$GUIDE_STATE" ] && source "$GUIDE_STATE"
cd "$GUIDE_ROOT"
"""
SH_EPILOGUE = """
for __guide_v in $(compgen -v); do
  case "$__guide_before" in *" $__guide_v "*) continue ;; esac
  case "$__guide_v" in __guide*|BASH*|PIPESTATUS|FUNCNAME|_) continue ;; esac
  declare -p "$__guide_v" 2>/dev/null | grep -v '^declare -[a-zA-Z]*r' || true
done >"$GUIDE_STATE.next"
mv "$GUIDE_STATE.next" "$GUIDE_STATE"
"""


def run_block(
    block: Block, base: str, env: dict[str, str], work: Path, checkout: Path
) -> tuple[int, str]:
    text = DEFAULT_URL.sub(base.removeprefix("http://"), block.text)
    if block.lang == "python":
        script = work / f"block_{block.line}.py"
        script.write_text(text)
        cmd = [sys.executable, str(script)]
    elif block.lang == "ts":
        cmd = ts_command(work, block.line, text)
    else:
        script = work / f"block_{block.line}.sh"
        script.write_text(SH_PROLOGUE + text + SH_EPILOGUE)
        cmd = ["bash", str(script)]
    env = dict(env, GUIDE_STATE=str(work / "state.sh"), GUIDE_ROOT=str(checkout))
    try:
        done = subprocess.run(
            cmd,
            cwd=checkout,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=BLOCK_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        said = exc.output.decode(errors="replace") if isinstance(exc.output, bytes) else exc.output
        return -1, f"timed out after {BLOCK_TIMEOUT} s\n{said or ''}"
    return done.returncode, done.stdout


def ts_command(work: Path, line: int, text: str) -> list[str]:
    """Run a TypeScript block as `first.mts` in a project that installed sdk-ts: the block's
    folder holds node_modules/loom-sdk (a link to the built package), tsx runs it."""
    sdk = built_sdk_ts()
    package = work / "node_modules" / "loom-sdk"
    if not package.exists():
        package.parent.mkdir(parents=True, exist_ok=True)
        package.symlink_to(sdk)
    script = work / f"block_{line}.mts"
    script.write_text(text)
    return [str(sdk / "node_modules" / ".bin" / "tsx"), str(script)]


def check_answer(block: Block, code: int, output: str) -> str | None:
    """Why the block's run is wrong, or None."""
    if code != 0:
        return f"exit status {code}"
    if '"error":' in output and not any('"error"' in e for e in block.expects):
        return 'the answer holds "error": and no expectation names it'
    at = 0
    for expected in block.expects:
        found = output.find(expected, at)
        if found < 0:
            return f"expected {expected!r} (in this order) in what it printed"
        at = found + len(expected)
    return None


@pytest.mark.parametrize("page", RUN_PAGES, ids=lambda p: p.name)
def test_page_runs_as_written(
    page: Path, page_runs: dict[Path, Future[dict[Path, str | None]]]
) -> None:
    """GIVEN a server as the page says to start it WHEN each block of the page runs in order
    THEN each exits 0 and prints what its expectations say."""
    wrong = page_runs[page].result(timeout=600)[page]
    assert wrong is None, wrong
