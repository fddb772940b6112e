"""The HTTP shape of ../shared/CONTRACT.md: health, errors, unknown fields."""

from __future__ import annotations

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


def test_missing_token_is_401_when_auth_is_on(api):
    status, body = api.post("system.whoami")
    assert status == 401
    assert "loom token mint" in body["error"]["message"]


def test_unknown_token_is_401(api):
    status, _ = api.post("system.whoami", token="loom_not-a-real-token")
    assert status == 401
