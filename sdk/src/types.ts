/** The types of every operation's arguments and answer, derived from the generated OpenAPI types. */
import type { operations } from './generated/openapi.js';
import type { operationTable } from './generated/operations.js';
import type { Page, PageRequest } from './pages.js';

export type OperationId = keyof typeof operationTable & keyof operations;

type Operation<K extends OperationId> = operations[K];
type Row<K extends OperationId> = (typeof operationTable)[K];

/** The JSON body an operation takes. */
export type RequestBody<K extends OperationId> =
  Operation<K> extends { requestBody: { content: { 'application/json': infer Body } } } ? Body : never;

/** The query parameters an operation takes. */
export type QueryParams<K extends OperationId> = NonNullable<Operation<K>['parameters']['query']>;

type SuccessStatus = 200 | 201 | 202 | 204 | 301;
type Content<R> = R extends { content: infer C }
  ? C extends { 'application/json': infer J }
    ? keyof C extends 'application/json'
      ? J
      : C[keyof C]
    : C[keyof C]
  : string;

/** What an operation answers on success: its JSON, or the text of a non-JSON answer (CSV, metrics, HTML). */
export type ResponseBody<K extends OperationId> = Content<
  Operation<K>['responses'][Extract<keyof Operation<K>['responses'], SuccessStatus>]
>;

export interface RequestOptions {
  /** Sent as `X-Idempotency-Key` on a POST; one is generated when absent. Every retry of the call reuses it. */
  idempotencyKey?: string;
  /** Overrides the client's `maxRetries` for this call. */
  maxRetries?: number;
  /** Overrides the client's `timeoutMs` for this call (each attempt). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

type Strings<T> = T extends readonly [unknown, ...infer Rest] ? [string, ...Strings<Rest>] : [];
type PathArgs<K extends OperationId> = Strings<Row<K>['pathParams']>;
type InputArgs<K extends OperationId> = Row<K>['input'] extends 'body'
  ? [body: RequestBody<K>]
  : Row<K>['input'] extends 'query'
    ? [query?: QueryParams<K>]
    : [];
type Result<K extends OperationId> = Row<K>['paged'] extends true
  ? ResponseBody<K> extends Page<infer Item>
    ? PageRequest<ResponseBody<K>, Item>
    : never
  : Promise<ResponseBody<K>>;

/** The method that calls operation K: its path parameters in path order, then its body or query, then options. */
export type MethodOf<K extends OperationId> = (...args: [...PathArgs<K>, ...InputArgs<K>, options?: RequestOptions]) => Result<K>;
