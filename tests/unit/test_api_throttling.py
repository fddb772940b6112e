"""The deployed API's own bounds, in the template `make package` merges into Chalice's SAM
output: stage throttling, and API Gateway's refusals in the contract's error shape."""

from __future__ import annotations

import json
from pathlib import Path

TEMPLATE = json.loads((Path(__file__).parents[2] / "infra" / "template.json").read_text())


def test_every_method_of_the_stage_is_throttled_by_parameters():
    """GIVEN the merged template WHEN Chalice's RestAPI (an AWS::Serverless::Api) is deployed
    THEN one method setting covers every path and method with a rate and a burst limit taken
    from parameters with defaults, so a flood of requests answers 429 at the gateway before it
    reaches a function or the database."""
    (setting,) = TEMPLATE["Resources"]["RestAPI"]["Properties"]["MethodSettings"]
    assert (setting["ResourcePath"], setting["HttpMethod"]) == ("/*", "*")
    rate = TEMPLATE["Parameters"][setting["ThrottlingRateLimit"]["Ref"]]
    burst = TEMPLATE["Parameters"][setting["ThrottlingBurstLimit"]["Ref"]]
    assert rate["Type"] == burst["Type"] == "Number"
    assert 1 <= rate["Default"] <= burst["Default"] <= 5000  # 5,000: the account's own burst


def test_the_gateways_own_refusals_answer_in_the_contracts_error_shape():
    """GIVEN the gateway refusing a request itself (throttled, or a body over its 10 MB)
    WHEN it answers THEN the body is {"error": {"code", "message"}} with the status the
    function would have answered."""
    answers = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in TEMPLATE["Resources"].values()
        if r.get("Type") == "AWS::ApiGateway::GatewayResponse"
    }
    for kind, status, code in [
        ("THROTTLED", "429", "throttled"),
        ("REQUEST_TOO_LARGE", "413", "payload_too_large"),
    ]:
        props = answers[kind]
        body = json.loads(props["ResponseTemplates"]["application/json"])
        assert props["StatusCode"] == status and body["error"]["code"] == code
        assert body["error"]["message"]
        assert props["RestApiId"] == {"Ref": "RestAPI"}
