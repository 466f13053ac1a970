import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import ipaddr from 'ipaddr.js';
import type { Logger } from 'pino';
import type { ZodError, ZodType } from 'zod';
import type { Config } from '../config';
import type { Pool, PoolClient, Queryable } from '../db/pool';
import { hashApiKey, hashesEqual, parseApiKey, type Environment } from '../orgs/keys';
import type { Organization } from '../orgs/repo';
import type { Services } from '../services';
import { ApiError, errors, type ErrorDetail } from './errors';

/** Limits of the edge, every one explicit. */
export const EDGE_LIMITS = {
  bodyBytesMax: 64 * 1024,
  windowMs: 60_000,
  authFailuresPerWindow: 20,
  idempotencyRetentionHours: 24,
  /** How long a duplicate waits for the original to finish before answering 409 in progress. */
  idempotencyWaitMs: 10_000,
  idempotencyKeyLengthMax: 255,
};

export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };

/** What a route's handler may reach; the app builds it once. Feature modules add their services here. */
export interface EdgeDeps {
  config: Config;
  pool: Pool;
  log: Logger;
  clock: Clock;
  services: Services;
}





export interface Caller {
  organization: Organization;
  keyId: string;
  environment: Environment;
}

export interface RouteContext<B, P, Q> {
  caller: Caller;
  /** Inside a write: the request's own database transaction. Inside a read: the pool. */
  db: Queryable;
  body: B;
  params: P;
  query: Q;
  requestId: string;
  /** The request's X-Idempotency-Key header, when it sent one (a POST's; null otherwise). */
  idempotencyKey: string | null;
  now: Date;
  deps: EdgeDeps;
}

export interface RouteResult {
  status?: number;
  body: unknown;
  /** Runs after the request's transaction commits, before the response is sent (e.g. starting a workflow). */
  afterCommit?: () => Promise<void>;
}

export interface RouteDef<B = unknown, P = unknown, Q = unknown> {
  method: 'get' | 'post' | 'delete';
  /** OpenAPI-style path: `/user/{id}`. */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  body?: ZodType<B>;
  params?: ZodType<P>;
  query?: ZodType<Q>;
  response: { status?: number; schema: ZodType; description: string };
  /** Error statuses worth documenting beyond the edge's own (401, 403, 429, ...). */
  errorStatuses?: number[];
  /** POST only: a unique body field that identifies a duplicate (`tag`, `token`); `requireHeader` demands X-Idempotency-Key. */
  idempotency?: { bodyField?: string; requireHeader?: boolean };
  /** Exists only in sandbox; production does not route it at all (404). */
  sandboxOnly?: boolean;
  handler(ctx: RouteContext<B, P, Q>): Promise<RouteResult>;
}

export function defineRoute<B = unknown, P = unknown, Q = unknown>(route: RouteDef<B, P, Q>): RouteDef<B, P, Q> {
  return route;
}

type AnyRoute = RouteDef<any, any, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export function zodDetails(error: ZodError, prefix?: string): ErrorDetail[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    return { param: prefix ? (path ? `${prefix}.${path}` : prefix) : path || '(body)', message: issue.message };
  });
}

function parseWith<T>(schema: ZodType<T> | undefined, input: unknown, prefix?: string): T {
  if (!schema) return undefined as T;
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw errors.validation(zodDetails(parsed.error, prefix));
  return parsed.data;
}

/** The client's address, per TRUST_PROXY (Express's proxy-addr); `::ffff:a.b.c.d` becomes `a.b.c.d`. */
export function clientAddress(req: Request): string {
  const raw = req.ip ?? req.socket.remoteAddress ?? '0.0.0.0';
  try {
    return ipaddr.process(raw).toString();
  } catch {
    return raw;
  }
}

export function addressAllowed(address: string, allowlist: string[]): boolean {
  if (allowlist.length === 0) return true;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return false;
  }
  return allowlist.some((entry) => {
    const [range, prefix] = ipaddr.parseCIDR(entry);
    return range.kind() === parsed.kind() && parsed.match([range, prefix] as [typeof parsed, number]);
  });
}

interface AuthRow {
  key_id: string | null;
  key_hash: Buffer | null;
  environment: Environment | null;
  organization: Organization | null;
  allowlist: string[] | null;
  failures: number;
  oldest_failure: Date | null;
}

