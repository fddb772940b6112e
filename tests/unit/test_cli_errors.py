"""`loom` refuses bad settings and bad options with one line that says what to do, exit 2."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chalicelib import cli
from chalicelib.config import Settings
from chalicelib.deps import set_deps

# Nothing listens on port 1: a command that reaches for the database fails at once, without
# starting an embedded one.
UNREACHABLE = "postgresql://nobody@127.0.0.1:1/x"


@pytest.fixture(autouse=True)
def cli_env(monkeypatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.setenv("LOOM_DATABASE_URL", UNREACHABLE)
    yield monkeypatch
    set_deps(None)  # the CLI swaps the process-wide Deps


def run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().err


def usage_error(capsys, *argv: str) -> str:
    """What argparse says when it refuses an option (it exits 2)."""
    with pytest.raises(SystemExit) as exited:
        cli.main(list(argv))
    assert exited.value.code == 2
    return capsys.readouterr().err


# 1. List settings from the environment.


@pytest.mark.parametrize(
    ("value", "expected"),
    [("*", ["*"]), ("bot-a,bot-b", ["bot-a", "bot-b"]), ('["a", "b"]', ["a", "b"]), ("", [])],
)
def test_a_list_setting_reads_json_or_comma_separated_names(cli_env, value, expected):
    """GIVEN LOOM_EXTRACTION_DEFER_AGENTS written as the spec writes it (`*`, `a,b`)
    WHEN the settings are read THEN it is a list, as `loom settings set` reads it."""
    cli_env.setenv("LOOM_EXTRACTION_DEFER_AGENTS", value)
    cli_env.setenv("LOOM_MEMORY_EXTRACT_VERIFY_MODELS", "gpt-4o")
    settings = Settings()
    assert settings.extraction_defer_agents == expected
    assert settings.memory_extract_verify_models == ["gpt-4o"]


# 2. A bad environment value, an unreachable or malformed database, an unusable data directory.


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("LOOM_PORT", "abc", "LOOM_PORT=abc: Input should be a valid integer"),
        ("LOOM_EMBED_DIM", "5000", "LOOM_EMBED_DIM=5000: Input should be less than or equal"),
        ("LOOM_POOL_MAX_SIZE", "0", "LOOM_POOL_MAX_SIZE=0: Input should be greater than"),
        ("LOOM_AUTH", "maybe", "LOOM_AUTH=maybe: Input should be 'off' or 'tokens'"),
        ("LOOM_DATABASE_URL", "notaurl", "LOOM_DATABASE_URL: not a PostgreSQL URL"),
        ("LOOM_ORG", "my org", "LOOM_ORG=my org: an org is 1-256 characters, no spaces"),
        ("LOOM_ORG", "", "LOOM_ORG=: an org is 1-256 characters, no spaces"),
    ],
)
def test_a_bad_variable_is_named_in_one_line(cli_env, capsys, name, value, said):
    """GIVEN a LOOM_* variable that does not validate WHEN any command runs
    THEN it exits 2 with one line naming the variable, its value and what to do."""
    cli_env.setenv(name, value)
    code, err = run(capsys, "migrate")
    assert code == 2
    assert err.startswith(f"error: {said}") and f"fix or unset {name}" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_unreachable_database_names_loom_database_url(capsys):
    code, err = run(capsys, "migrate")
    assert code == 2
    assert err.startswith("error: cannot connect to LOOM_DATABASE_URL (")
    assert "unset LOOM_DATABASE_URL to use the embedded database" in err


def test_an_unusable_data_dir_names_loom_data_dir(cli_env, capsys):
    cli_env.delenv("LOOM_DATABASE_URL")
    cli_env.setenv("LOOM_DATA_DIR", "/proc/nope")
    code, err = run(capsys, "migrate")
    assert code == 2
    assert err.startswith("error: cannot start the embedded PostgreSQL in LOOM_DATA_DIR=/proc/nope")


def test_serve_with_a_bad_variable_stops_before_it_says_it_is_serving(cli_env, capsys):
    cli_env.setenv("LOOM_EMBED_DIM", "5000")
    code, err = run(capsys, "serve")
    assert code == 2 and "LOOM_EMBED_DIM=5000" in err and "serving" not in err


# 3. `loom serve` on a busy or impossible port.


def test_serve_on_a_busy_port_says_so_before_anything_starts(capsys):
    """GIVEN another process listening on a port WHEN `loom serve --port` names it
    THEN it exits 2 saying the port is in use, before it reaches the database."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        code, err = run(capsys, "serve", "--port", str(port))
    assert code == 2
    assert err == (
        f"error: port {port} is in use; stop the other server or set LOOM_PORT / --port\n"
    )


def test_a_port_out_of_range_is_refused(cli_env, capsys):
    assert "argument --port: must be 1-65535, not 70000" in usage_error(
        capsys, "serve", "--port", "70000"
    )
    cli_env.setenv("LOOM_PORT", "70000")
    code, err = run(capsys, "serve")
    assert code == 2 and "LOOM_PORT=70000: Input should be less than or equal to 65535" in err


