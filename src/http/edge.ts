import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import ipaddr from 'ipaddr.js';
import type { Logger } from 'pino';
import type { QueryResult } from 'pg';
import type { ZodError, ZodType } from 'zod';
import type { Config } from '../config';
import type { Pool, PoolClient, Queryable } from '../db/pool';
import { hashApiKey, hashesEqual, parseApiKey, type Environment } from '../orgs/keys';
import type { Organization } from '../orgs/repo';
import type { Services } from '../services';
import { canonicalJson } from './canonicalJson';
import { ApiError, errors, type ErrorDetail } from './errors';
import { rejectIllFormedBody, rejectIllFormedParams, rejectUnknownQuery } from './input';

/** Limits of the edge, every one explicit. */
export const EDGE_LIMITS = {
  bodyBytesMax: 64 * 1024,
  windowMs: 60_000,
  /** Failed authentications one address (an IPv6 /64) may make per window before every request from it gets 429. */
  authFailuresPerWindow: 20,
  idempotencyRetentionHours: 24,
  /** How long a duplicate waits for the original to finish before answering 409 in progress. */
  idempotencyWaitMs: 5_000,
  /** A waiting duplicate polls the original's lock with backoff between these pauses, holding no connection meanwhile. */
  idempotencyPollMsMin: 5,
  idempotencyPollMsMax: 100,
  idempotencyKeyLengthMax: 255,
  /** Expired idempotency records are deleted in batches of this many rows, so housekeeping never holds long locks. */
  idempotencyPurgeBatchRows: 5_000,
  /** Quiet organizations whose rate-limit hits one housekeeping pass sheds. */
  rateLimitPurgeBatchCounters: 1_000,
  /**
   * Bounds on a write's transaction. A process that hangs (not dies) mid-request would otherwise hold its
   * idempotency lock and row locks forever; Postgres ends the session past these and rolls it back.
   */
  transactionStatementTimeoutMs: 30_000,
  transactionIdleTimeoutMs: 30_000,
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
  /** The OpenAPI operationId, when the one derived from method and path reads badly. */
  operationId?: string;
  summary: string;
  description?: string;
  body?: ZodType<B>;
  params?: ZodType<P>;
  query?: ZodType<Q>;
  response: { status?: number; schema: ZodType; description: string };
  /** Error statuses worth documenting beyond the edge's own (401, 403, 429, ...). */
  errorStatuses?: number[];
  /** POST only: how SPEC §5 recognises a duplicate of this endpoint. */
  idempotency?: {
    /** A unique body field that identifies a duplicate (`tag`, `token`). */
    bodyField?: string;
    /** Demands X-Idempotency-Key (400 without it). */
    requireHeader?: boolean;
    /**
     * The body field matched an earlier request whose body differs: by default that is still a duplicate and
     * replays (a `tag` names its user); a single-use value answers this error instead (not stored).
     */
    onFieldReuse?: (value: string) => ApiError;
    /**
     * The body carries secrets (card numbers): the request is fingerprinted by what this returns instead of
     * the body itself, so no hash of a secret is stored, and an identical body alone is no duplicate.
     */
    fingerprint?: (body: unknown) => unknown;
  };
  /** Exists only in sandbox; production does not route it at all (404). */
  sandboxOnly?: boolean;
  handler(ctx: RouteContext<B, P, Q>): Promise<RouteResult>;
}

export function defineRoute<B = unknown, P = unknown, Q = unknown>(route: RouteDef<B, P, Q>): RouteDef<B, P, Q> {
  return route;
}

/**
 * GET /<resource>/{id}: the caller's own resource, or 404 — an id of another organization answers exactly
 * like an unknown one (SPEC §3), so no route can reveal that it exists.
 */