const windowInterval = `${EDGE_LIMITS.windowMs} milliseconds`;

async function authenticate(deps: EdgeDeps, req: Request, now: Date): Promise<{ caller: Caller; allowlist: string[] }> {
  const address = clientAddress(req);
  const header = req.get('authorization') ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  const key = match?.[1] ?? '';
  const keyHash = hashApiKey(key);
  // One round trip: this address's recent failures and the key's organization with its allowlist.
  const { rows } = await deps.pool.query<AuthRow>(
    `WITH f AS (
       SELECT count(*)::int AS failures, min(failed_at) AS oldest_failure FROM auth_failures
        WHERE ip = $2::inet AND failed_at > $3::timestamptz - $4::interval
     ), k AS (
       SELECT k.id AS key_id, k.key_hash, k.environment, to_jsonb(o) AS organization,
              (SELECT coalesce(array_agg(a.cidr::text), '{}') FROM ip_allowlist a WHERE a.organization_id = o.id) AS allowlist
         FROM api_keys k JOIN organizations o ON o.id = k.organization_id
        WHERE k.key_hash = $1 AND k.revoked_at IS NULL
     )
     SELECT f.failures, f.oldest_failure, k.* FROM f LEFT JOIN k ON true`,
    [keyHash, address, now, windowInterval],
  );
  const row = rows[0]!;
  if (row.failures >= EDGE_LIMITS.authFailuresPerWindow) {
    throw errors.tooManyAuthFailures(retryAfterSeconds(row.oldest_failure ?? now, now));
  }
  const parsedKey = parseApiKey(key);
  const ok =
    parsedKey !== null &&
    row.key_hash !== null &&
    hashesEqual(row.key_hash, keyHash) &&
    row.environment === deps.config.LEDGER_ENVIRONMENT &&
    parsedKey.environment === deps.config.LEDGER_ENVIRONMENT;
  if (!ok) {
    await deps.pool.query(
      `WITH gone AS (DELETE FROM auth_failures WHERE ip = $1::inet AND failed_at <= $2::timestamptz - $3::interval)
       INSERT INTO auth_failures (ip, failed_at) VALUES ($1::inet, $2)`,
      [address, now, windowInterval],
    );
    throw errors.unauthenticated(
      parsedKey && parsedKey.environment !== deps.config.LEDGER_ENVIRONMENT
        ? `This is a ${parsedKey.environment} key; this deployment serves ${deps.config.LEDGER_ENVIRONMENT}.`
        : undefined,
    );
  }
  const org = row.organization!;
  return {
    caller: {
      organization: { ...org, created_at: new Date(org.created_at) },
      keyId: row.key_id!,
      environment: row.environment!,
    },
    allowlist: row.allowlist ?? [],
  };
}

function retryAfterSeconds(oldest: Date, now: Date): number {
  return Math.max(1, Math.ceil((oldest.getTime() + EDGE_LIMITS.windowMs - now.getTime()) / 1000));
}

export function isWrite(method: string): boolean {
  return method !== 'GET' && method !== 'HEAD';
}

async function admitRate(deps: EdgeDeps, res: Response, caller: Caller, write: boolean, now: Date): Promise<void> {
  const kind = write ? 'write' : 'read';
  const limit = write ? caller.organization.rate_limit_write : caller.organization.rate_limit_read;
  const { rows } = await deps.pool.query<{ admitted: boolean; used: number; oldest: Date | null }>(
    `SELECT admitted, used, oldest FROM rate_limit_admit($1, $2, $3, $4)`,
    [caller.organization.id, kind, now, limit],
  );
  const { admitted, used, oldest } = rows[0]!;
  const resetMs = oldest ? oldest.getTime() + EDGE_LIMITS.windowMs : now.getTime();
  res.set('X-RateLimit-Limit', String(limit));
  res.set('X-RateLimit-Remaining', String(Math.max(0, limit - used)));
  res.set('X-RateLimit-Reset', String(Math.ceil(resetMs / 1000)));
  if (!admitted) throw errors.rateLimited(retryAfterSeconds(oldest ?? now, now));
}

