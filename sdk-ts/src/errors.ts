/** Error answers as exceptions: the body `{"error": {"code", "message"}}` and the HTTP status. */

/** The codes the OpenAPI document's error statuses carry (a server may add others). */
export type LoomErrorCode =
  | "bad_request"
  | "unauthorized"
  | "forbidden"
  | "unknown_op"
  | "conflict"
  | "payload_too_large"
  | "validation_error"
  | "throttled"
  | "upstream_error"
  | "unavailable"
  | "bad_response"
  | (string & {});

/** An error answer: the server's `code` (e.g. `forbidden`), the HTTP `status` and `message`. */
export class LoomError extends Error {
  readonly code: LoomErrorCode;
  readonly status: number;

  constructor(code: LoomErrorCode, status: number, message: string) {
    super(`${status} ${code}: ${message}`);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }

  /** The message the server sent, without the status and code. */
  get detail(): string {
    return this.message.slice(this.message.indexOf(": ") + 2);
  }
}

/** 400: malformed JSON or a refused value. */
export class BadRequestError extends LoomError {}
/** 401: a missing or unknown token. */
export class UnauthorizedError extends LoomError {}
/** 403: the token's role, org, namespace or read scope does not allow it. */
export class ForbiddenError extends LoomError {}
/** 404: an unknown op. */
export class UnknownOpError extends LoomError {}
/** 409: a compare-and-set or limit conflict. */
export class ConflictError extends LoomError {}
/** 413: a body larger than the server takes. */
export class PayloadTooLargeError extends LoomError {}
/** 422: the body failed validation. */
export class ValidationFailedError extends LoomError {}
/** 429: past the API's rate limits. */
export class ThrottledError extends LoomError {}
/** 502: the model provider failed. */
export class UpstreamError extends LoomError {}
/** 503: a dependency is unavailable; try again. */
export class UnavailableError extends LoomError {}

const BY_STATUS: Record<number, typeof LoomError> = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: UnknownOpError,
  409: ConflictError,
  413: PayloadTooLargeError,
  422: ValidationFailedError,
  429: ThrottledError,
  502: UpstreamError,
  503: UnavailableError,
};

/** The exception for an error answer: its class by status, its code and message by body. */
export function errorFor(status: number, body: unknown): LoomError {
  const err =
    typeof body === "object" && body !== null && "error" in body
      ? (body as { error: { code?: unknown; message?: unknown } }).error
      : undefined;
  const code = typeof err?.code === "string" ? err.code : "error";
  const message = typeof err?.message === "string" ? err.message : String(body ?? "").slice(0, 200);
  const Kind = BY_STATUS[status] ?? LoomError;
  return new Kind(code, status, message);
}