export function retrieveRoute<P extends { id: string }, T>(
  route: Omit<RouteDef<unknown, P, unknown>, 'method' | 'handler' | 'errorStatuses'> & {
    /** The noun in the 404 message: "No such <resource>: '<id>'." */
    resource: string;
    find(db: Queryable, organizationId: string, id: string): Promise<T | null | undefined>;
  },
): RouteDef<unknown, P, unknown> {
  const { resource, find, ...rest } = route;
  return defineRoute<unknown, P, unknown>({
    ...rest,
    method: 'get',
    errorStatuses: [404],
    async handler({ caller, db, params }) {
      const found = await find(db, caller.organization.id, params.id);
      if (found === null || found === undefined) throw errors.notFound(resource, params.id);
      return { body: found };
    },
  });
}

type AnyRoute = RouteDef<any, any, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export function zodDetails(error: ZodError, prefix?: string): ErrorDetail[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    return { param: prefix ? (path ? `${prefix}.${path}` : prefix) : path || '(body)', message: issue.message };
  });
}

function parseWith<T>(schema: ZodType<T> | undefined, input: unknown, prefix?: string): T {
  rejectIllFormedParams(input);
  if (!schema) return undefined as T;
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw errors.validation(zodDetails(parsed.error, prefix));
  return parsed.data;
}

/** An address as Postgres's inet reads it: IPv4-mapped IPv6 becomes IPv4, an IPv6 zone (`%eth0`) is dropped. */
function parseAddress(raw: string | undefined): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (!raw) return null;
  try {
    const parsed = ipaddr.process(raw);
    return parsed.kind() === 'ipv6' ? new ipaddr.IPv6((parsed as ipaddr.IPv6).parts) : parsed;
  } catch {
    return null;
  }
}

interface ClientIdentity {
  /** The client's address per TRUST_PROXY; null when a trusted proxy forwarded something that is no address. */
  address: string | null;
  /** Where this client's failed authentications are counted: its IPv4 address, or its IPv6 /64 (one subscriber's block). */
  failureBucket: string;
}

function identifyClient(req: Request): ClientIdentity {
  // req.ip applies TRUST_PROXY (Express's proxy-addr): X-Forwarded-For counts only through the named proxies.
  const address = parseAddress(req.ip);
  const counted = address ?? parseAddress(req.socket.remoteAddress) ?? ipaddr.parse('0.0.0.0');
  const failureBucket = counted.kind() === 'ipv6'
    ? new ipaddr.IPv6([...(counted as ipaddr.IPv6).parts.slice(0, 4), 0, 0, 0, 0]).toString()
    : counted.toString();
  return { address: address?.toString() ?? null, failureBucket };
}

/** The client's address, per TRUST_PROXY (Express's proxy-addr); `::ffff:a.b.c.d` becomes `a.b.c.d`. */
export function clientAddress(req: Request): string {
  return identifyClient(req).address ?? String(req.ip);
}

interface AdmitRow {
  outcome: 'too_many_auth_failures' | 'unauthenticated' | 'ip_not_allowed' | 'rate_limited' | 'admitted';
  key_id: string | null;
  key_hash: Buffer | null;
  key_environment: Environment | null;
  organization: (Omit<Organization, 'created_at'> & { created_at: string }) | null;
  rate_limit: number | null;
  used: number | null;
  oldest: Date | null;
}

const windowInterval = `${EDGE_LIMITS.windowMs} milliseconds`;

function presentedKey(req: Request): string {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
  return match?.[1] ?? '';
}

function retryAfterSeconds(oldest: Date, now: Date): number {
  return Math.max(1, Math.ceil((oldest.getTime() + EDGE_LIMITS.windowMs - now.getTime()) / 1000));
}

/**
 * SPEC §4's checks in order, in one database round trip (migrations/0009_edge_hot_path.sql): failed-auth
 * limit (429) → key (401) → allowlist (403, writes) → rate limit (429). Sets X-RateLimit-* on every
 * authenticated answer, the refused ones included.
 */
