// The one error type of the management API (docs/api.md#error-shapes). Services throw it; api/errors.ts maps it to a
// response in one place. `flat` bodies are `{error: message, ...extra}`; envelopes `{error: {message, type}}`.

export type ErrorShape = "flat" | "envelope";

const TYPE_BY_STATUS: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "authentication_error",
  404: "not_found_error",
  409: "invalid_request_error",
  410: "invalid_request_error",
  413: "invalid_request_error",
  422: "validation_error",
  429: "rate_limit_error",
  500: "api_error",
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly shape: ErrorShape = "envelope",
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  get type(): string {
    return TYPE_BY_STATUS[this.status] ?? "invalid_request_error";
  }

  body(): unknown {
    return this.shape === "flat" ? { error: this.message, ...this.extra } : { error: { message: this.message, type: this.type } };
  }

  /** Route-level validation and the other flat-bodied failures. */
  static flat(status: number, message: string, extra?: Record<string, unknown>): ApiError {
    return new ApiError(status, message, "flat", extra);
  }

  static envelope(status: number, message: string): ApiError {
    return new ApiError(status, message, "envelope");
  }
}

export const AUTH_FAILED = "Invalid API key or token.";
export const unauthorized = (): ApiError => ApiError.envelope(401, AUTH_FAILED);
export const forbidden = (message = "Insufficient permissions"): ApiError => ApiError.envelope(403, message);
export const notFound = (message: string): ApiError => ApiError.envelope(404, message);
export const badRequest = (message: string): ApiError => ApiError.envelope(400, message);
export const conflict = (message: string): ApiError => ApiError.envelope(409, message);
