"""Errors that carry their HTTP status and the spec's error code."""

from __future__ import annotations

from typing import Any


class LoomError(Exception):
    """Base error: `code` and `status` reach the client as the JSON error body."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


class BadRequestError(LoomError):
    status, code = 400, "bad_request"


class UnauthorizedError(LoomError):
    status, code = 401, "unauthorized"


class ForbiddenError(LoomError):
    status, code = 403, "forbidden"


class UnknownOpError(LoomError):
    status, code = 404, "unknown_op"


class ConflictError(LoomError):
    status, code = 409, "conflict"


class PayloadTooLargeError(LoomError):
    status, code = 413, "payload_too_large"


class ValidationFailedError(LoomError):
    status, code = 422, "validation_error"


class UpstreamError(LoomError):
    status, code = 502, "upstream_error"


class UnavailableError(LoomError):
    status, code = 503, "unavailable"