async function admit(deps: EdgeDeps, req: Request, res: Response, write: boolean, now: Date): Promise<Caller> {
  const environment = deps.config.LEDGER_ENVIRONMENT;
  const client = identifyClient(req);
  const key = presentedKey(req);
  // Keys are looked up by their SHA-256, never by the key itself, so lookup timing says nothing about a key.
  const keyHash = hashApiKey(key);
  const { rows } = await deps.pool.query<AdmitRow>({
    // Named: each connection parses and plans it once, then only executes it.
    name: 'edge_admit',
    text: `SELECT * FROM edge_admit($1, $2::inet, $3::inet, $4, $5::interval, $6, $7, $8)`,
    values: [keyHash, client.address, client.failureBucket, now, windowInterval, environment, write, EDGE_LIMITS.authFailuresPerWindow],
  });
  const row = rows[0]!;
  if (row.outcome === 'too_many_auth_failures') throw errors.tooManyAuthFailures(retryAfterSeconds(row.oldest ?? now, now));
  const parsedKey = parseApiKey(key);
  if (row.outcome === 'unauthenticated') {
    throw errors.unauthenticated(
      parsedKey && parsedKey.environment !== environment
        ? `This is a ${parsedKey.environment} key; this deployment serves ${environment}.`
        : undefined,
    );
  }
  // The lookup matched the hash; this constant-time comparison is what the decision rests on.
  const authentic = row.key_hash !== null && hashesEqual(row.key_hash, keyHash) && parsedKey?.environment === environment;
  if (!authentic || !row.organization || row.rate_limit === null || row.used === null) throw errors.unauthenticated();

  const limit = row.rate_limit;
  const resetMs = row.oldest ? row.oldest.getTime() + EDGE_LIMITS.windowMs : now.getTime();
  res.set('X-RateLimit-Limit', String(limit));
  res.set('X-RateLimit-Remaining', String(Math.max(0, limit - row.used)));
  res.set('X-RateLimit-Reset', String(Math.ceil(resetMs / 1000)));
  res.locals.organizationId = row.organization.id;
  if (row.outcome === 'ip_not_allowed') throw errors.ipNotAllowed(client.address ?? 'an unknown address');
  if (row.outcome === 'rate_limited') throw errors.rateLimited(retryAfterSeconds(row.oldest ?? now, now));
  return {
    organization: { ...row.organization, created_at: new Date(row.organization.created_at) },
    keyId: row.key_id!,
    environment,
  };
}

export function isWrite(method: string): boolean {
  return method !== 'GET' && method !== 'HEAD';
}

function parseJsonBody(req: Request): unknown {
  const raw = rawBody(req);
  if (raw.length === 0) return {};
  const type = req.get('content-type') ?? '';
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) throw errors.unsupportedMediaType();
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw errors.invalidJson();
  }
  rejectIllFormedBody(parsed);
  return parsed;
}

export function rawBody(req: Request): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}

/** A pooled connection checked out for one transaction. */
interface Checkout {
  client: PoolClient;
  release(destroy?: boolean): void;
  /** Rolls back and releases; a connection that cannot even roll back is destroyed, never reused. */
  abandon(): Promise<void>;
}

async function checkout(pool: Pool): Promise<Checkout> {
  const client = await pool.connect();
  // A connection that dies while checked out also emits 'error' on the client; unheard, that event would
  // crash the process. The same failure reaches the request through its next query.
  const ignore = () => undefined;
  client.on('error', ignore);
  let released = false;
  const release = (destroy = false) => {
    if (released) return;
    released = true;
    client.off('error', ignore);
    client.release(destroy);
  };
  return {
    client,
    release,
    async abandon() {
      try {
        await client.query('ROLLBACK');
        release();
      } catch {
        release(true);
      }
    },
  };
}

/** Opens a write's transaction with its bounds (one round trip together with whatever `then` adds). */
function beginWrite(then = ''): string {
  return `BEGIN; SET LOCAL statement_timeout = ${EDGE_LIMITS.transactionStatementTimeoutMs}; ` +
    `SET LOCAL idle_in_transaction_session_timeout = ${EDGE_LIMITS.transactionIdleTimeoutMs}; ${then}`;
}

