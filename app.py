"""Loom's entrypoints: routes only; everything else lives in chalicelib/."""

import os

from chalice import Chalice, Rate, Response
from chalice.app import SQSEvent

from chalicelib import dashboard, web
from chalicelib.config import Settings
from chalicelib.deps import get_deps

app = Chalice(app_name="loom")

# Any media type: the body is read as JSON whatever a client labels it (a bad one answers 400
# in the contract's error shape, never Chalice's 415).
_BODY_TYPES = ["*/*"]


def _every(setting: str, seconds_per_unit: int) -> Rate:
    """A schedule's cadence from its setting as packaged (`LOOM_<NAME>`, else its default), in
    whole minutes, at least one (EventBridge's finest rate). A value that does not read keeps
    the default: the settings' own check names it when the function first runs."""
    default = float(Settings.model_fields[setting].default)
    try:
        value = float(os.environ.get("LOOM_" + setting.upper()) or default)
    except ValueError:
        value = default
    minutes = round(value * seconds_per_unit / 60) if value == value else 1  # NaN: 1 minute
    return Rate(max(1, minutes), unit=Rate.MINUTES)


def _respond(answer: web.Answer) -> Response:
    status, body, headers = answer
    return Response(
        body=body if body is not None else "",
        status_code=status,
        headers={"Content-Type": "application/json", **headers},
    )


@app.route("/healthz", methods=["GET"])
def healthz() -> Response:
    return _respond(web.health(get_deps()))


@app.route("/healthz", methods=["POST", "PUT", "PATCH", "DELETE"], content_types=_BODY_TYPES)
def healthz_wrong_method() -> Response:
    return _respond(web.method_not_allowed("GET", "the health check is GET /healthz"))


@app.route("/", methods=["GET"])
def dashboard_page() -> Response:
    # The full path a client asked for (an API Gateway stage root such as /dev included).
    request = app.current_request
    path = (request.context or {}).get("path", "/") if request is not None else "/"
    status, body, headers = dashboard.page(path)
    return Response(body=body, status_code=status, headers=headers)


@app.route("/dashboard/{name}", methods=["GET"])
def dashboard_asset(name: str) -> Response:
    status, body, headers = dashboard.asset(name)
    return Response(body=body, status_code=status, headers=headers)


@app.route("/openapi.json", methods=["GET"])
def openapi_json() -> Response:
    from chalicelib.openapi import openapi_document

    return _respond((200, openapi_document(), {}))


@app.route("/mcp", methods=["POST"], content_types=_BODY_TYPES)
def mcp_endpoint() -> Response:
    request = app.current_request
    return _respond(
        web.handle_mcp(request.raw_body, request.query_params or {}, request.headers, get_deps())
    )


@app.route("/mcp", methods=["GET", "DELETE", "PUT", "PATCH"], content_types=_BODY_TYPES)
def mcp_no_stream() -> Response:
    # No server-sent event stream and no session to end: MCP's 405 for GET and DELETE.
    return _respond(web.method_not_allowed("POST", "MCP messages are POSTed to /mcp"))


@app.route("/v1", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], content_types=_BODY_TYPES)
def no_op() -> Response:
    return _respond(web.no_op_named())


@app.route("/v1/{op_name}", methods=["POST"], content_types=_BODY_TYPES)
def invoke_op(op_name: str) -> Response:
    request = app.current_request
    return _respond(web.handle_op(op_name, request.raw_body, request.headers, get_deps()))


@app.route("/v1/{op_name}", methods=["GET", "PUT", "PATCH", "DELETE", "HEAD"])
def op_wrong_method(op_name: str) -> Response:
    return _respond(web.wrong_method(op_name))


@app.schedule(_every("retention_interval_minutes", 60), name="conversation_retention")
def conversation_retention(event: object) -> dict[str, int]:
    from chalicelib.workers.retention import purge_expired_conversations

    return purge_expired_conversations(get_deps())


@app.schedule(_every("conversation_titler_interval_minutes", 60), name="conversation_titler")
def conversation_titler(event: object) -> dict[str, int]:
    from chalicelib.workers.titler import title_threads

    return title_threads(get_deps())


# The packaged event source reads arn:...:<this name> through Fn::Sub, so ${Stage} names the
# queue the template creates (loom-extraction-${Stage}) whatever stage is deployed.
@app.on_sqs_message(queue="loom-extraction-${Stage}", batch_size=10)
def extraction_queue(event: SQSEvent) -> dict:
    from chalicelib.workers.extraction_queue import handle_sqs_batch

    web.load_ops()  # a job runs the op its request named

    return handle_sqs_batch(get_deps(), event.to_dict())


@app.schedule(Rate(1, unit=Rate.HOURS), name="extraction_queue_expiry")
def extraction_queue_expiry(event: object) -> int:
    from chalicelib.workers.extraction_queue import expire_stale_jobs

    return expire_stale_jobs(get_deps())


@app.schedule(_every("observe_extract_interval_seconds", 1), name="observe_extract")
def observe_extract(event: object) -> dict[str, int]:
    from chalicelib.workers.observe_extract import distil_sessions

    web.load_ops()  # a distilled session is extracted by its op

    return distil_sessions(get_deps())


@app.schedule(_every("memory_workers_interval_seconds", 1), name="entity_extractor")
def entity_extractor(event: object) -> dict[str, int]:
    from chalicelib.workers.memory_maintenance import extract_entities

    return extract_entities(get_deps())


@app.schedule(_every("memory_workers_interval_seconds", 1), name="embedding_worker")
def embedding_worker(event: object) -> dict[str, int]:
    from chalicelib.workers.memory_maintenance import embed_missing

    return embed_missing(get_deps())


@app.schedule(Rate(5, unit=Rate.MINUTES), name="extraction_queue_resend")
def extraction_queue_resend(event: object) -> int:
    from chalicelib.workers.extraction_queue import resend_stranded

    return resend_stranded(get_deps())


@app.schedule(Rate(1, unit=Rate.HOURS), name="guard_sweep")
def guard_sweep(event: object) -> dict[str, int]:
    from chalicelib.workers.guard_sweep import sweep_indexed_text

    return sweep_indexed_text(get_deps())


@app.schedule(Rate(1, unit=Rate.MINUTES), name="erasure_worker")
def erasure_worker(event: object) -> dict[str, int]:
    from chalicelib.workers.erasure import run_erasure_jobs

    return run_erasure_jobs(get_deps())


@app.lambda_function(name="admin")
def admin(event: dict, context: object) -> dict:
    """A `loom` command run in the VPC beside the database, invoked by an operator:
    {"args": ["migrate"]}, {"args": ["token", "mint", "--org", "acme", "--role", "org_admin"]}."""
    from chalicelib.cli import run_captured

    return run_captured(event.get("args") if isinstance(event, dict) else None)