function parseJsonBody(req: Request): unknown {
  const raw = rawBody(req);
  if (raw.length === 0) return {};
  const type = req.get('content-type') ?? '';
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) throw errors.unsupportedMediaType();
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw errors.invalidJson();
  }
}

export function rawBody(req: Request): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}

interface IdempotencyIdentity {
  scope: string;
  key: string;
  endpoint: string;
  requestHash: string;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

function idempotencyIdentity(route: AnyRoute, req: Request, body: unknown): IdempotencyIdentity {
  const endpoint = `${req.method} ${req.path}`;
  const requestHash = createHash('sha256').update(endpoint).update('\n').update(rawBody(req)).digest('hex');
  const header = req.get('x-idempotency-key');
  if (header !== undefined) {
    if (header.length < 1 || header.length > EDGE_LIMITS.idempotencyKeyLengthMax || !PRINTABLE_ASCII.test(header)) {
      throw errors.validation([{ param: 'X-Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters' }]);
    }
    return { scope: 'header', key: header, endpoint, requestHash };
  }
  if (route.idempotency?.requireHeader) {
    throw errors.validation([{ param: 'X-Idempotency-Key', message: 'this endpoint requires an X-Idempotency-Key header' }]);
  }
  const field = route.idempotency?.bodyField;
  const value = field && body && typeof body === 'object' ? (body as Record<string, unknown>)[field] : undefined;
  if (field && typeof value === 'string' && value.length > 0) {
    return { scope: `${req.method} ${route.path}#${field}`, key: value, endpoint, requestHash };
  }
  return { scope: `${endpoint}#body`, key: requestHash, endpoint, requestHash };
}

interface StoredResponse {
  status_code: number;
  response_body: string;
  endpoint: string;
  request_hash: string;
}

function sendJsonText(res: Response, status: number, text: string): void {
  res.status(status).type('application/json').send(text);
}

/**
 * A POST: one database transaction holds the idempotency lock, the operation's writes and the stored
 * response, so a process that dies midway leaves nothing behind and no key locked (SPEC §5).
 */
async function runWrite(deps: EdgeDeps, route: AnyRoute, req: Request, res: Response, caller: Caller, requestId: string, now: Date) {
  const body = parseJsonBody(req);
  const identity = idempotencyIdentity(route, req, body);
  const client: PoolClient = await deps.pool.connect();
  let open = false;
  let released = false;
  try {
    await client.query('BEGIN');
    open = true;
    await client.query(`SET LOCAL lock_timeout = '${EDGE_LIMITS.idempotencyWaitMs}ms'`);
    try {
      await client.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [
        `idempotency:${caller.organization.id}:${identity.scope}:${identity.key}`,
      ]);
    } catch (error) {
      if ((error as { code?: string }).code === '55P03') throw errors.idempotencyInProgress();
      throw error;
    }
    await client.query(`SET LOCAL lock_timeout = 0`);
    const { rows } = await client.query<StoredResponse>(
      `SELECT status_code, response_body, endpoint, request_hash FROM idempotency_keys
        WHERE organization_id = $1 AND scope = $2 AND key = $3 AND created_at > $4::timestamptz - $5::interval`,
      [caller.organization.id, identity.scope, identity.key, now, `${EDGE_LIMITS.idempotencyRetentionHours} hours`],
    );
    const stored = rows[0];
    if (stored) {
      await client.query('ROLLBACK');
      open = false;
      if (identity.scope === 'header' && (stored.endpoint !== identity.endpoint || stored.request_hash !== identity.requestHash)) {
        throw errors.idempotencyKeyReused();
      }
      res.set('Idempotent-Replayed', 'true');
      sendJsonText(res, stored.status_code, stored.response_body);
      return;
    }
    const params = parseWith(route.params, req.params, undefined);
    const query = parseWith(route.query, req.query, undefined);
    const parsedBody = parseWith(route.body, body, undefined);

    await client.query('SAVEPOINT operation');
    let status: number;
    let text: string;
    let afterCommit: RouteResult['afterCommit'];
    try {
      const idempotencyKey = identity.scope === 'header' ? identity.key : null;
      const result = await route.handler({ caller, db: client, body: parsedBody, params, query, requestId, idempotencyKey, now, deps });
      status = result.status ?? route.response.status ?? 200;
      text = JSON.stringify(result.body);
      afterCommit = result.afterCommit;
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500 || error.code === 'validation_failed') throw error;
      // A business refusal executed: its answer is final and replays like a success.
      await client.query('ROLLBACK TO SAVEPOINT operation');
      status = error.status;
      text = JSON.stringify(error.toBody(requestId));
      for (const [name, value] of Object.entries(error.extra.headers ?? {})) res.set(name, value);
    }
    await client.query(
      `INSERT INTO idempotency_keys (organization_id, scope, key, endpoint, request_hash, status_code, response_body, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (organization_id, scope, key) DO UPDATE
         SET endpoint = EXCLUDED.endpoint, request_hash = EXCLUDED.request_hash, status_code = EXCLUDED.status_code,
             response_body = EXCLUDED.response_body, created_at = EXCLUDED.created_at`,
      [caller.organization.id, identity.scope, identity.key, identity.endpoint, identity.requestHash, status, text, now],
    );
    await client.query('COMMIT');
    open = false;
    // The connection goes back before afterCommit (e.g. a workflow start, tens of ms): holding it there
    // starved the pool under concurrent POSTs.
    client.release();
    released = true;
    if (afterCommit) await afterCommit();
    sendJsonText(res, status, text);
  } finally {
    if (open) await client.query('ROLLBACK').catch(() => undefined);
    if (!released) client.release();
  }
}

