"""The OpenAPI 3.1 document, generated from the op registry.

`python -m chalicelib.openapi > openapi.json` writes what `/openapi.json` serves.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from chalicelib.registry import op_description, output_schema, registered

_REF = "#/components/schemas/{model}"
ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
}
_STATUSES = {
    "400": "Malformed JSON or a refused value",
    "401": "Missing or unknown token",
    "403": "The token's role, org, namespace or read scope does not allow it",
    "404": "Unknown op",
    "409": "A compare-and-set or limit conflict",
    "413": "The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default)",
    "422": "The body failed validation",
    "502": "The model provider failed",
    "503": "A dependency is unavailable; try again",
}


def openapi_document() -> dict[str, Any]:
    import chalicelib.ops  # noqa: F401  (registers every op)

    components: dict[str, Any] = {"Error": ERROR_SCHEMA}
    paths: dict[str, Any] = {}
    for name, spec in sorted(registered().items()):
        request = spec.input_model.model_json_schema(ref_template=_REF)
        # The org is filled from the caller (its token, or the install's org with auth off).
        if "org" in request.get("required", []):
            request["required"] = [f for f in request["required"] if f != "org"]
        response = output_schema(spec, ref_template=_REF)
        components.update(request.pop("$defs", {}))
        components.update(response.pop("$defs", {}))
        errors = {
            code: {
                "description": text,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            }
            for code, text in _STATUSES.items()
        }
        paths[f"/v1/{name}"] = {
            "post": {
                "operationId": name,
                "summary": (spec.fn.__doc__ or name).strip().splitlines()[0],
                "description": op_description(spec),
                "tags": [name.split(".", 1)[0]],
                "x-loom-role": spec.role,
                "x-loom-kind": spec.kind,
                "x-loom-mcp": spec.mcp,
                "requestBody": {
                    # An empty body is served as {}: required only where a field is.
                    "required": bool(request.get("required")),
                    "content": {"application/json": {"schema": request}},
                },
                "responses": {
                    "200": {
                        "description": "The op's output",
                        "content": {"application/json": {"schema": response}},
                    },
                    **errors,
                },
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "Loom", "version": "0.1.0"},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


if __name__ == "__main__":
    json.dump(openapi_document(), sys.stdout, indent=1)
    sys.stdout.write("\n")
