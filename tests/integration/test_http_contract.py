"""The HTTP shape of ../shared/CONTRACT.md: health, errors, unknown fields."""

from __future__ import annotations

import json

import pytest

from chalicelib.auth import mint_token


def test_healthz_answers_200_once_migrated(client):
    resp = client.http.get("/healthz")
    assert resp.status_code == 200


def test_unknown_op_is_404_with_json_error(api, deps, org):
    token = mint_token(deps, org=org, role="viewer")
    status, body = api.post("no.such_op", token=token)
    assert status == 404
    assert body["error"]["code"] == "unknown_op"


def test_malformed_json_is_400_not_500(api, deps, org):
    token = mint_token(deps, org=org, role="viewer")
    for raw in ("{not json", "[1, 2]", '"a string"', b"\xff\xfe"):
        status, body, _ = api.raw("system.whoami", raw, token=token)
        assert status == 400, raw
        assert body["error"]["code"] == "bad_request"


def test_unknown_fields_are_served_and_named(api, deps, org):
    token = mint_token(deps, org=org, role="viewer")
    status, body, headers = api.raw("system.whoami", '{"colour": "red", "zz": 1}', token=token)
    assert status == 200
    assert body["ignored_args"] == ["colour", "zz"]
    assert headers["X-Loom-Ignored-Args"] == "colour,zz"


@pytest.mark.parametrize(
    ("op", "scope", "body"),
    [
        ("system.whoami", {}, {"namespace": "@me"}),
        (
            "system.whoami",
            {"read_scope": "own_user", "read_user_id": "alice"},
            {"namespace": "@me:bob"},
        ),
        ("erasure.status", {}, {"job_id": "er_none", "namespace": "@me"}),
    ],
)
def test_a_namespace_sent_to_an_op_without_one_is_an_unknown_field(api, deps, org, op, scope, body):
    """GIVEN ops that take no namespace (system.whoami, erasure.status)
    WHEN a body names one ("@me", another user's collection)
    THEN it is served and the namespace named in ignored_args, like any unknown field."""
    token = mint_token(deps, org=org, role="org_admin" if op == "erasure.status" else "viewer",
                       **scope)  # fmt: skip
    status, out = api.post(op, token=token, **body)
    assert status == 200 and out["ignored_args"] == ["namespace"], (status, out)


def test_a_huge_unknown_field_name_leaves_the_header_short(api, deps, org):
    """GIVEN unknown fields "colour", one named with 70,000 characters, and "zz"
    WHEN they are sent
    THEN the answer is a 200 whose ignored_args names all three as sent, and whose header names
    those that fit in 4,096 characters, then "..." (a longer line breaks clients that would
    otherwise lose the answer to a served request)."""
    token = mint_token(deps, org=org, role="viewer")
    huge = "x" * 70_000
    raw = json.dumps({"colour": "red", huge: 1, "zz": 1})
    status, body, headers = api.raw("system.whoami", raw, token=token)
    assert status == 200
    assert body["ignored_args"] == ["colour", huge, "zz"]
    assert headers["X-Loom-Ignored-Args"] == "colour,..."


def test_missing_token_is_401_when_auth_is_on(api):
    status, body = api.post("system.whoami")
    assert status == 401
    assert "loom token mint" in body["error"]["message"]


def test_unknown_token_is_401(api):
    status, _ = api.post("system.whoami", token="loom_not-a-real-token")
    assert status == 401


def test_another_method_answers_in_the_contracts_error_shape(client):
    """GIVEN an op and a name no op has
    WHEN each is reached by GET, PUT, PATCH or DELETE
    THEN the op answers 405 (Allow: POST) and the unknown name 404 unknown_op, both with the
    contract's JSON error body."""
    for method in ("get", "put", "patch", "delete"):
        resp = getattr(client.http, method)("/v1/system.whoami")
        body = json.loads(resp.body)
        assert (resp.status_code, body["error"]["code"]) == (405, "method_not_allowed"), body
        assert resp.headers["Allow"] == "POST"
        resp = getattr(client.http, method)("/v1/no.such_op")
        assert (resp.status_code, json.loads(resp.body)["error"]["code"]) == (404, "unknown_op")


@pytest.mark.parametrize(
    ("method", "path", "status", "code", "allow"),
    [
        ("post", "/healthz", 405, "method_not_allowed", "GET"),
        ("delete", "/healthz", 405, "method_not_allowed", "GET"),
        ("get", "/mcp", 405, "method_not_allowed", "POST"),
        ("put", "/mcp", 405, "method_not_allowed", "POST"),
        ("post", "/v1", 404, "unknown_op", None),
        ("get", "/v1", 404, "unknown_op", None),
    ],
)
def test_the_other_paths_answer_in_the_contracts_error_shape(
    client, method, path, status, code, allow
):
    """GIVEN /healthz, /mcp and /v1 itself
    WHEN each is reached by a method it does not answer (or /v1 names no op)
    THEN it answers 405 naming the method it does answer, or 404 unknown_op, with the
    contract's JSON error body (not the framework's)."""
    resp = getattr(client.http, method)(path)
    body = json.loads(resp.body)
    assert (resp.status_code, body["error"]["code"]) == (status, code), body
    assert resp.headers.get("Allow") == allow


def test_a_json_body_is_read_whatever_media_type_labels_it(api, deps, org):
    """GIVEN a JSON body labelled application/xml, a JSON-family type or nothing JSON at all
    WHEN it is posted to an op
    THEN it is read as JSON and served (never Chalice's 415), and one that is no JSON answers
    400 in the contract's shape."""
    token = mint_token(deps, org=org, role="viewer")
    for media in ("application/xml", "application/vnd.api+json", "image/png"):
        status, body, _ = api.raw("system.whoami", "{}", token=token, **{"Content-Type": media})
        assert status == 200, (media, body)
    status, body, _ = api.raw("system.whoami", "<a/>", token=token, **{"Content-Type": "text/xml"})
    assert (status, body["error"]["code"]) == (400, "bad_request")
