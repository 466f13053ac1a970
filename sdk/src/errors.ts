/** The error object every non-2xx answer carries (SPEC §3). */
export interface ErrorBody {
  type: string;
  code: string;
  message: string;
  param?: string;
  details?: { param: string; message: string }[];
  request_id?: string;
}

export interface LedgerErrorInit {
  message: string;
  status?: number | undefined;
  type: string;
  code: string;
  param?: string | undefined;
  details?: ErrorBody['details'];
  requestId?: string | undefined;
  headers?: Headers | undefined;
  cause?: unknown;
}

/** Every error the client throws. `status` is absent when no answer came (a network error or a timeout). */
export class LedgerError extends Error {
  readonly status: number | undefined;
  readonly type: string;
  readonly code: string;
  readonly param: string | undefined;
  readonly details: ErrorBody['details'];
  readonly requestId: string | undefined;
  readonly headers: Headers | undefined;

  constructor(init: LedgerErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.type = init.type;
    this.code = init.code;
    this.param = init.param;
    this.details = init.details;
    this.requestId = init.requestId;
    this.headers = init.headers;
  }
}

/** 400, 404, 409 `invalid_state`, 413, 415: the request is wrong for the API or for the resource's state. */
export class InvalidRequestError extends LedgerError {}
/** 401: the API key is missing, unknown, revoked or of the other environment. */
export class AuthenticationError extends LedgerError {}
/** 403: a write from an address not on the organization's allowlist. */
export class PermissionError extends LedgerError {}
/** 409 `idempotency_request_in_progress` (retried first), 422 `idempotency_key_reused`. */
export class IdempotencyError extends LedgerError {}
/** 429, after the retries: `Retry-After` is in `headers`. */
export class RateLimitError extends LedgerError {}
/** 5xx, after the retries. */
export class ApiError extends LedgerError {}
/** No answer: the connection failed or `timeoutMs` passed, after the retries. */
export class ConnectionError extends LedgerError {}
/** A webhook whose signature or timestamp does not verify. */
export class WebhookVerificationError extends LedgerError {}

const BY_TYPE: Record<string, typeof LedgerError> = {
  invalid_request_error: InvalidRequestError,
  authentication_error: AuthenticationError,
  permission_error: PermissionError,
  idempotency_error: IdempotencyError,
  rate_limit_error: RateLimitError,
  api_error: ApiError,
};

/** The error of a non-2xx answer: the subclass of its `type`, `ApiError` for a body that is not the error object. */
export function errorFromResponse(status: number, headers: Headers, body: unknown): LedgerError {
  const error = (body as { error?: Partial<ErrorBody> } | null)?.error;
  const requestId = error?.request_id ?? headers.get('x-request-id') ?? undefined;
  if (!error || typeof error.type !== 'string') {
    return new ApiError({ status, type: 'api_error', code: 'unexpected_response', message: `HTTP ${status}`, requestId, headers });
  }
  const Class = BY_TYPE[error.type] ?? LedgerError;
  return new Class({
    status,
    type: error.type,
    code: error.code ?? 'unknown',
    message: error.message ?? `HTTP ${status}`,
    param: error.param,
    details: error.details,
    requestId,
    headers,
  });
}
