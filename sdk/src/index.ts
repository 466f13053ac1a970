import type { components } from './generated/openapi.js';

export { Ledger, type LedgerOptions } from './client.js';
export {
  ApiError,
  AuthenticationError,
  ConnectionError,
  IdempotencyError,
  InvalidRequestError,
  LedgerError,
  PermissionError,
  RateLimitError,
  WebhookVerificationError,
  type ErrorBody,
} from './errors.js';
export { PageRequest, type Page } from './pages.js';
export { resources } from './resources.js';
export type { MethodOf, OperationId, QueryParams, RequestBody, RequestOptions, ResponseBody } from './types.js';
export { verifyWebhook, type WebhookEvent } from './webhooks.js';
export type { components, operations, paths } from './generated/openapi.js';
export { operationTable } from './generated/operations.js';

/** Every schema of the API by name: `Schemas['Transaction']`, `Schemas['User']`, … */
export type Schemas = components['schemas'];
