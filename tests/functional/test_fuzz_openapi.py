"""Every op of `/openapi.json`, fuzzed against the real server (`loom serve`): bodies that fit
the declared schema and bodies that do not. Whatever arrives, the server answers with a status
the document declares, a body valid against that status's schema (refusals in the JSON error
shape), and never a 5xx. Fixed seed and a bounded number of examples per op."""

from __future__ import annotations

import json

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis import checks
from schemathesis.generation import GenerationMode

from chalicelib.registry import registered
from soak.faults import restartable_database
from tests.live_server import live_server
from tests.openai_stub import OpenAIStub

SEED = 14
EXAMPLES = {GenerationMode.POSITIVE: 8, GenerationMode.NEGATIVE: 5}
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
]


@pytest.fixture(scope="module")
def fuzzed():
    """The server over a database of its own (what it writes must not reach the workers other
    tests run over every org), with a model configured (a local stub) so no op is refused for
    want of one; the schema it publishes; one HTTP session."""
    with (
        restartable_database() as db,
        OpenAIStub(chat_reply=lambda req: '{"facts": []}') as stub,
        live_server(
            db.url,
            LOOM_LLM_PROVIDER="openai",
            LOOM_LLM_BASE_URL=stub.base_url,
            LOOM_LLM_API_KEY="k",
            LOOM_LLM_TIMEOUT_SECONDS="5",
        ) as base,
        requests.Session() as session,
    ):
        doc = session.get(f"{base}/openapi.json", timeout=10).json()
        # This server runs with LOOM_AUTH=off: no token is asked for, so the document's
        # bearer requirement is not fuzzed here (tests/integration/test_tenant_isolation.py
        # refuses a missing or unknown token on every op).
        doc.pop("security", None)
        yield base, schemathesis.openapi.from_dict(doc), session


# Ops that once inlined the agent into SQL holding placeholders: a "%" in it answered 500.
AGENT_READS = {"conversation.get", "conversation.list"}


def _field(case, name: str):
    return case.body.get(name) if isinstance(case.body, dict) else None


def _assert_answer(case, response) -> None:
    assert response.status_code < 500, (case.body, response.status_code, response.text)
    body = response.json()
    if response.status_code >= 400:
        error = body.get("error")
        assert isinstance(error, dict), body
        assert isinstance(error.get("code"), str) and error["code"], body
        assert isinstance(error.get("message"), str), body
    else:
        assert isinstance(body.get("ignored_args"), list), body


@pytest.mark.parametrize("mode", list(EXAMPLES), ids=lambda m: m.value)
@pytest.mark.parametrize("op_name", sorted(registered()))
def test_every_op_answers_fuzzed_bodies_as_its_schema_declares(fuzzed, op_name, mode):
    """GIVEN the published document WHEN an op gets generated bodies (fitting the schema, or
    not) over POST THEN each answer is a declared status with a conforming JSON body, no 5xx,
    and a body that breaks the schema is refused."""
    base, schema, session = fuzzed
    operation = schema[f"/v1/{op_name}"]["POST"]
    strategy = operation.as_strategy(generation_mode=mode)

    @seed(SEED)
    @settings(
        max_examples=EXAMPLES[mode],
        deadline=None,
        database=None,
        derandomize=False,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case):
        response = case.call(base_url=base, session=session, timeout=30)
        case.validate_response(response, checks=CHECKS)
        _assert_answer(case, response)

    run()


@pytest.mark.parametrize(
    "body",
    [
        b'{"\xc4\x80": 1}',  # a field name outside Latin-1
        b'{"a\\r\\nSet-Cookie: x=1": 1}',  # a field name that would split the header
        b'{"caf\xc3\xa9,x": 1}',
    ],
)
def test_unknown_field_names_of_any_shape_are_named_without_breaking_the_answer(fuzzed, body):
    """GIVEN an unknown field whose name holds a line break, a comma or a character outside
    Latin-1 WHEN it is sent THEN the answer is a 200 naming it in ignored_args as sent, and the
    header names it percent-encoded (no header is added, the connection is not dropped)."""
    base, _, session = fuzzed
    resp = session.post(
        f"{base}/v1/system.whoami", data=body, headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == 200, resp.text
    (name,) = json.loads(body)
    assert resp.json()["ignored_args"] == [name]
    assert "Set-Cookie" not in resp.headers
    header = resp.headers["X-Loom-Ignored-Args"]
    assert header.isascii() and "\n" not in header and "," not in header
    from urllib.parse import unquote

    assert unquote(header) == name


@pytest.mark.parametrize("op_name", sorted(AGENT_READS))
def test_an_agent_holding_a_percent_sign_is_served(fuzzed, op_name):
    """GIVEN a thread read by an agent named "h%" WHEN conversation.get or .list is called THEN
    it answers (an agent is any string up to 256 characters), not a 500."""
    base, _, session = fuzzed
    body = {"org": "o-pct", "namespace": "n", "agent": "h%", "thread_id": "t"}
    resp = session.post(f"{base}/v1/{op_name}", json=body, timeout=30)
    assert resp.status_code == 200, resp.text