interface IdempotencyIdentity {
  /** 'header' for X-Idempotency-Key (shared by every endpoint, so reuse elsewhere is caught), else per endpoint. */
  scope: string;
  key: string;
}

interface IdempotencyRequest {
  identities: IdempotencyIdentity[];
  /** The concrete endpoint (`POST /intent/intent_…/approve`) and a hash of it with the exact body. */
  endpoint: string;
  requestHash: string;
  /** The unique body field's value, when the route has one and the body carries it. */
  fieldValue: string | null;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

function sha256Hex(...parts: (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\n');
  return hash.digest('hex');
}

/**
 * SPEC §5: a POST is a duplicate when its X-Idempotency-Key matches, OR its unique body field matches, or,
 * with neither, its exact body to the same endpoint matches. A request carries every identity it has.
 */
function idempotencyRequest(route: AnyRoute, req: Request, body: unknown): IdempotencyRequest {
  const endpoint = `${req.method} ${route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(req.params[name] ?? '')))}`;
  // The body as data, keys sorted: a retry that serialises the same object differently is the same request.
  const fingerprint = route.idempotency?.fingerprint;
  const requestHash = sha256Hex(endpoint, canonicalJson(fingerprint ? fingerprint(body) : body));
  const identities: IdempotencyIdentity[] = [];
  const header = req.get('x-idempotency-key');
  if (header !== undefined) {
    if (header.length < 1 || header.length > EDGE_LIMITS.idempotencyKeyLengthMax || !PRINTABLE_ASCII.test(header)) {
      throw errors.validation([{ param: 'X-Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters' }]);
    }
    identities.push({ scope: 'header', key: header });
  } else if (route.idempotency?.requireHeader) {
    throw errors.validation([{ param: 'X-Idempotency-Key', message: 'this endpoint requires an X-Idempotency-Key header' }]);
  }
  const field = route.idempotency?.bodyField;
  const value = field && body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>)[field] : undefined;
  if (field && typeof value === 'string' && value.length > 0) {
    // The field is validated after this lookup; an overlong value is keyed by its hash so it still fits the index.
    const key = value.length <= EDGE_LIMITS.idempotencyKeyLengthMax ? value : `sha256:${sha256Hex(value)}`;
    identities.push({ scope: `POST ${route.path}#${field}`, key });
  }
  if (identities.length === 0 && !fingerprint) identities.push({ scope: `${endpoint}#body`, key: requestHash });
  return { identities, endpoint, requestHash, fieldValue: typeof value === 'string' ? value : null };
}

/** A 64-bit advisory-lock id per (organization, identity), written as a decimal literal (safe to inline). */
function advisoryLockId(organizationId: string, identity: IdempotencyIdentity): string {
  return createHash('sha256').update(`idempotency\n${organizationId}\n${identity.scope}\n${identity.key}`).digest().readBigInt64BE(0).toString();
}

interface StoredResponse {
  scope: string;
  status_code: number;
  response_body: string;
  endpoint: string;
  request_hash: string;
}

async function storedResponses(db: Queryable, organizationId: string, request: IdempotencyRequest, now: Date): Promise<StoredResponse[]> {
  const { rows } = await db.query<StoredResponse>(
    `SELECT scope, status_code, response_body, endpoint, request_hash FROM idempotency_keys
      WHERE organization_id = $1 AND (scope, key) IN (SELECT * FROM unnest($2::text[], $3::text[]))
        AND created_at > $4::timestamptz - $5::interval`,
    [organizationId, request.identities.map((i) => i.scope), request.identities.map((i) => i.key), now,
      `${EDGE_LIMITS.idempotencyRetentionHours} hours`],
  );
  return rows;
}

/**
 * The stored answer this request replays, by precedence header → body field → exact body; 422 on key reuse
 * with another endpoint or body; the route's own error when a single-use body field comes with another body.
 */
function replayOf(route: AnyRoute, request: IdempotencyRequest, stored: StoredResponse[]): StoredResponse | undefined {
  for (const identity of request.identities) {
    const found = stored.find((row) => row.scope === identity.scope);
    if (!found) continue;
    const sameRequest = found.endpoint === request.endpoint && found.request_hash === request.requestHash;
    if (identity.scope === 'header' && !sameRequest) throw errors.idempotencyKeyReused();
    if (identity.scope !== 'header' && !sameRequest && route.idempotency?.onFieldReuse && request.fieldValue !== null) {
      throw route.idempotency.onFieldReuse(request.fieldValue);
    }
    return found;
  }
  return undefined;
}

/**
 * Idempotency locks held by this app's requests: a duplicate arriving at the same app awaits the original
 * instead of polling Postgres. Per app (its deps), like a process; other apps are seen only through Postgres.
 */
const inflightByApp = new WeakMap<EdgeDeps, Map<string, Promise<void>>>();

function inflightOf(deps: EdgeDeps): Map<string, Promise<void>> {
  let inflight = inflightByApp.get(deps);
  if (!inflight) {
    inflight = new Map();
    inflightByApp.set(deps, inflight);
  }
  return inflight;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function settledWithin(promise: Promise<void>, ms: number): Promise<void> {
  if (ms <= 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => { timer = setTimeout(resolve, ms); })]);
  clearTimeout(timer);
}

