"""LOOM_AUTH=off serves this machine only: refused inside AWS Lambda and on an address other
machines reach, and every deployed stage runs with tokens."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest
from chalice.test import Client

from chalicelib import cli
from chalicelib.deps import current_deps, set_deps

ROOT = Path(__file__).parents[2]
UNREACHABLE = "postgresql://nobody@127.0.0.1:1/x"  # a command that reaches it fails at once


@pytest.fixture
def lambda_env(monkeypatch, database_url):
    """The environment AWS Lambda gives a function, and no Deps built yet: the first request
    builds them from it, as a cold start does."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "loom-dev-APIHandler")
    monkeypatch.setenv("LOOM_DATABASE_URL", database_url)
    monkeypatch.setenv("LOOM_EMBEDDER", "fake")
    set_deps(None)
    yield monkeypatch
    built = current_deps()
    if built is not None:
        built.close()
    set_deps(None)


def post_whoami(client: Client, **headers: str):
    return client.http.post(
        "/v1/system.whoami", headers={"Content-Type": "application/json", **headers}, body="{}"
    )


class LogLines(logging.Handler):
    """What the service logs while attached to its logger."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_a_lambda_with_auth_off_refuses_every_request(lambda_env):
    """GIVEN a function in AWS Lambda configured with LOOM_AUTH=off
    WHEN its first request arrives (with no token) and the admin function runs a command
    THEN the request answers 5xx, never an answer served as the install's org_admin, and the
    log says why; the admin function exits 2 saying to set LOOM_AUTH=tokens."""
    from app import app

    lambda_env.setenv("LOOM_AUTH", "off")
    log, service_log = LogLines(), logging.getLogger("loom")
    service_log.addHandler(log)
    try:
        with Client(app, stage_name="local") as client:  # the local stage sets no LOOM_AUTH
            resp = post_whoami(client)
            admin = client.lambda_.invoke("admin", {"args": ["token", "list"]}).payload
    finally:
        service_log.removeHandler(log)

    assert resp.status_code >= 500, resp.body
    assert b"org_admin" not in resp.body
    assert any(
        line.startswith("refusing to serve: LOOM_AUTH=off is refused inside AWS Lambda")
        for line in log.lines
    ), log.lines
    assert admin["exit_code"] == 2, admin
    assert "LOOM_AUTH=off is refused inside AWS Lambda" in admin["stderr"]
    assert "set LOOM_AUTH=tokens" in admin["stderr"]


def test_a_lambda_with_tokens_serves_and_asks_for_a_token(lambda_env):
    """GIVEN the same function with LOOM_AUTH=tokens WHEN a request without a token arrives
    THEN it is served: 401 asking for a bearer token."""
    from app import app

    lambda_env.setenv("LOOM_AUTH", "tokens")
    with Client(app, stage_name="local") as client:
        resp = post_whoami(client)
    assert resp.status_code == 401
    assert json.loads(resp.body)["error"]["code"] == "unauthorized"


@pytest.fixture
def cli_env(monkeypatch):
    monkeypatch.setenv("LOOM_DATABASE_URL", UNREACHABLE)
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    yield monkeypatch
    set_deps(None)  # the CLI swaps the process-wide Deps


def free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


@pytest.mark.parametrize(
    ("env", "flags"),
    [
        ({}, ["--host", "0.0.0.0"]),
        ({}, ["--host", "192.0.2.7"]),
        ({"LOOM_HOST": "0.0.0.0"}, []),
        ({"LOOM_HOST": "127.0.0.1"}, ["--host", "0.0.0.0"]),
    ],
    ids=["all-addresses", "one-address", "LOOM_HOST", "--host-over-LOOM_HOST"],
)
def test_serve_with_auth_off_refuses_an_address_other_machines_reach(cli_env, capsys, env, flags):
    """GIVEN LOOM_AUTH=off WHEN `loom serve` is asked to listen on an address other machines
    reach (--host or LOOM_HOST) THEN it exits 2 before anything starts, saying to listen on
    127.0.0.1 or set LOOM_AUTH=tokens."""
    cli_env.setenv("LOOM_AUTH", "off")
    for name, value in env.items():
        cli_env.setenv(name, value)

    code = cli.main(["serve", "--port", free_port(), *flags])

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: LOOM_AUTH=off is refused on host "), err
    assert "set LOOM_AUTH=tokens" in err and "serving" not in err


@pytest.mark.parametrize(
    ("auth", "host"),
    [("tokens", "0.0.0.0"), ("off", "127.0.0.1"), ("off", "localhost"), ("off", "127.0.0.2")],
)
def test_serve_listens_where_auth_allows(cli_env, capsys, auth, host):
    """GIVEN tokens on every address, or auth off on a loopback address WHEN `loom serve`
    starts THEN the address is not refused: it goes on to the database (unreachable here)."""
    cli_env.setenv("LOOM_AUTH", auth)

    code = cli.main(["serve", "--port", free_port(), "--host", host])

    err = capsys.readouterr().err
    assert code == 2 and "cannot connect to LOOM_DATABASE_URL" in err, err


def test_every_deployed_stage_runs_with_tokens():
    """GIVEN the Chalice stages WHEN read as deployed (a function's own variables over its
    stage's) THEN every stage but local sets LOOM_AUTH=tokens for every function."""
    config = json.loads((ROOT / ".chalice" / "config.json").read_text())
    deployed = {name: stage for name, stage in config["stages"].items() if name != "local"}
    assert {"dev", "prod"} <= set(deployed)
    for name, stage in deployed.items():
        env = {**config.get("environment_variables", {}), **stage["environment_variables"]}
        assert env.get("LOOM_AUTH") == "tokens", name
        for function, settings in stage.get("lambda_functions", {}).items():
            own = settings.get("environment_variables", {})
            assert {**env, **own}.get("LOOM_AUTH") == "tokens", (name, function)
