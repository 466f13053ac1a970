import { ConnectionError, errorFromResponse, LedgerError } from './errors.js';
import { operationTable } from './generated/operations.js';
import { PageRequest, type Page } from './pages.js';
import { resources } from './resources.js';
import { isRetryableStatus, MAX_RETRY_AFTER_MS, retryAfterMs, retryDelayMs } from './retry.js';
import type { MethodOf, OperationId, RequestOptions } from './types.js';
import { verifyWebhook } from './webhooks.js';

export interface LedgerOptions {
  /** `sk_sandbox_…` or `sk_production_…`. */
  apiKey: string;
  /** Where the API answers, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** Retries after the first attempt of a call (network errors, 409 in progress, 429, 5xx); default 2. */
  maxRetries?: number;
  /** Time allowed to each attempt, in milliseconds; default 60,000. */
  timeoutMs?: number;
}

/** One call: the operation's row, the filled path, the query or body, and the call's options. */
interface Call {
  method: string;
  path: string;
  query: Record<string, unknown> | undefined;
  body: unknown;
  options: RequestOptions;
}

type Resource<R extends Record<string, OperationId>> = { [M in keyof R]: MethodOf<R[M]> };
type Resources = typeof resources;

/** `?a=1&metadata[k]=v&type=x,y`: deep objects as `name[key]`, arrays comma-separated (SPEC §8, §17, §18). */
function queryString(query: Record<string, unknown> | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) params.append(name, value.map(String).join(','));
    else if (typeof value === 'object') for (const [key, inner] of Object.entries(value)) params.append(`${name}[${key}]`, String(inner));
    else params.append(name, typeof value === 'string' ? value : JSON.stringify(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    });
  });
}

async function bodyOf(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!(response.headers.get('content-type') ?? '').includes('json')) return text;
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The client: `ledger.<resource>.<method>(…)` for every operation of the API (see `resources`), each typed from
 * the generated OpenAPI types, plus `ledger.webhooks.verify`.
 */
export class Ledger {
  readonly keys: Resource<Resources['keys']>;
  readonly users: Resource<Resources['users']>;
  readonly limits: Resource<Resources['limits']>;
  readonly intents: Resource<Resources['intents']>;
  readonly transactions: Resource<Resources['transactions']>;
  readonly accounts: Resource<Resources['accounts']>;
  readonly transfers: Resource<Resources['transfers']>;
  readonly ach: Resource<Resources['ach']>;
  readonly refunds: Resource<Resources['refunds']>;
  readonly disputes: Resource<Resources['disputes']>;
  readonly tokens: Resource<Resources['tokens']>;
  readonly webhooks: Resource<Resources['webhooks']> & { verify: typeof verifyWebhook };
  readonly events: Resource<Resources['events']>;
  readonly simulate: Resource<Resources['simulate']>;
  readonly operations: Resource<Resources['operations']>;

  private readonly apiKey: string;
  private readonly baseUrl: string;
  private readonly maxRetries: number;
  private readonly timeoutMs: number;

  constructor(options: LedgerOptions) {
    if (!options.apiKey) throw new TypeError('Ledger: apiKey is required');
    if (!options.baseUrl) throw new TypeError('Ledger: baseUrl is required');
    this.apiKey = options.apiKey;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.maxRetries = options.maxRetries ?? 2;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.keys = this.resource(resources.keys);
    this.users = this.resource(resources.users);
    this.limits = this.resource(resources.limits);
    this.intents = this.resource(resources.intents);
    this.transactions = this.resource(resources.transactions);
    this.accounts = this.resource(resources.accounts);
    this.transfers = this.resource(resources.transfers);
    this.ach = this.resource(resources.ach);
    this.refunds = this.resource(resources.refunds);
    this.disputes = this.resource(resources.disputes);
    this.tokens = this.resource(resources.tokens);
    this.webhooks = { ...this.resource(resources.webhooks), verify: verifyWebhook };
    this.events = this.resource(resources.events);
    this.simulate = this.resource(resources.simulate);
    this.operations = this.resource(resources.operations);
  }

  private resource<R extends Record<string, OperationId>>(table: R): Resource<R> {
    return Object.fromEntries(Object.entries(table).map(([name, id]) => [name, this.method(id)])) as unknown as Resource<R>;
  }

  /** The method of one operation: positional path parameters, then the body or query, then options. */
  private method(id: OperationId): (...args: unknown[]) => unknown {
    const row = operationTable[id];
    return (...args: unknown[]) => {
      let path: string = row.path;
      row.pathParams.forEach((name, i) => {
        path = path.replace(`{${name}}`, encodeURIComponent(String(args[i])));
      });
      const rest = args.slice(row.pathParams.length);
      const input = row.input === 'none' ? undefined : rest.shift();
      const options = (rest.shift() ?? {}) as RequestOptions;
      const call = (query: Record<string, unknown> | undefined): Call => ({
        method: row.method,
        path,
        query,
        body: row.input === 'body' ? input : undefined,
        options,
      });
      const query = row.input === 'query' ? (input as Record<string, unknown> | undefined) : undefined;
      if (!row.paged) return this.request(call(query));
      return new PageRequest((cursor) => this.request(call(cursor === undefined ? query : { ...query, cursor })) as Promise<Page<unknown>>);
    };
  }

  /** One call with its retries; every attempt of a POST carries the same `X-Idempotency-Key`. */
  private async request(call: Call): Promise<unknown> {
    const maxRetries = call.options.maxRetries ?? this.maxRetries;
    const headers: Record<string, string> = { Authorization: `Bearer ${this.apiKey}`, Accept: 'application/json' };
    if (call.body !== undefined) headers['Content-Type'] = 'application/json';
    if (call.method === 'POST') headers['X-Idempotency-Key'] = call.options.idempotencyKey ?? crypto.randomUUID();
    const url = `${this.baseUrl}${call.path}${queryString(call.query)}`;
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    for (let retry = 0; ; retry += 1) {
      const outcome = await this.attempt({ url, method: call.method, headers, body }, call.options);
      if (!(outcome instanceof LedgerError)) return outcome;
      const wait = outcome.status === undefined ? undefined : retryAfterMs(outcome.headers?.get('retry-after') ?? null);
      const retryable = outcome instanceof ConnectionError || isRetryableStatus(outcome.status!, outcome.code);
      if (!retryable || retry >= maxRetries || (wait ?? 0) > MAX_RETRY_AFTER_MS) throw outcome;
      await sleep(retryDelayMs(retry, wait), call.options.signal);
    }
  }

  /** One HTTP exchange: the parsed body of a 2xx, or the error to throw or retry on (the caller's abort is thrown). */
  private async attempt(
    init: { url: string; method: string; headers: Record<string, string>; body: string | undefined },
    options: RequestOptions,
  ): Promise<unknown> {
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let response: Response;
    try {
      response = await fetch(init.url, { method: init.method, headers: init.headers, body: init.body, signal });
    } catch (cause) {
      if (options.signal?.aborted) throw cause;
      const timedOut = timeout.aborted;
      return new ConnectionError({
        type: 'connection_error',
        code: timedOut ? 'timeout' : 'network_error',
        message: timedOut ? `No answer within ${options.timeoutMs ?? this.timeoutMs} ms` : `Could not reach ${init.url}`,
        cause,
      });
    }
    const parsed = await bodyOf(response);
    return response.ok ? parsed : errorFromResponse(response.status, response.headers, parsed);
  }
}