/**
 * Takes every identity's advisory lock inside a new transaction, or finds the original's stored answer.
 * While the original executes, a duplicate waits WITHOUT a connection (try-lock and back off), so
 * duplicates cannot starve the pool; past the deadline it answers 409 in progress.
 */
async function lockOrReplay(
  deps: EdgeDeps, organizationId: string, request: IdempotencyRequest, lockIds: string[], now: Date,
): Promise<{ tx: Checkout } | { stored: StoredResponse[] }> {
  const { pool } = deps;
  const inflight = inflightOf(deps);
  const deadlineMs = Date.now() + EDGE_LIMITS.idempotencyWaitMs;
  const locks = lockIds.length > 0 ? lockIds.map((id, i) => `pg_try_advisory_xact_lock(${id}) AS l${i}`).join(', ') : 'true AS unlocked';
  const lockSql = beginWrite(`SELECT ${locks}; SAVEPOINT operation`);
  let pauseMs = EDGE_LIMITS.idempotencyPollMsMin;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) {
      // Usually the original has finished by now: its stored answer is read without taking any lock.
      const stored = await storedResponses(pool, organizationId, request, now);
      if (stored.length > 0) return { stored };
    }
    const local = lockIds.map((id) => inflight.get(id)).find((promise) => promise !== undefined);
    if (local) {
      await settledWithin(local, deadlineMs - Date.now());
    } else {
      const tx = await checkout(pool);
      let locked = false;
      try {
        const results = (await tx.client.query(lockSql)) as unknown as QueryResult<Record<string, boolean>>[];
        const row = results[3]!.rows[0]!;
        locked = lockIds.every((_, i) => row[`l${i}`] === true);
      } catch (error) {
        await tx.abandon();
        throw error;
      }
      if (locked) return { tx };
      await tx.abandon();
    }
    const remainingMs = deadlineMs - Date.now();
    if (remainingMs <= 0) throw errors.idempotencyInProgress();
    if (!local) {
      await sleep(Math.min(pauseMs, remainingMs));
      pauseMs = Math.min(pauseMs * 2, EDGE_LIMITS.idempotencyPollMsMax);
    }
  }
}

function sendJsonText(res: Response, status: number, text: string): void {
  res.status(status).type('application/json').send(text);
}

/**
 * A POST: one database transaction holds the idempotency locks, the operation's writes and the stored
 * response, so a process that dies midway leaves nothing behind and no key locked (SPEC §5).
 */
