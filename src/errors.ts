/** SPEC §3: every non-2xx response is one error object with a stable machine `code`. */
export type ErrorType =
  'invalid_request_error' | 'authentication_error' | 'permission_error' | 'idempotency_error' | 'rate_limit_error' | 'api_error';

export interface ErrorDetail {
  param: string;
  message: string;
}

export interface ErrorBody {
  error: {
    type: ErrorType;
    code: string;
    message: string;
    param?: string;
    details?: ErrorDetail[];
    request_id: string;
  };
}

export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string;
  /** What the body carries beside type, code and message, and the headers the response sends with it. */
  readonly extra: { param?: string; details?: ErrorDetail[]; headers?: Record<string, string> };

  constructor(error: {
    status: number;
    type: ErrorType;
    code: string;
    message: string;
    param?: string;
    details?: ErrorDetail[];
    headers?: Record<string, string>;
  }) {
    const { status, type, code, message, ...extra } = error;
    super(message);
    this.status = status;
    this.type = type;
    this.code = code;
    this.extra = extra;
  }

  toBody(requestId: string): ErrorBody {
    const error: ErrorBody['error'] = { type: this.type, code: this.code, message: this.message, request_id: requestId };
    if (this.extra.param !== undefined) error.param = this.extra.param;
    if (this.extra.details !== undefined) error.details = this.extra.details;
    return { error };
  }
}

export const errors = {
  invalidJson: (message = 'The request body is not valid JSON.') =>
    new ApiError({ status: 400, type: 'invalid_request_error', code: 'invalid_json', message }),
  validation: (details: ErrorDetail[]) =>
    new ApiError({
      status: 400,
      type: 'invalid_request_error',
      code: 'validation_failed',
      message:
        details.length === 1
          ? `Invalid value for ${details[0]!.param}: ${details[0]!.message}`
          : `The request has ${details.length} invalid fields.`,
      param: details[0]?.param,
      details,
    }),
  resourceMissing: (param: string, id: string) =>
    new ApiError({
      status: 400,
      type: 'invalid_request_error',
      code: 'resource_missing',
      message: `No such ${param.replace(/_id$/, '')}: '${id}'.`,
      param,
    }),
  accountRequired: () =>
    new ApiError({
      status: 400,
      type: 'invalid_request_error',
      code: 'account_required',
      message: 'This organization has several settlement accounts; name one with account_id.',
      param: 'account_id',
    }),
  identityNotVerified: () =>
    new ApiError({
      status: 400,
      type: 'invalid_request_error',
      code: 'identity_not_verified',
      message: 'This organization requires verified identities: identity_verified must be true.',
      param: 'identity_verified',
    }),
  // RFC 9110 §11.6.1: a 401 names the scheme the client should use.
  unauthenticated: (message = 'Missing or invalid API key. Send Authorization: Bearer sk_<environment>_...') =>
    new ApiError({
      status: 401,
      type: 'authentication_error',
      code: 'unauthenticated',
      message,
      headers: { 'WWW-Authenticate': 'Bearer' },
    }),
  ipNotAllowed: (ip: string) =>
    new ApiError({
      status: 403,
      type: 'permission_error',
      code: 'ip_not_allowed',
      message: `Write requests from ${ip} are not on this organization's IP allowlist.`,
    }),
  notFound: (resource: string, id: string) =>
    new ApiError({ status: 404, type: 'invalid_request_error', code: 'not_found', message: `No such ${resource}: '${id}'.` }),
  routeNotFound: (method: string, path: string) =>
    new ApiError({ status: 404, type: 'invalid_request_error', code: 'route_not_found', message: `No route for ${method} ${path}.` }),
  methodNotAllowed: (method: string, path: string, allowed: string[]) =>
    new ApiError({
      status: 405,
      type: 'invalid_request_error',
      code: 'method_not_allowed',
      message: `${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}.`,
      headers: { Allow: allowed.join(', ') },
    }),
  invalidState: (message: string) => new ApiError({ status: 409, type: 'invalid_request_error', code: 'invalid_state', message }),
  idempotencyInProgress: () =>
    new ApiError({
      status: 409,
      type: 'idempotency_error',
      code: 'idempotency_request_in_progress',
      message: 'A request with the same idempotency key is still executing; retry after it finishes.',
    }),
  idempotencyKeyReused: () =>
    new ApiError({
      status: 422,
      type: 'idempotency_error',
      code: 'idempotency_key_reused',
      message: 'This X-Idempotency-Key was already used with another endpoint or another body.',
      param: 'X-Idempotency-Key',
    }),
  payloadTooLarge: (limitBytes: number) =>
    new ApiError({
      status: 413,
      type: 'invalid_request_error',
      code: 'payload_too_large',
      message: `The request body exceeds ${limitBytes} bytes.`,
    }),
  unsupportedMediaType: () =>
    new ApiError({
      status: 415,
      type: 'invalid_request_error',
      code: 'unsupported_media_type',
      message: 'Request bodies must be JSON (Content-Type: application/json).',
    }),
  rateLimited: (retryAfterSeconds: number) =>
    new ApiError({
      status: 429,
      type: 'rate_limit_error',
      code: 'rate_limited',
      message: 'Too many requests; retry after the time in Retry-After.',
      headers: { 'Retry-After': String(retryAfterSeconds) },
    }),
  tooManyAuthFailures: (retryAfterSeconds: number) =>
    new ApiError({
      status: 429,
      type: 'rate_limit_error',
      code: 'too_many_auth_failures',
      message: 'Too many failed authentication attempts from this address.',
      headers: { 'Retry-After': String(retryAfterSeconds) },
    }),
  internal: () =>
    new ApiError({
      status: 500,
      type: 'api_error',
      code: 'internal_error',
      message: 'An internal error occurred; quote the request id when reporting it.',
    }),
  unavailable: (message: string, retryAfterSeconds = 5) =>
    new ApiError({ status: 503, type: 'api_error', code: 'unavailable', message, headers: { 'Retry-After': String(retryAfterSeconds) } }),
};