async function runRead(deps: EdgeDeps, route: AnyRoute, req: Request, res: Response, caller: Caller, requestId: string, now: Date) {
  const params = parseWith(route.params, req.params, undefined);
  const query = parseWith(route.query, req.query, undefined);
  const result = await route.handler({ caller, db: deps.pool, body: undefined, params, query, requestId, idempotencyKey: null, now, deps });
  sendJsonText(res, result.status ?? route.response.status ?? 200, JSON.stringify(result.body));
}

/**
 * The edge every endpoint passes through, in SPEC §4's order: authenticate (401) → allowlist (403, writes)
 * → rate limit (429) → idempotency → validation → the operation.
 */
export function edgeHandler(deps: EdgeDeps, route: AnyRoute) {
  return async (req: Request, res: Response): Promise<void> => {
    const requestId = res.locals.requestId as string;
    const now = deps.clock.now();
    const write = isWrite(req.method);
    const { caller, allowlist } = await authenticate(deps, req, now);
    res.locals.organizationId = caller.organization.id;
    if (write && !addressAllowed(clientAddress(req), allowlist)) throw errors.ipNotAllowed(clientAddress(req));
    await admitRate(deps, res, caller, write, now);
    if (route.method === 'post') await runWrite(deps, route, req, res, caller, requestId, now);
    else if (write) await runWriteWithoutIdempotency(deps, route, req, res, caller, requestId, now);
    else await runRead(deps, route, req, res, caller, requestId, now);
  };
}

/** DELETE and other non-POST writes: naturally idempotent, still one transaction. */
async function runWriteWithoutIdempotency(deps: EdgeDeps, route: AnyRoute, req: Request, res: Response, caller: Caller, requestId: string, now: Date) {
  const params = parseWith(route.params, req.params, undefined);
  const query = parseWith(route.query, req.query, undefined);
  const client = await deps.pool.connect();
  try {
    await client.query('BEGIN');
    const result = await route.handler({ caller, db: client, body: undefined, params, query, requestId, idempotencyKey: null, now, deps });
    await client.query('COMMIT');
    if (result.afterCommit) await result.afterCommit();
    sendJsonText(res, result.status ?? route.response.status ?? 200, JSON.stringify(result.body));
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** Periodic cleanup of the edge's tables: expired idempotency records and old auth failures. */
export async function purgeEdgeState(db: Queryable, now: Date): Promise<{ idempotency: number; authFailures: number }> {
  const idempotency = await db.query(`DELETE FROM idempotency_keys WHERE created_at <= $1::timestamptz - $2::interval`, [
    now, `${EDGE_LIMITS.idempotencyRetentionHours} hours`,
  ]);
  const failures = await db.query(`DELETE FROM auth_failures WHERE failed_at <= $1::timestamptz - $2::interval`, [now, windowInterval]);
  return { idempotency: idempotency.rowCount ?? 0, authFailures: failures.rowCount ?? 0 };
}