async function runWrite(deps: EdgeDeps, route: AnyRoute, req: Request, res: Response, caller: Caller, requestId: string, now: Date) {
  const body = parseJsonBody(req);
  const organizationId = caller.organization.id;
  const request = idempotencyRequest(route, req, body);
  const lockIds = request.identities.map((identity) => advisoryLockId(organizationId, identity));
  const acquired = await lockOrReplay(deps, organizationId, request, lockIds, now);
  if ('stored' in acquired) {
    const replay = replayOf(route, request, acquired.stored)!;
    res.set('Idempotent-Replayed', 'true');
    sendJsonText(res, replay.status_code, replay.response_body);
    return;
  }
  const { tx } = acquired;
  const inflight = inflightOf(deps);
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => { finish = resolve; });
  for (const id of lockIds) inflight.set(id, finished);
  let committed = false;
  let status: number;
  let text: string;
  let afterCommit: RouteResult['afterCommit'];
  try {
    const replay = replayOf(route, request, await storedResponses(tx.client, organizationId, request, now));
    if (replay) {
      res.set('Idempotent-Replayed', 'true');
      status = replay.status_code;
      text = replay.response_body;
    } else {
      const params = parseWith(route.params, req.params, undefined);
      const query = parseWith(route.query, req.query, undefined);
      const parsedBody = parseWith(route.body, body, undefined);
      try {
        const idempotencyKey = request.identities.find((identity) => identity.scope === 'header')?.key ?? null;
        const result = await route.handler({ caller, db: tx.client, body: parsedBody, params, query, requestId, idempotencyKey, now, deps });
        status = result.status ?? route.response.status ?? 200;
        text = JSON.stringify(result.body);
        afterCommit = result.afterCommit;
      } catch (error) {
        // A 400 judged the request against current state (an unknown id, an unverified identity, a used
        // token) like validation: it is not stored, so a retry after the operator fixes the cause executes.
        if (!(error instanceof ApiError) || error.status >= 500 || error.status === 400) throw error;
        // A business refusal executed (409 invalid_state, 404): its answer is final and replays like a success.
        await tx.client.query('ROLLBACK TO SAVEPOINT operation');
        status = error.status;
        text = JSON.stringify(error.toBody(requestId));
        for (const [name, value] of Object.entries(error.extra.headers ?? {})) res.set(name, value);
      }
      await tx.client.query(
        `INSERT INTO idempotency_keys (organization_id, scope, key, endpoint, request_hash, status_code, response_body, created_at)
         SELECT $1, scope, key, $4, $5, $6, $7, $8 FROM unnest($2::text[], $3::text[]) AS i (scope, key)
         ON CONFLICT (organization_id, scope, key) DO UPDATE
           SET endpoint = EXCLUDED.endpoint, request_hash = EXCLUDED.request_hash, status_code = EXCLUDED.status_code,
               response_body = EXCLUDED.response_body, created_at = EXCLUDED.created_at`,
        [organizationId, request.identities.map((i) => i.scope), request.identities.map((i) => i.key),
          request.endpoint, request.requestHash, status, text, now],
      );
      await tx.client.query('COMMIT');
      committed = true;
    }
  } finally {
    if (committed) tx.release();
    else await tx.abandon();
    for (const id of lockIds) if (inflight.get(id) === finished) inflight.delete(id);
    finish();
  }
  if (afterCommit) await afterCommit();
  sendJsonText(res, status, text);
}

async function runRead(deps: EdgeDeps, route: AnyRoute, req: Request, res: Response, caller: Caller, requestId: string, now: Date) {
  const params = parseWith(route.params, req.params, undefined);
  const query = parseWith(route.query, req.query, undefined);
  const result = await route.handler({ caller, db: deps.pool, body: undefined, params, query, requestId, idempotencyKey: null, now, deps });
  sendJsonText(res, result.status ?? route.response.status ?? 200, JSON.stringify(result.body));
}

