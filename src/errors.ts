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
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: string,
    message: string,
    readonly extra: { param?: string; details?: ErrorDetail[]; headers?: Record<string, string> } = {},
  ) {
    super(message);
  }

  toBody(requestId: string): ErrorBody {
    const error: ErrorBody['error'] = { type: this.type, code: this.code, message: this.message, request_id: requestId };
    if (this.extra.param !== undefined) error.param = this.extra.param;
    if (this.extra.details !== undefined) error.details = this.extra.details;
    return { error };
  }
}

export const errors = {
  invalidJson: (message = 'The request body is not valid JSON.') => new ApiError(400, 'invalid_request_error', 'invalid_json', message),
  validation: (details: ErrorDetail[]) =>
    new ApiError(
      400,
      'invalid_request_error',
      'validation_failed',
      details.length === 1
        ? `Invalid value for ${details[0]!.param}: ${details[0]!.message}`
        : `The request has ${details.length} invalid fields.`,
      { param: details[0]?.param, details },
    ),
  resourceMissing: (param: string, id: string) =>
    new ApiError(400, 'invalid_request_error', 'resource_missing', `No such ${param.replace(/_id$/, '')}: '${id}'.`, { param }),
  accountRequired: () =>
    new ApiError(
      400,
      'invalid_request_error',
      'account_required',
      'This organization has several settlement accounts; name one with account_id.',
      { param: 'account_id' },
    ),
  identityNotVerified: () =>
    new ApiError(
      400,
      'invalid_request_error',
      'identity_not_verified',
      'This organization requires verified identities: identity_verified must be true.',
      { param: 'identity_verified' },
    ),
  // RFC 9110 §11.6.1: a 401 names the scheme the client should use.
  unauthenticated: (message = 'Missing or invalid API key. Send Authorization: Bearer sk_<environment>_...') =>
    new ApiError(401, 'authentication_error', 'unauthenticated', message, { headers: { 'WWW-Authenticate': 'Bearer' } }),
  ipNotAllowed: (ip: string) =>
    new ApiError(403, 'permission_error', 'ip_not_allowed', `Write requests from ${ip} are not on this organization's IP allowlist.`),
  notFound: (resource: string, id: string) => new ApiError(404, 'invalid_request_error', 'not_found', `No such ${resource}: '${id}'.`),
  routeNotFound: (method: string, path: string) =>
    new ApiError(404, 'invalid_request_error', 'route_not_found', `No route for ${method} ${path}.`),
  methodNotAllowed: (method: string, path: string, allowed: string[]) =>
    new ApiError(
      405,
      'invalid_request_error',
      'method_not_allowed',
      `${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}.`,
      { headers: { Allow: allowed.join(', ') } },
    ),
  invalidState: (message: string) => new ApiError(409, 'invalid_request_error', 'invalid_state', message),
  idempotencyInProgress: () =>
    new ApiError(
      409,
      'idempotency_error',
      'idempotency_request_in_progress',
      'A request with the same idempotency key is still executing; retry after it finishes.',
    ),
  idempotencyKeyReused: () =>
    new ApiError(
      422,
      'idempotency_error',
      'idempotency_key_reused',
      'This X-Idempotency-Key was already used with another endpoint or another body.',
      { param: 'X-Idempotency-Key' },
    ),
  payloadTooLarge: (limitBytes: number) =>
    new ApiError(413, 'invalid_request_error', 'payload_too_large', `The request body exceeds ${limitBytes} bytes.`),
  unsupportedMediaType: () =>
    new ApiError(415, 'invalid_request_error', 'unsupported_media_type', 'Request bodies must be JSON (Content-Type: application/json).'),
  rateLimited: (retryAfterSeconds: number) =>
    new ApiError(429, 'rate_limit_error', 'rate_limited', 'Too many requests; retry after the time in Retry-After.', {
      headers: { 'Retry-After': String(retryAfterSeconds) },
    }),
  tooManyAuthFailures: (retryAfterSeconds: number) =>
    new ApiError(429, 'rate_limit_error', 'too_many_auth_failures', 'Too many failed authentication attempts from this address.', {
      headers: { 'Retry-After': String(retryAfterSeconds) },
    }),
  internal: () => new ApiError(500, 'api_error', 'internal_error', 'An internal error occurred; quote the request id when reporting it.'),
  unavailable: (message: string, retryAfterSeconds = 5) =>
    new ApiError(503, 'api_error', 'unavailable', message, { headers: { 'Retry-After': String(retryAfterSeconds) } }),
};