# 5. Settings servers read only at start.


@pytest.mark.parametrize(
    "name",
    [
        "model_calls_policy_refresh_seconds",
        "model_calls_policy_max_stale_seconds",
        "settings_refresh_seconds",
    ],
)
def test_settings_read_at_start_are_refused_as_live(capsys, name):
    code, err = run(capsys, "settings", "set", name, "1")
    assert code == 2
    assert f"read at start only: set LOOM_{name.upper()} and restart" in err


# 8. Token orgs and namespaces no op accepts.


@pytest.mark.parametrize(
    ("flags", "option"),
    [
        (["--org", "bad org"], "--org"),
        (["--org", "o" * 3000], "--org"),
        (["--org", "acme", "--namespace", ""], "--namespace"),
        (["--org", "acme", "--namespace", "bad ns"], "--namespace"),
    ],
)
def test_token_mint_refuses_names_no_op_accepts(capsys, flags, option):
    code, err = run(capsys, "token", "mint", "--role", "admin", *flags)
    assert code == 2
    assert err.startswith(f"error: {option} ") and "1-256 characters, no spaces" in err
    assert len(err) < 200  # a 3,000-character name is not echoed whole


@pytest.mark.parametrize("pin", ["-", "*", "", "a~b", "u" * 257])
def test_token_mint_refuses_a_pin_naming_no_one_user(capsys, pin):
    code, err = run(
        capsys, "token", "mint", "--role", "writer", "--org", "acme", "--namespace", "ns",
        "--read-scope", "own_user", "--read-user-id", pin,
    )  # fmt: skip
    assert code == 2
    assert err.startswith("error: --read-user-id ") and "names no one user" in err


# 9. `loom drops --hours`.


@pytest.mark.parametrize("hours", ["0", "-5", "721", "100000000", "2147483648"])
def test_drops_hours_must_be_within_the_30_days_kept(capsys, hours):
    err = usage_error(capsys, "drops", "--namespace", "demo", "--hours", hours)
    assert f"argument --hours: must be 1-720 (drops are kept 30 days), not {hours}" in err


# 10. A transcript with no turns.


@pytest.mark.parametrize(
    ("suffix", "text"),
    [
        (".json", "[]"),
        (".md", "# user\n\n# assistant\n\n"),
        (".jsonl", '{"role":"user","content":""}\n'),
    ],
)
def test_a_transcript_without_turns_is_an_error(capsys, tmp_path, suffix, text):
    f = tmp_path / f"empty{suffix}"
    f.write_text(text)
    code, err = run(capsys, "ingest-transcript", "--namespace", "demo", "--file", str(f))
    assert code == 2
    assert err == f"error: {f} holds no turns with text; nothing was appended\n"


# 11. `ingest-transcript --url`.


@pytest.fixture
def turn_file(tmp_path):
    f = tmp_path / "t.md"
    f.write_text("# user\nhello\n")
    return f


class _NeedsToken(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.dumps({"error": {"code": "unauthorized", "message": "needs a token"}})
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


def test_a_401_says_to_set_loom_token(capsys, turn_file):
    """GIVEN a server that wants a bearer token WHEN a transcript is sent with --url and no
    LOOM_TOKEN THEN the error says to set LOOM_TOKEN to a minted token."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NeedsToken)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        code, err = run(
            capsys, "ingest-transcript", "--namespace", "d", "--file", str(turn_file), "--url", url
        )
    finally:
        server.shutdown()
        server.server_close()
    assert code == 2
    assert "answered 401: needs a token. Set LOOM_TOKEN to a token from `loom token mint`" in err


def test_a_url_without_a_scheme_is_refused(capsys, turn_file):
    err = usage_error(
        capsys, "ingest-transcript", "--namespace", "d", "--file", str(turn_file),
        "--url", "127.0.0.1:7791",
    )  # fmt: skip
    assert "argument --url: '127.0.0.1:7791' needs http:// or https://" in err


@pytest.mark.parametrize("timeout", ["0", "-1", "nan"])
def test_a_timeout_must_be_positive(capsys, turn_file, timeout):
    err = usage_error(
        capsys, "ingest-transcript", "--namespace", "d", "--file", str(turn_file),
        "--url", "http://127.0.0.1:7791", "--timeout", timeout,
    )  # fmt: skip
    assert "argument --timeout: must be more than 0" in err


def test_url_help_names_loom_token(capsys):
    with pytest.raises(SystemExit):
        cli.main(["ingest-transcript", "--help"])
    assert "LOOM_TOKEN" in capsys.readouterr().out


# 12. `reextract` names a bad option (its log lines: tests/integration/test_extraction_reextract).


@pytest.mark.parametrize("option", ["--namespace", "--into"])
def test_reextract_names_the_bad_option(capsys, option):
    names = {"--namespace": "src", "--into": "dst", option: "bad name"}
    code, err = run(capsys, "reextract", "--org", "local", *[x for kv in names.items() for x in kv])
    assert code == 2
    assert err.startswith(f"error: {option} 'bad name' is not a valid name")