/** DELETE and other non-POST writes: naturally idempotent, still one bounded transaction. */
async function runWriteWithoutIdempotency(deps: EdgeDeps, route: AnyRoute, req: Request, res: Response, caller: Caller, requestId: string, now: Date) {
  const params = parseWith(route.params, req.params, undefined);
  const query = parseWith(route.query, req.query, undefined);
  const tx = await checkout(deps.pool);
  let committed = false;
  let result: RouteResult;
  try {
    await tx.client.query(beginWrite());
    result = await route.handler({ caller, db: tx.client, body: undefined, params, query, requestId, idempotencyKey: null, now, deps });
    await tx.client.query('COMMIT');
    committed = true;
  } finally {
    if (committed) tx.release();
    else await tx.abandon();
  }
  if (result.afterCommit) await result.afterCommit();
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
    const caller = await admit(deps, req, res, write, now);
    rejectUnknownQuery(route.query, req.query);
    if (route.method === 'post') await runWrite(deps, route, req, res, caller, requestId, now);
    else if (write) await runWriteWithoutIdempotency(deps, route, req, res, caller, requestId, now);
    else await runRead(deps, route, req, res, caller, requestId, now);
  };
}

/**
 * Requests no route matched: 405 with Allow on a known path, else 404. Without credentials: at once (a
 * browser's /favicon.ico is no failed login). With credentials: the edge's checks first, so an authenticated answer still carries X-RateLimit-*.
 */
export function edgeFallback(deps: EdgeDeps, allowedMethods: (path: string) => string[] = () => []) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (req.get('authorization') !== undefined) await admit(deps, req, res, isWrite(req.method), deps.clock.now());
    const allowed = allowedMethods(req.path);
    next(allowed.length > 0 ? errors.methodNotAllowed(req.method, req.path, allowed) : errors.routeNotFound(req.method, req.path));
  };
}

/**
 * Periodic cleanup of the edge's tables: expired idempotency records (in bounded batches), old failed
 * logins, and rate-limit hits of organizations that went quiet (an active one sheds its own on admission).
 */
export async function purgeEdgeState(db: Queryable, now: Date): Promise<{ idempotency: number; authFailures: number; rateLimitHits: number }> {
  let idempotency = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM idempotency_keys WHERE created_at <= $1::timestamptz - $2::interval LIMIT $3))`,
      [now, `${EDGE_LIMITS.idempotencyRetentionHours} hours`, EDGE_LIMITS.idempotencyPurgeBatchRows],
    );
    idempotency += rowCount ?? 0;
    if ((rowCount ?? 0) < EDGE_LIMITS.idempotencyPurgeBatchRows) break;
  }
  const failures = await db.query(`DELETE FROM auth_failures WHERE failed_at <= $1::timestamptz - $2::interval`, [now, windowInterval]);
  // One (organization, kind) per statement: each holds only its own counter lock, and only briefly.
  const { rows: stale } = await db.query<{ organization_id: string; kind: string; used: number }>(
    `SELECT c.organization_id, c.kind, c.used FROM rate_limit_counters c
      WHERE c.used > 0 AND EXISTS (SELECT 1 FROM rate_limit_hits h WHERE h.organization_id = c.organization_id
                                      AND h.kind = c.kind AND h.admitted_at <= $1::timestamptz - $2::interval)
      LIMIT $3`,
    [now, windowInterval, EDGE_LIMITS.rateLimitPurgeBatchCounters],
  );
  let rateLimitHits = 0;
  for (const counter of stale) {
    const { rows } = await db.query<{ used: number }>(
      `SELECT used FROM rate_limit_take($1, $2, $3, $4::interval, 1, false)`,
      [counter.organization_id, counter.kind, now, windowInterval],
    );
    rateLimitHits += Math.max(0, counter.used - rows[0]!.used);
  }
  return { idempotency, authFailures: failures.rowCount ?? 0, rateLimitHits };
}
