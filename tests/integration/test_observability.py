"""Every call leaves one structured JSON log line: op, org, namespace, status, latency."""

from __future__ import annotations

import io
import json

import pytest

from chalicelib.auth import mint_token
from chalicelib.observability import logger
from tests.conftest import Api


@pytest.fixture
def log_lines():
    stream = io.StringIO()
    handler = logger.registered_handler
    old = handler.setStream(stream)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]
    handler.setStream(old)


def test_each_call_logs_op_org_namespace_status_and_latency(api, deps, org, log_lines):
    token = mint_token(deps, org=org, role="viewer")
    a = Api(api.client, token)
    a.post("conversation.threads", namespace="ns-log")
    a.post("conversation.set_logging", namespace="ns-log", enabled=True)  # a viewer: 403
    ops = [line for line in log_lines() if line.get("message") == "op"]
    assert [(o["op"], o["org"], o["namespace"], o["status"]) for o in ops] == [
        ("conversation.threads", org, "ns-log", 200),
        ("conversation.set_logging", org, "ns-log", 403),
    ]
    assert all(o["latency_ms"] >= 0 for o in ops)


def test_a_namespace_that_is_no_valid_text_is_logged_as_its_repr(api, deps, org, log_lines):
    """GIVEN a body whose namespace holds a lone surrogate
    WHEN it is posted THEN it answers 422 and the op's log line is written, the namespace as
    its repr."""
    token = mint_token(deps, org=org, role="viewer")
    status = Api(api.client, token).raw("conversation.threads", '{"namespace": "ns\\ud800"}')[0]
    assert status == 422
    ops = [line for line in log_lines() if line.get("message") == "op"]
    assert [(o["status"], o["namespace"]) for o in ops] == [(422, repr("ns\ud800"))]
