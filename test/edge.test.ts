import { spawn, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import type { Config } from '../src/config';
import { createPool, type Pool } from '../src/db/pool';
import { createApp } from '../src/http/app';
import type { Edge } from '../src/http/edge';
import { purgeEdgeState } from '../src/http/housekeeping';
import { EDGE_LIMITS } from '../src/http/limits';
import { defineRoute, systemClock, type Clock, type RouteContext } from '../src/http/route';
import { errors } from '../src/errors';
import { allRoutes, appFeatures } from '../src/routes';
import { z } from '../src/zod';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { hashApiKey } from '../src/http/apiKeys';
import { addAllowlistEntry, createKey, listAllowlist, revokeKey, setRateLimits } from '../src/orgs/repo';
import { apiClient, createTestOrg, eventually, testConfig, testInfra, type ApiResponse, type TestOrg } from './support/harness';
import { freePort } from './support/ports';

// ---------------------------------------------------------------------------------------------------------
// Test-only routes: they exercise every edge mechanism without waiting for the users/intents features.
// Each POST creates a row in edge_test_widgets, so "executed once" is a row count.
// ---------------------------------------------------------------------------------------------------------

/** Handlers that must pause wait on these; the test resolves them. */
const gates = new Map<string, { promise: Promise<void>; open(): void; backendPid?: number; entered: boolean }>();
function gate(name: string) {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  const entry = { promise, open, entered: false } as { promise: Promise<void>; open(): void; backendPid?: number; entered: boolean };
  gates.set(name, entry);
  return entry;
}
/** How many upcoming crash-outcome requests really crash. */
let crashesLeft = 0;

const widgetBody = z.object({
  name: z.string().min(1).max(100),
  tag: z.string().min(1).max(255).optional(),
  parent_id: z.string().max(100).optional(),
  outcome: z.enum(['ok', 'invalid_state', 'account_required', 'identity_not_verified', 'crash', 'server_error']).optional(),
  gate: z.string().max(100).optional(),
});
const widget = z.object({ id: z.string(), kind: z.string(), name: z.string(), tag: z.string().nullable() });
const idParams = z.object({ id: z.string().max(100) });

function createWidget(kind: string) {
  return async ({ caller, db, body }: RouteContext<z.infer<typeof widgetBody>, unknown, unknown>) => {
    const organizationId = caller.organization.id;
    if (body.parent_id) {
      const { rowCount } = await db.query(`SELECT 1 FROM edge_test_widgets WHERE id = $1 AND organization_id = $2`, [
        body.parent_id,
        organizationId,
      ]);
      if (!rowCount) throw errors.resourceMissing('parent_id', body.parent_id);
    }
    const id = `wid_${randomString(20)}`;
    await db.query(`INSERT INTO edge_test_widgets (id, organization_id, kind, name, tag) VALUES ($1, $2, $3, $4, $5)`, [
      id,
      organizationId,
      kind,
      body.name,
      body.tag ?? null,
    ]);
    if (body.gate) {
      const entry = gates.get(body.gate)!;
      const { rows } = await db.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`);
      entry.backendPid = rows[0]!.pid;
      entry.entered = true;
      await entry.promise;
      // The row is re-read after the pause: if the connection died meanwhile, this is where it shows.
      await db.query(`SELECT 1 FROM edge_test_widgets WHERE id = $1`, [id]);
    }
    switch (body.outcome) {
      case 'invalid_state':
        throw errors.invalidState('This widget cannot be made now.');
      case 'account_required':
        throw errors.accountRequired();
      case 'identity_not_verified':
        throw errors.identityNotVerified();
      case 'server_error':
        throw errors.internal();
      case 'crash':
        if (crashesLeft > 0) {
          crashesLeft--;
          throw new Error('disk on fire: SELECT password FROM secrets WHERE key = hunter2');
        }
        break;
      default:
    }
    return { body: { id, kind, name: body.name, tag: body.tag ?? null } };
  };
}

const testRoutes = [
  defineRoute({
    method: 'post',
    path: '/test/widgets',
    tag: 'Test',
    summary: 'widget (unique body field tag)',
    body: widgetBody,
    response: { schema: widget, description: 'created' },
    idempotency: { bodyField: 'tag' },
    handler: createWidget('widget'),
  }),
  defineRoute({
    method: 'post',
    path: '/test/orders',
    tag: 'Test',
    summary: 'order (X-Idempotency-Key required)',
    body: widgetBody,
    response: { schema: widget, description: 'created' },
    idempotency: { requireHeader: true },
    handler: createWidget('order'),
  }),
  defineRoute({
    method: 'post',
    path: '/test/notes',
    tag: 'Test',
    summary: 'note (exact-body fallback)',
    body: widgetBody,
    response: { schema: widget, description: 'created' },
    handler: createWidget('note'),
  }),
  defineRoute({
    method: 'get',
    path: '/test/widgets/{id}',
    tag: 'Test',
    summary: 'one widget',
    params: idParams,
    response: { schema: widget, description: 'found' },
    async handler({ caller, db, params }) {
      const { rows } = await db.query(`SELECT id, kind, name, tag FROM edge_test_widgets WHERE id = $1 AND organization_id = $2`, [
        params.id,
        caller.organization.id,
      ]);
      if (!rows[0]) throw errors.notFound('widget', params.id);
      return { body: rows[0] };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/test/widgets/{id}',
    tag: 'Test',
    summary: 'delete a widget',
    params: idParams,
    response: { schema: z.object({ id: z.string(), deleted: z.boolean() }), description: 'deleted' },
    async handler({ caller, db, params }) {
      const { rowCount } = await db.query(`DELETE FROM edge_test_widgets WHERE id = $1 AND organization_id = $2`, [
        params.id,
        caller.organization.id,
      ]);
      if (!rowCount) throw errors.notFound('widget', params.id);
      return { body: { id: params.id, deleted: true } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/test/ping',
    tag: 'Test',
    summary: 'ping',
    query: z.object({ n: z.coerce.number().int().min(0).max(10).optional() }),
    response: { schema: z.object({ ok: z.boolean() }), description: 'ok' },
    async handler() {
      return { body: { ok: true } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/test/boom',
    tag: 'Test',
    summary: 'an uncaught error',
    response: { schema: z.object({}), description: 'never' },
    async handler() {
      throw new Error('connect ECONNABORTED postgres://admin:hunter2@db.internal/ledger SELECT * FROM api_keys');
    },
  }),
];

// ---------------------------------------------------------------------------------------------------------
// In-process servers on the real test database, with an injectable clock.
// ---------------------------------------------------------------------------------------------------------

class TestClock implements Clock {
  private frozenMs: number | null = null;
  now(): Date {
    return new Date(this.frozenMs ?? Date.now());
  }
  /** Stops the clock at `ms` (whole seconds + 0.5 s by default, so Retry-After values are exact). */
  freeze(ms = Math.floor(Date.now() / 1000) * 1000 + 500): number {
    this.frozenMs = ms;
    return ms;
  }
  set(ms: number): void {
    this.frozenMs = ms;
  }
  advance(ms: number): void {
    this.frozenMs = (this.frozenMs ?? Date.now()) + ms;
  }
}

interface EdgeServer {
  url: string;
  pool: Pool;
  config: Config;
  edge: Edge;
  close(): Promise<void>;
}

let sharedPool: Pool;

async function startEdge(
  options: { env?: Record<string, string>; clock?: Clock; host?: string; databaseUrl?: string } = {},
): Promise<EdgeServer> {
  const config = testConfig({ TRUST_PROXY: 'loopback', ...options.env });
  const pool = createPool(options.databaseUrl ?? testInfra().databaseUrl, 10);
  const log = createLogger('silent');
  const { app, edge } = createApp(
    {
      config,
      pool,
      log,
      clock: options.clock ?? systemClock,
      services: { taskQueue: config.TEMPORAL_TASK_QUEUE },
      readiness: {},
    },
    appFeatures(config, () => (options.clock ?? systemClock).now(), [...allRoutes, ...testRoutes]),
  );
  const host = options.host ?? '127.0.0.1';
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, host, () => resolve(listening));
  });
  // As startApi does: idle connections outlive fetch's 4 s keep-alive, so a busy test process never reuses
  // one the server has just closed (ECONNRESET on the next request).
  server.keepAliveTimeout = 65_000;
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    pool,
    config,
    edge,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await edge.close();
      await pool.end();
    },
  };
}

/** A fresh documentation-range address per call: each test's failed logins count against its own address, never 127.0.0.1. */
let addressCounter = 0;
function nextAddress(): string {
  addressCounter++;
  return `198.18.${Math.floor(addressCounter / 250) % 250}.${(addressCounter % 250) + 1}`;
}

/** apiClient from the harness, sending X-Forwarded-For (believed by servers started with TRUST_PROXY=loopback). */
function client(url: string, apiKey: string | null, address = nextAddress()) {
  const call = apiClient(url, apiKey);
  return (method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}) =>
    call(method, urlPath, body, { 'X-Forwarded-For': address, ...headers });
}

async function rowsOf(organizationId: string, kind?: string): Promise<number> {
  const { rows } = await sharedPool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM edge_test_widgets WHERE organization_id = $1 AND ($2::text IS NULL OR kind = $2)`,
    [organizationId, kind ?? null],
  );
  return rows[0]!.n;
}

async function storedKeys(organizationId: string): Promise<number> {
  const { rows } = await sharedPool.query<{ n: number }>(`SELECT count(*)::int AS n FROM idempotency_keys WHERE organization_id = $1`, [
    organizationId,
  ]);
  return rows[0]!.n;
}

const errorObject = z
  .object({
    error: z
      .object({
        type: z.enum([
          'invalid_request_error',
          'authentication_error',
          'permission_error',
          'idempotency_error',
          'rate_limit_error',
          'api_error',
        ]),
        code: z.string().min(1),
        message: z.string().min(1),
        param: z.string().optional(),
        details: z.array(z.object({ param: z.string(), message: z.string() })).optional(),
        request_id: z.string().regex(/^req_[A-Za-z0-9]{16,}$/),
      })
      .strict(),
  })
  .strict();

/** SPEC §3: the error object, its request_id equal to the X-Request-Id header. */
function expectError(response: ApiResponse, status: number, type: string, code: string) {
  expect({ status: response.status, type: response.body?.error?.type, code: response.body?.error?.code }).toEqual({ status, type, code });
  expect(errorObject.safeParse(response.body).success).toBe(true);
  expect(response.body.error.request_id).toBe(response.headers.get('x-request-id'));
}

function rateHeaders(response: ApiResponse) {
  return {
    limit: response.headers.get('x-ratelimit-limit'),
    remaining: response.headers.get('x-ratelimit-remaining'),
    reset: response.headers.get('x-ratelimit-reset'),
  };
}

function expectRateHeaders(response: ApiResponse) {
  const { limit, remaining, reset } = rateHeaders(response);
  expect(limit).toMatch(/^\d+$/);
  expect(remaining).toMatch(/^\d+$/);
  expect(reset).toMatch(/^\d+$/);
}

let main: EdgeServer;

beforeAll(async () => {
  sharedPool = createPool(testInfra().databaseUrl, 4);
  await sharedPool.query(`CREATE TABLE IF NOT EXISTS edge_test_widgets (
    id text PRIMARY KEY, organization_id text NOT NULL, kind text NOT NULL, name text NOT NULL, tag text,
    created_at timestamptz NOT NULL DEFAULT now())`);
  main = await startEdge();
});

afterAll(async () => {
  for (const entry of gates.values()) entry.open();
  await main?.close();
  await sharedPool?.end();
});

// ---------------------------------------------------------------------------------------------------------

describe('SPEC §2 identifiers', () => {
  test('every response carries X-Request-Id req_<random>, and errors quote the same id', async () => {
    const ok = await fetch(`${main.url}/healthz`);
    expect(ok.headers.get('x-request-id')).toMatch(/^req_[A-Za-z0-9]{16,}$/);
    const missing = await client(main.url, null)('GET', '/nowhere');
    expectError(missing, 404, 'invalid_request_error', 'route_not_found');
  });

  test('API keys are sk_<environment>_<random> and stored only as their SHA-256', async () => {
    const org = await createTestOrg(main.pool);
    expect(org.apiKey).toMatch(/^sk_sandbox_[A-Za-z0-9]{32}$/);
    const { rows } = await sharedPool.query(`SELECT * FROM api_keys WHERE id = $1`, [org.keyId]);
    expect(rows[0].key_hash.equals(hashApiKey(org.apiKey))).toBe(true);
    expect(JSON.stringify(rows[0])).not.toContain(org.apiKey.slice(11));
  });
});

describe('SPEC §3 errors', () => {
  let org: TestOrg;
  let other: TestOrg;
  beforeAll(async () => {
    org = await createTestOrg(main.pool, { write: 10_000, read: 10_000 });
    other = await createTestOrg(main.pool);
  });

  test('400 invalid_json: a malformed body', async () => {
    const response = await client(main.url, org.apiKey)('POST', '/test/widgets', '{"name": "a",', { 'Content-Type': 'application/json' });
    expectError(response, 400, 'invalid_request_error', 'invalid_json');
    expectRateHeaders(response);
  });

  test('400 validation_failed: one details entry per bad field', async () => {
    const response = await client(main.url, org.apiKey)('POST', '/test/notes', { name: '', tag: 5, outcome: 'nope' });
    expectError(response, 400, 'invalid_request_error', 'validation_failed');
    expect(response.body.error.details.map((d: { param: string }) => d.param).sort()).toEqual(['name', 'outcome', 'tag']);
    expect(response.body.error.param).toBeDefined();
  });

  test("400 resource_missing: a body id that does not exist for this organization (another organization's included)", async () => {
    const foreign = await client(main.url, other.apiKey)('POST', '/test/notes', { name: 'theirs' });
    expect(foreign.status).toBe(200);
    for (const parent of ['wid_doesnotexist00000000', foreign.body.id]) {
      const response = await client(main.url, org.apiKey)('POST', '/test/notes', { name: 'child', parent_id: parent });
      expectError(response, 400, 'invalid_request_error', 'resource_missing');
      expect(response.body.error.param).toBe('parent_id');
    }
  });

  test('400 account_required and identity_not_verified render as error objects with their param', async () => {
    const account = await client(main.url, org.apiKey)('POST', '/test/notes', { name: 'a', outcome: 'account_required' });
    expectError(account, 400, 'invalid_request_error', 'account_required');
    expect(account.body.error.param).toBe('account_id');
    const identity = await client(main.url, org.apiKey)('POST', '/test/notes', { name: 'a', outcome: 'identity_not_verified' });
    expectError(identity, 400, 'invalid_request_error', 'identity_not_verified');
  });

  test('a 400 refusal is not stored: the same request again executes again (e.g. once the cause is fixed)', async () => {
    const call = client(main.url, org.apiKey);
    const key = { 'X-Idempotency-Key': `k-${randomString(10)}` };
    const body = { name: 'a', outcome: 'identity_not_verified' };
    const first = await call('POST', '/test/notes', body, key);
    const second = await call('POST', '/test/notes', body, key);
    for (const response of [first, second]) {
      expectError(response, 400, 'invalid_request_error', 'identity_not_verified');
      expect(response.headers.get('idempotent-replayed')).toBeNull();
    }
    const { rows } = await sharedPool.query(`SELECT 1 FROM idempotency_keys WHERE organization_id = $1 AND key = $2`, [
      org.organizationId,
      key['X-Idempotency-Key'],
    ]);
    expect(rows).toHaveLength(0);
  });

  test('401 authentication_error: missing, malformed, unknown', async () => {
    const noKey = await client(main.url, null)('GET', '/test/ping');
    expectError(noKey, 401, 'authentication_error', 'unauthenticated');
    expect(rateHeaders(noKey)).toEqual({ limit: null, remaining: null, reset: null });
    for (const header of [
      'Bearer',
      'Bearer nope',
      `Basic ${org.apiKey}`,
      `Bearer ${org.apiKey}x`,
      'Bearer sk_sandbox_short',
      `Bearer sk_sandbox_${'A'.repeat(32)}`,
    ]) {
      const response = await client(main.url, null)('GET', '/test/ping', undefined, { Authorization: header });
      expectError(response, 401, 'authentication_error', 'unauthenticated');
    }
  });

  test('403 permission_error: ip_not_allowed for a write from an address off the allowlist', async () => {
    const listed = await createTestOrg(main.pool, { allowlist: ['203.0.113.0/24'] });
    const response = await client(main.url, listed.apiKey, '198.51.100.77')('POST', '/test/notes', { name: 'x' });
    expectError(response, 403, 'permission_error', 'ip_not_allowed');
  });

  test('404 not_found for unknown ids and for ids of another organization, alike', async () => {
    const theirs = await client(main.url, other.apiKey)('POST', '/test/notes', { name: 'secret' });
    const unknown = await client(main.url, org.apiKey)('GET', '/test/widgets/wid_unknown000000000000');
    expectError(unknown, 404, 'invalid_request_error', 'not_found');
    const foreign = await client(main.url, org.apiKey)('GET', `/test/widgets/${theirs.body.id}`);
    expectError(foreign, 404, 'invalid_request_error', 'not_found');
    expect(foreign.body.error.message.replace(theirs.body.id, 'ID')).toBe(
      unknown.body.error.message.replace('wid_unknown000000000000', 'ID'),
    );
    const deleteForeign = await client(main.url, org.apiKey)('DELETE', `/test/widgets/${theirs.body.id}`);
    expectError(deleteForeign, 404, 'invalid_request_error', 'not_found');
    expect(await rowsOf(other.organizationId)).toBeGreaterThan(0);
    const own = await client(main.url, org.apiKey)('POST', '/test/notes', { name: `mine ${randomString(6)}` });
    const deleted = await client(main.url, org.apiKey)('DELETE', `/test/widgets/${own.body.id}`);
    expect(deleted.body).toEqual({ id: own.body.id, deleted: true });
  });

  test('404 route_not_found: unknown routes, authenticated ones with rate-limit headers', async () => {
    const anonymous = await client(main.url, null)('GET', '/no/such/route');
    expectError(anonymous, 404, 'invalid_request_error', 'route_not_found');
    for (const [method, route] of [
      ['GET', '/no/such/route'],
      ['POST', '/no/such/route'],
      ['PUT', '/test/nothing'],
    ]) {
      const response = await client(main.url, org.apiKey)(method!, route!);
      expectError(response, 404, 'invalid_request_error', 'route_not_found');
      expect(response.headers.get('allow')).toBeNull();
      expectRateHeaders(response);
    }
    const badKey = await client(main.url, 'sk_sandbox_nope')('GET', '/no/such/route');
    expectError(badKey, 401, 'authentication_error', 'unauthenticated');
  });

  test('405 method_not_allowed with Allow: a wrong method on a known path, with or without a key', async () => {
    for (const [method, route, allow] of [
      ['PUT', '/test/notes', 'POST'],
      ['PATCH', '/keys/verify', 'POST'],
      ['OPTIONS', '/test/ping', 'GET, HEAD'],
      ['POST', '/test/widgets/wid_x', 'DELETE, GET, HEAD'],
      ['PUT', '/TEST/Widgets/wid_x/', 'DELETE, GET, HEAD'],
      ['POST', '/healthz', 'GET, HEAD'],
      ['DELETE', '/openapi.json', 'GET, HEAD'],
    ] as [string, string, string][]) {
      const response = await client(main.url, org.apiKey)(method, route);
      expectError(response, 405, 'invalid_request_error', 'method_not_allowed');
      expect(response.headers.get('allow')).toBe(allow);
      expectRateHeaders(response);
      const anonymous = await client(main.url, null)(method, route);
      expectError(anonymous, 405, 'invalid_request_error', 'method_not_allowed');
      expect(anonymous.headers.get('allow')).toBe(allow);
    }
  });

  test('400 for a path that is not even decodable, never 500', async () => {
    const response = await client(main.url, org.apiKey)('GET', '/test/widgets/%E0%A4%A');
    expectError(response, 400, 'invalid_request_error', 'invalid_request');
  });

  test('400, never 500, for NUL characters Postgres cannot store, in ids, query strings, body fields and keys', async () => {
    const call = client(main.url, org.apiKey);
    const inPath = await call('GET', '/test/widgets/wid_%00');
    expectError(inPath, 400, 'invalid_request_error', 'validation_failed');
    expect(inPath.body.error.param).toBe('id');
    expectError(await call('GET', '/test/ping?n=%00'), 400, 'invalid_request_error', 'validation_failed');
    const inTag = await call('POST', '/test/widgets', '{"name":"x","tag":"a\\u0000b"}');
    expectError(inTag, 400, 'invalid_request_error', 'validation_failed');
    expect(inTag.body.error.param).toBe('tag');
    const inKey = await call('POST', '/test/notes', '{"name":"x","nested":{"k\\u0000":1}}');
    expectError(inKey, 400, 'invalid_request_error', 'validation_failed');
    expect(inKey.body.error.param).toBe('nested');
    // The NUL is found at the bottom of a body as deep as bodies may nest (32).
    const depth = 32;
    const deep = await call('POST', '/test/notes', `${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}`);
    expectError(deep, 400, 'invalid_request_error', 'validation_failed');
    expect(deep.body.error.param).toBe(Array(depth).fill('0').join('.'));
  });

  test('400 invalid_json for a body nested deeper than 32 levels, however deep, before anything walks it', async () => {
    const call = client(main.url, org.apiKey);
    const before = await rowsOf(org.organizationId);
    // 10,000 deep already overflowed the recursive canonical-JSON step (a 500); the body limit caps the rest.
    for (const depth of [33, 10_000, 30_000]) {
      for (const body of [`${'['.repeat(depth)}${']'.repeat(depth)}`, `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`]) {
        if (Buffer.byteLength(body) > EDGE_LIMITS.bodyBytesMax) continue;
        const response = await call('POST', '/test/notes', body);
        expectError(response, 400, 'invalid_request_error', 'invalid_json');
        expect(response.body.error.message).toContain('deeper than 32 levels');
      }
    }
    expect(await rowsOf(org.organizationId)).toBe(before);
    expect((await call('POST', '/test/notes', { name: 'x', pad: JSON.parse(`${'['.repeat(31)}${']'.repeat(31)}`) })).status).toBe(200);
  });

  test('409 invalid_state: a business refusal, stored and replayed like a success', async () => {
    const body = { name: 'refused', outcome: 'invalid_state', tag: `t-${randomString(8)}` };
    const first = await client(main.url, org.apiKey)('POST', '/test/widgets', body);
    expectError(first, 409, 'invalid_request_error', 'invalid_state');
    const again = await client(main.url, org.apiKey)('POST', '/test/widgets', body);
    expect(again.status).toBe(409);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const { rows } = await sharedPool.query(`SELECT 1 FROM edge_test_widgets WHERE tag = $1`, [body.tag]);
    expect(rows).toHaveLength(0); // the refused operation's writes were undone
  });

  test('413 payload_too_large: a body over 64 KiB; exactly 64 KiB is read', async () => {
    const envelope = JSON.stringify({ name: 'x', pad: '' });
    const fits = JSON.stringify({ name: 'x', pad: 'p'.repeat(EDGE_LIMITS.bodyBytesMax - Buffer.byteLength(envelope)) });
    expect(Buffer.byteLength(fits)).toBe(EDGE_LIMITS.bodyBytesMax);
    const ok = await client(main.url, org.apiKey)('POST', '/test/notes', fits);
    expect(ok.status).toBe(200);
    const response = await client(main.url, org.apiKey)('POST', '/test/notes', `${fits} `);
    expectError(response, 413, 'invalid_request_error', 'payload_too_large');
  });

  test('415: a body that is not JSON', async () => {
    const response = await client(main.url, org.apiKey)('POST', '/test/notes', 'name=x', {
      'Content-Type': 'application/x-www-form-urlencoded',
    });
    expectError(response, 415, 'invalid_request_error', 'unsupported_media_type');
    const plain = await client(main.url, org.apiKey)('POST', '/test/notes', '{"name":"x"}', { 'Content-Type': 'text/plain' });
    expectError(plain, 415, 'invalid_request_error', 'unsupported_media_type');
  });

  test("a body whose Content-Encoding is unknown or does not decode is refused as the client's error", async () => {
    const unknown = await client(main.url, org.apiKey)('POST', '/test/notes', '{"name":"x"}', { 'Content-Encoding': 'x-unknown' });
    expectError(unknown, 415, 'invalid_request_error', 'unsupported_media_type');
    const broken = await client(main.url, org.apiKey)('POST', '/test/notes', '{"name":"x"}', { 'Content-Encoding': 'gzip' });
    expectError(broken, 400, 'invalid_request_error', 'invalid_request');
  });

  test('422 idempotency_key_reused: the same key with another body or another endpoint', async () => {
    const key = `k-${randomString(10)}`;
    const first = await client(main.url, org.apiKey)('POST', '/test/orders', { name: 'a' }, { 'X-Idempotency-Key': key });
    expect(first.status).toBe(200);
    const otherBody = await client(main.url, org.apiKey)('POST', '/test/orders', { name: 'b' }, { 'X-Idempotency-Key': key });
    expectError(otherBody, 422, 'idempotency_error', 'idempotency_key_reused');
    const otherEndpoint = await client(main.url, org.apiKey)('POST', '/test/notes', { name: 'a' }, { 'X-Idempotency-Key': key });
    expectError(otherEndpoint, 422, 'idempotency_error', 'idempotency_key_reused');
    expect(await rowsOf(org.organizationId, 'order')).toBeGreaterThanOrEqual(1);
  });

  test('500 api_error internal_error: the request id and nothing internal', async () => {
    const response = await client(main.url, org.apiKey)('GET', '/test/boom');
    expectError(response, 500, 'api_error', 'internal_error');
    expect(response.text).not.toMatch(/hunter2|SELECT|postgres:|api_keys|at \w+ \(|\.ts:/);
  });

  test('503 api_error unavailable with Retry-After when Postgres cannot be reached', async () => {
    const deadPort = await freePort();
    const broken = await startEdge({ databaseUrl: `postgres://postgres@127.0.0.1:${deadPort}/nowhere` });
    try {
      const response = await client(broken.url, org.apiKey)('GET', '/test/ping');
      expectError(response, 503, 'api_error', 'unavailable');
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(response.text).not.toContain(String(deadPort));
    } finally {
      await broken.close();
    }
  });

  describe('property: any request gets a success or one error object, never a 5xx', () => {
    test('random methods, paths, headers and bodies', async () => {
      const org = await createTestOrg(main.pool, { write: 1_000_000, read: 1_000_000 });
      const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 });
      const segment = fc.string({ unit: fc.constantFrom(..."abcXYZ019_-.~%:@!$&'()*+,;=é ".split('')), minLength: 1, maxLength: 12 });
      const pathArb = fc.oneof(
        {
          arbitrary: fc.constantFrom(
            '/keys/verify',
            '/test/widgets',
            '/test/orders',
            '/test/notes',
            '/test/ping',
            '/test/widgets/wid_x',
            '/',
            '/user',
            '/intent',
          ),
          weight: 4,
        },
        fc
          .array(segment, { minLength: 1, maxLength: 4 })
          .map((parts) => `/${parts.map((p) => encodeURI(p).replace(/%25/g, '%')).join('/')}`),
        fc
          .tuple(
            fc.constantFrom('/test/widgets/', '/test/ping?', '/test/ping?n='),
            fc.oneof(printable, fc.string({ unit: 'binary', maxLength: 20 })),
          )
          .map(([a, b]) => `${a}${encodeURIComponent(b.replace(/[\ud800-\udfff]/g, ''))}`),
      );
      const jsonBody = fc.oneof(
        {
          arbitrary: fc
            .record({
              name: fc.string({ minLength: 1, maxLength: 100 }),
              tag: fc.option(fc.string({ minLength: 1, maxLength: 255 }), { nil: undefined }),
            })
            .map((v) => JSON.stringify(v)),
          weight: 3,
        },
        fc.jsonValue().map((v) => JSON.stringify(v)),
        fc
          .record(
            {
              name: fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.integer()),
              tag: fc.option(fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 300 }))),
              outcome: fc.option(fc.constantFrom('ok', 'invalid_state', 'identity_not_verified', 'x')),
              parent_id: fc.option(fc.string()),
            },
            { requiredKeys: [] },
          )
          .map((v) => JSON.stringify(v)),
        printable,
        fc.constant(''),
      );
      const routeArb = fc.oneof(
        {
          arbitrary: fc.constantFrom(
            ['POST', '/test/widgets'],
            ['POST', '/test/orders'],
            ['POST', '/test/notes'],
            ['POST', '/keys/verify'],
            ['GET', '/test/ping'],
            ['GET', '/test/widgets/wid_x'],
            ['DELETE', '/test/widgets/wid_x'],
          ),
          weight: 3,
        },
        fc.tuple(fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'), pathArb),
      );
      const requestArb = fc.record({
        route: routeArb,
        auth: fc.oneof({ arbitrary: fc.constant(`Bearer ${org.apiKey}`), weight: 4 }, fc.constant(undefined), printable),
        contentType: fc.option(
          fc.constantFrom(
            'application/json',
            'application/json',
            'application/json',
            'application/json; charset=utf-8',
            'text/plain',
            'application/merge-patch+json',
            'multipart/form-data',
            'application/json; charset=latin1',
          ),
        ),
        idempotencyKey: fc.option(printable),
        body: fc.option(jsonBody),
        extraHeader: fc.option(
          fc.oneof(
            fc.tuple(fc.constant('Content-Encoding'), fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'x-unknown')),
            fc.tuple(fc.constantFrom('Accept', 'X-Forwarded-Proto', 'Content-Encoding', 'X-Custom', 'If-None-Match'), printable),
          ),
        ),
      });
      const seen = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(requestArb, async (r) => {
          const headers: Record<string, string> = { 'X-Forwarded-For': nextAddress() };
          if (r.auth !== undefined) headers.Authorization = r.auth;
          if (r.contentType) headers['Content-Type'] = r.contentType;
          if (r.idempotencyKey !== null) headers['X-Idempotency-Key'] = r.idempotencyKey;
          if (r.extraHeader) headers[r.extraHeader[0]] = r.extraHeader[1];
          const [method, urlPath] = r.route as [string, string];
          const hasBody = r.body !== null && method !== 'GET' && method !== 'HEAD';
          const response = await fetch(`${main.url}${urlPath}`, { method, headers, body: hasBody ? r.body! : undefined });
          const text = await response.text();
          seen.set(response.status, (seen.get(response.status) ?? 0) + 1);
          const requestId = response.headers.get('x-request-id');
          expect(requestId).toMatch(/^req_/);
          expect(response.status).toBeLessThan(500);
          if (response.status >= 400 && method !== 'HEAD') {
            const parsed = errorObject.safeParse(JSON.parse(text));
            expect(parsed.success).toBe(true);
            expect(parsed.data!.error.request_id).toBe(requestId);
          }
        }),
        { numRuns: Number(process.env.EDGE_PROPERTY_RUNS ?? 200) },
      );
      // The generator reaches past the edge's first checks: successes and several kinds of refusal occur.
      process.stdout.write(`property statuses: ${JSON.stringify(Object.fromEntries([...seen].sort()))}\n`);
      expect(seen.get(200)).toBeGreaterThan(0);
      expect([...seen.keys()].filter((status) => status >= 400).length).toBeGreaterThanOrEqual(4);
    }, 120_000);
  });
});

async function cacheOn(server: EdgeServer) {
  const cache = server.edge.keys;
  return eventually(async () => (cache.stats().on ? cache : undefined), 10_000, 'the key cache to be on');
}

/**
 * Asks until one request of `call` is answered from the cache's memory (a busy box can delay a heartbeat
 * past its proof's age, and then the cache rightly sends a request to the database instead).
 */
async function servedFromMemory(server: EdgeServer, call: () => Promise<ApiResponse>) {
  const cache = server.edge.keys;
  await eventually(
    async () => {
      const hits = cache.stats().hits;
      expect((await call()).status).toBe(200);
      return cache.stats().hits > hits ? true : undefined;
    },
    10_000,
    'a request answered from memory',
  );
}

/**
 * Makes `change` and waits until `edge`'s key cache has heard it: the organization's keys leave its memory
 * (the count of cached keys falls) through the change's notification. How soon that happens is bounded by
 * the design, not measured here: memory answers only while the listener proved, within `keyCacheStaleMs`,
 * that it delivers everything committed (docs/edge.md); what a test can assert on a loaded box is the order —
 * nothing the cache held survives the change, and the next request is judged afresh.
 */
async function changeHeard(server: EdgeServer, change: () => Promise<unknown>): Promise<void> {
  const cache = server.edge.keys;
  const before = cache.stats().keys;
  expect(before).toBeGreaterThan(0);
  await change();
  await eventually(async () => (cache.stats().keys < before ? true : undefined), 10_000, 'the key cache to hear the change');
}

describe('SPEC §4 authentication, IP allowlist, rate limits', () => {
  describe('API keys', () => {
    test('a revoked key gets 401 on the first request after the api process hears the revocation (SPEC §4: api processes cache keys)', async () => {
      await cacheOn(main);
      const org = await createTestOrg(main.pool);
      const second = await createKey(main.pool, org.organizationId, 'sandbox');
      await servedFromMemory(main, () => client(main.url, second.api_key)('GET', '/test/ping'));
      await changeHeard(main, () => revokeKey(main.pool, second.id));
      const refused = await client(main.url, second.api_key)('GET', '/test/ping');
      // The promise behind "within 1 s" (docs/edge.md): a key is answered from memory only while the listener's
      // last proof of delivery is younger than this.
      expect(EDGE_LIMITS.keyCacheStaleMs).toBeLessThan(1_000);
      expectError(refused, 401, 'authentication_error', 'unauthenticated');
      expect((await client(main.url, org.apiKey)('GET', '/test/ping')).status).toBe(200);
    });

    test('a key of the other environment gets 401, in a sandbox and in a production deployment', async () => {
      const org = await createTestOrg(main.pool);
      const production = await createKey(main.pool, org.organizationId, 'production');
      const inSandbox = await client(main.url, production.api_key)('POST', '/keys/verify');
      expectError(inSandbox, 401, 'authentication_error', 'unauthenticated');
      expect(inSandbox.body.error.message).toContain('production key');

      const productionEdge = await startEdge({ env: { LEDGER_ENVIRONMENT: 'production' } });
      try {
        const sandboxKey = await client(productionEdge.url, org.apiKey)('POST', '/keys/verify');
        expectError(sandboxKey, 401, 'authentication_error', 'unauthenticated');
        const ok = await client(productionEdge.url, production.api_key)('POST', '/keys/verify');
        expect(ok.status).toBe(200);
        expect(ok.body.environment).toBe('production');
      } finally {
        await productionEdge.close();
      }
    });
  });

  describe('failed authentication limit', () => {
    let clock: TestClock;
    let edge: EdgeServer;
    beforeAll(async () => {
      clock = new TestClock();
      edge = await startEdge({ clock });
    });
    afterAll(async () => {
      await edge.close();
    });

    test(`after ${EDGE_LIMITS.authFailuresPerWindow} failures in 60 s an address's invalid keys get 429 too_many_auth_failures, uncounted, until they age out`, async () => {
      const start = clock.freeze();
      const attacker = '198.51.100.200';
      for (let i = 0; i < EDGE_LIMITS.authFailuresPerWindow; i++) {
        clock.set(start + i * 100);
        expect((await client(edge.url, `sk_sandbox_${randomString(32)}`, attacker)('GET', '/test/ping')).status).toBe(401);
      }
      clock.set(start + 30_000);
      for (const key of [`sk_sandbox_${randomString(32)}`, 'not a key', `sk_production_${randomString(32)}`]) {
        const blocked = await client(edge.url, key, attacker)('GET', '/test/ping');
        expectError(blocked, 429, 'rate_limit_error', 'too_many_auth_failures');
        expect(blocked.headers.get('retry-after')).toBe('30');
      }
      // Refused past the limit, those were not counted: the window holds the first twenty only.
      const { rows } = await edge.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM auth_failures WHERE ip = $1::inet`, [attacker]);
      expect(rows[0]!.n).toBe(EDGE_LIMITS.authFailuresPerWindow);

      clock.set(start + 60_000); // the first failure left the window: 19 remain
      expect((await client(edge.url, `sk_sandbox_${randomString(32)}`, attacker)('GET', '/test/ping')).status).toBe(401);
      expectError(
        await client(edge.url, 'sk_sandbox_nope', attacker)('GET', '/test/ping'),
        429,
        'rate_limit_error',
        'too_many_auth_failures',
      );
    });

    test("a valid key is never refused for other requests' failures from its address (a NAT, a load balancer without TRUST_PROXY)", async () => {
      const start = clock.freeze();
      const seen = await createTestOrg(edge.pool); // its key is in the cache before the address is blocked
      const unseen = await createTestOrg(edge.pool); // its key is first presented from the blocked address
      const shared = '198.51.100.202';
      expect((await client(edge.url, seen.apiKey, shared)('GET', '/test/ping')).status).toBe(200);
      for (let i = 0; i < EDGE_LIMITS.authFailuresPerWindow; i++) {
        clock.set(start + i * 100);
        expect((await client(edge.url, `sk_sandbox_${randomString(32)}`, shared)('GET', '/test/ping')).status).toBe(401);
      }
      clock.set(start + 30_000);
      expectError(
        await client(edge.url, `sk_sandbox_${randomString(32)}`, shared)('GET', '/test/ping'),
        429,
        'rate_limit_error',
        'too_many_auth_failures',
      );
      for (const org of [seen, unseen, seen, unseen]) {
        const read = await client(edge.url, org.apiKey, shared)('GET', '/test/ping');
        expect(read.status).toBe(200);
        const write = await client(edge.url, org.apiKey, shared)('POST', '/test/notes', { name: `n ${randomString(8)}` });
        expect(write.status).toBe(200);
      }
    });

    test('IPv6 failures count per /64, so one subscriber cannot rotate addresses to escape the limit', async () => {
      clock.freeze();
      const org = await createTestOrg(edge.pool);
      for (let i = 1; i <= EDGE_LIMITS.authFailuresPerWindow; i++) {
        expect((await client(edge.url, 'sk_sandbox_nope', `2001:db8:77:1::${i.toString(16)}`)('GET', '/test/ping')).status).toBe(401);
      }
      const sameBlock = await client(edge.url, 'sk_sandbox_still_nope', '2001:db8:77:1:ffff::1')('GET', '/test/ping');
      expectError(sameBlock, 429, 'rate_limit_error', 'too_many_auth_failures');
      expect((await client(edge.url, org.apiKey, '2001:db8:77:1:ffff::1')('GET', '/test/ping')).status).toBe(200);
      expect((await client(edge.url, 'sk_sandbox_still_nope', '2001:db8:77:2::1')('GET', '/test/ping')).status).toBe(401);
    });
  });

  describe('IP allowlist', () => {
    let direct: EdgeServer; // TRUST_PROXY off: the socket's address is the client's
    let dualStack: EdgeServer; // listening on :: so IPv4 clients arrive as ::ffff:127.0.0.1
    beforeAll(async () => {
      direct = await startEdge({ env: { TRUST_PROXY: 'off' } });
      dualStack = await startEdge({ env: { TRUST_PROXY: 'off' }, host: '::' });
    });
    afterAll(async () => {
      await direct.close();
      await dualStack.close();
    });

    async function readAndWrite(url: string, org: TestOrg, headers: Record<string, string> = {}) {
      const call = apiClient(url, org.apiKey);
      const read = await call('GET', '/test/ping', undefined, headers);
      const write = await call('POST', '/test/notes', { name: `n ${randomString(8)}` }, headers);
      return { read: read.status, write: write.status, writeCode: write.body?.error?.code };
    }

    test('no list: reads and writes pass', async () => {
      const org = await createTestOrg(direct.pool);
      expect(await readAndWrite(direct.url, org)).toMatchObject({ read: 200, write: 200 });
    });

    test('listed address: reads and writes pass', async () => {
      const org = await createTestOrg(direct.pool, { allowlist: ['10.9.9.9', '127.0.0.0/8'] });
      expect(await readAndWrite(direct.url, org)).toMatchObject({ read: 200, write: 200 });
    });

    test('address not listed: reads pass, writes get 403 with rate-limit headers and use no write quota', async () => {
      const org = await createTestOrg(direct.pool, { allowlist: ['203.0.113.0/24', '2001:db8::/32'] });
      expect(await readAndWrite(direct.url, org)).toEqual({ read: 200, write: 403, writeCode: 'ip_not_allowed' });
      const refused = await apiClient(direct.url, org.apiKey)('POST', '/test/notes', { name: 'x' });
      expect(rateHeaders(refused)).toMatchObject({ limit: '100', remaining: '100' });
    });

    test('X-Forwarded-For is ignored without TRUST_PROXY, and without TRUST_PROXY naming this proxy', async () => {
      const org = await createTestOrg(direct.pool, { allowlist: ['203.0.113.9'] });
      expect(await readAndWrite(direct.url, org, { 'X-Forwarded-For': '203.0.113.9' })).toMatchObject({ read: 200, write: 403 });
      const otherProxy = await startEdge({ env: { TRUST_PROXY: '10.1.1.1' } });
      try {
        expect(await readAndWrite(otherProxy.url, org, { 'X-Forwarded-For': '203.0.113.9' })).toMatchObject({ read: 200, write: 403 });
      } finally {
        await otherProxy.close();
      }
    });

    test('X-Forwarded-For is believed through TRUST_PROXY, right to left past the trusted proxies only', async () => {
      const org = await createTestOrg(main.pool, { allowlist: ['203.0.113.9'] });
      expect(await readAndWrite(main.url, org, { 'X-Forwarded-For': '203.0.113.9' })).toMatchObject({ read: 200, write: 200 });
      expect(await readAndWrite(main.url, org, { 'X-Forwarded-For': '198.51.100.4' })).toMatchObject({ read: 200, write: 403 });
      // A client cannot prepend the listed address: the proxy appends the real one, and that is what counts.
      expect(await readAndWrite(main.url, org, { 'X-Forwarded-For': '203.0.113.9, 198.51.100.4' })).toMatchObject({ write: 403 });
      // Something that is no address at all: writes refused, never a 500.
      expect(await readAndWrite(main.url, org, { 'X-Forwarded-For': 'not-an-address' })).toMatchObject({ read: 200, write: 403 });
      const open = await createTestOrg(main.pool);
      expect(await readAndWrite(main.url, open, { 'X-Forwarded-For': 'fe80::1%eth0, not-an-address' })).toMatchObject({
        read: 200,
        write: 200,
      });
    });

    test('::ffff:a.b.c.d matches a.b.c.d, from the socket and from X-Forwarded-For, in entries and in addresses', async () => {
      const plain = await createTestOrg(dualStack.pool, { allowlist: ['127.0.0.1'] });
      expect(await readAndWrite(dualStack.url, plain)).toMatchObject({ write: 200 });
      const mappedEntry = await createTestOrg(dualStack.pool, { allowlist: ['::ffff:127.0.0.1'] });
      expect(await readAndWrite(dualStack.url, mappedEntry)).toMatchObject({ write: 200 });
      const mappedRange = await createTestOrg(main.pool, { allowlist: ['::ffff:203.0.113.0/120'] });
      expect(await readAndWrite(main.url, mappedRange, { 'X-Forwarded-For': '203.0.113.99' })).toMatchObject({ write: 200 });
      expect(await readAndWrite(main.url, mappedRange, { 'X-Forwarded-For': '::ffff:203.0.113.98' })).toMatchObject({ write: 200 });
      expect(await readAndWrite(main.url, mappedRange, { 'X-Forwarded-For': '::ffff:203.0.114.1' })).toMatchObject({ write: 403 });
    });

    test('entries are normalized (host bits masked, mapped addresses as IPv4) and anything else is refused by name', async () => {
      const org = await createTestOrg(main.pool);
      expect(await addAllowlistEntry(main.pool, org.organizationId, '10.1.2.3/8')).toBe('10.0.0.0/8');
      expect(await addAllowlistEntry(main.pool, org.organizationId, '::ffff:192.0.2.1')).toBe('192.0.2.1/32');
      expect(await addAllowlistEntry(main.pool, org.organizationId, 'fe80::1%eth0')).toBe('fe80::1/128');
      expect(await addAllowlistEntry(main.pool, org.organizationId, '2001:DB8::/32')).toBe('2001:db8::/32');
      for (const bad of ['not-an-ip', '10.0.0.0/33', '300.1.1.1', '']) {
        await expect(addAllowlistEntry(main.pool, org.organizationId, bad)).rejects.toThrow(/not an IPv4\/IPv6 address or CIDR range/);
      }
      expect(await listAllowlist(main.pool, org.organizationId)).toEqual(['10.0.0.0/8', '192.0.2.1/32', '2001:db8::/32', 'fe80::1/128']);
    });

    test('IPv6 addresses and CIDR ranges', async () => {
      const org = await createTestOrg(main.pool, { allowlist: ['2001:db8:abcd::/48', '2001:db8:ffff::7'] });
      expect(await readAndWrite(main.url, org, { 'X-Forwarded-For': '2001:db8:abcd:12::5' })).toMatchObject({ write: 200 });
      expect(await readAndWrite(main.url, org, { 'X-Forwarded-For': '2001:0DB8:FFFF:0:0:0:0:7' })).toMatchObject({ write: 200 });
      expect(await readAndWrite(main.url, org, { 'X-Forwarded-For': '2001:db8:abce::1' })).toMatchObject({ read: 200, write: 403 });
      expect(await readAndWrite(main.url, org, { 'X-Forwarded-For': '203.0.113.1' })).toMatchObject({ read: 200, write: 403 });
    });
  });

  describe('rate limits', () => {
    let clock: TestClock;
    let edge: EdgeServer;
    beforeAll(async () => {
      clock = new TestClock();
      edge = await startEdge({ clock });
    });
    afterAll(async () => {
      await edge.close();
    });

    test('exact sliding window: the limit is admitted, limit+1 refused with Retry-After, admitted again once the oldest ages out', async () => {
      const t0 = clock.freeze();
      const org = await createTestOrg(edge.pool, { read: 3 });
      const call = client(edge.url, org.apiKey);
      const resetAt = String(Math.ceil((t0 + 60_000) / 1000));

      const first = await call('GET', '/test/ping');
      expect({ status: first.status, ...rateHeaders(first) }).toEqual({ status: 200, limit: '3', remaining: '2', reset: resetAt });
      clock.set(t0 + 10_000);
      const second = await call('GET', '/test/ping');
      expect({ status: second.status, ...rateHeaders(second) }).toEqual({ status: 200, limit: '3', remaining: '1', reset: resetAt });
      clock.set(t0 + 20_000);
      const third = await call('GET', '/test/ping');
      expect({ status: third.status, ...rateHeaders(third) }).toEqual({ status: 200, limit: '3', remaining: '0', reset: resetAt });

      const refused = await call('GET', '/test/ping');
      expectError(refused, 429, 'rate_limit_error', 'rate_limited');
      expect({ retryAfter: refused.headers.get('retry-after'), ...rateHeaders(refused) }).toEqual({
        retryAfter: '40',
        limit: '3',
        remaining: '0',
        reset: resetAt,
      });
      for (let i = 0; i < 5; i++) expect((await call('GET', '/test/ping')).status).toBe(429);

      clock.set(t0 + 59_999);
      const stillRefused = await call('GET', '/test/ping');
      expect({ status: stillRefused.status, retryAfter: stillRefused.headers.get('retry-after') }).toEqual({
        status: 429,
        retryAfter: '1',
      });

      clock.set(t0 + 60_000); // the first request leaves the window; the refused ones never entered it
      const readmitted = await call('GET', '/test/ping');
      expect({ status: readmitted.status, ...rateHeaders(readmitted) }).toEqual({
        status: 200,
        limit: '3',
        remaining: '0',
        reset: String(Math.ceil((t0 + 70_000) / 1000)),
      });
      expect((await call('GET', '/test/ping')).status).toBe(429);
      clock.set(t0 + 70_000);
      expect((await call('GET', '/test/ping')).status).toBe(200);
    });

    test('housekeeping sheds the hits of an organization that went quiet, keeping its count exact', async () => {
      // The hits are made two minutes in the past and purged at the real time, so housekeeping touches
      // nothing that other suites sharing this database still count.
      clock.freeze(Date.now() - 120_000);
      const org = await createTestOrg(edge.pool, { read: 5 });
      const call = client(edge.url, org.apiKey);
      for (let i = 0; i < 3; i++) expect((await call('GET', '/test/ping')).status).toBe(200);
      // The process settles its lease when the lease's time is up: then the database holds exactly the 3 admissions.
      const leases = async () =>
        (
          await sharedPool.query<{ rows: number; slots: number; settled: boolean }>(
            `SELECT count(*)::int AS rows, coalesce(sum(slots), 0)::int AS slots, coalesce(bool_and(settled), true) AS settled
           FROM rate_limit_leases WHERE organization_id = $1`,
            [org.organizationId],
          )
        ).rows[0]!;
      await eventually(
        async () => {
          const now = await leases();
          return now.settled ? now : undefined;
        },
        10_000,
        'the lease to be settled',
      );
      expect(await leases()).toMatchObject({ slots: 3, settled: true });
      const purged = await purgeEdgeState(edge.pool, new Date());
      expect(purged.rateLimitLeases).toBeGreaterThanOrEqual(1);
      expect(await leases()).toEqual({ rows: 0, slots: 0, settled: true });
      clock.set(Date.now());
      const next = await call('GET', '/test/ping');
      expect(rateHeaders(next)).toMatchObject({ limit: '5', remaining: '4' });
    });

    test('write and read are counted apart; the CLI-adjustable limit takes effect at once', async () => {
      clock.freeze();
      const org = await createTestOrg(edge.pool, { write: 2, read: 1000 });
      const call = client(edge.url, org.apiKey);
      expect((await call('POST', '/test/notes', { name: 'a' })).status).toBe(200);
      expect((await call('POST', '/test/notes', { name: 'b' })).status).toBe(200);
      const refused = await call('POST', '/test/notes', { name: 'c' });
      expectError(refused, 429, 'rate_limit_error', 'rate_limited');
      const read = await call('GET', '/test/ping');
      expect({ status: read.status, ...rateHeaders(read) }).toMatchObject({ status: 200, limit: '1000', remaining: '999' });
      await setRateLimits(edge.pool, org.organizationId, { write: 3 });
      const admitted = await call('POST', '/test/notes', { name: 'c' });
      expect({ status: admitted.status, ...rateHeaders(admitted) }).toMatchObject({ status: 200, limit: '3', remaining: '0' });
      // The refused 'c' stored nothing, so the admitted one executed rather than replaying.
      expect(admitted.headers.get('idempotent-replayed')).toBeNull();
    });

    test('X-RateLimit-* on every authenticated response, success or failure, and on none that failed authentication', async () => {
      clock.freeze();
      const org = await createTestOrg(edge.pool);
      const call = client(edge.url, org.apiKey);
      const key = `k-${randomString(8)}`;
      const responses = [
        await call('GET', '/test/ping'),
        await call('GET', '/test/widgets/wid_nope00000000000000'),
        await call('GET', '/test/ping?n=99'),
        await call('POST', '/test/orders', { name: 'x' }, { 'X-Idempotency-Key': key }),
        await call('POST', '/test/orders', { name: 'x' }, { 'X-Idempotency-Key': key }),
        await call('POST', '/test/orders', { name: 'y' }, { 'X-Idempotency-Key': key }),
        await call('POST', '/test/orders', { name: 'x' }),
        await call('POST', '/test/notes', '{', { 'Content-Type': 'application/json' }),
        await call('GET', '/test/boom'),
        await call('GET', '/unknown'),
        await call('POST', '/keys/verify'),
      ];
      expect(responses.map((r) => r.status)).toEqual([200, 404, 400, 200, 200, 422, 400, 400, 500, 404, 200]);
      for (const response of responses) expectRateHeaders(response);
      expect(rateHeaders(await client(edge.url, 'sk_sandbox_bad')('GET', '/test/ping'))).toEqual({
        limit: null,
        remaining: null,
        reset: null,
      });
    });

    test('two api processes on one database together admit no more than the limit', async () => {
      const infra = testInfra();
      const port = await freePort();
      const root = path.resolve(__dirname, '..');
      const child: ChildProcess = spawn(path.join(root, 'node_modules/.bin/tsx'), ['ops/bin/api.ts'], {
        cwd: root,
        env: {
          ...process.env,
          DATABASE_URL: infra.databaseUrl,
          TEMPORAL_ADDRESS: infra.temporalAddress,
          PORT: String(port),
          HOST: '127.0.0.1',
          LOG_LEVEL: 'silent',
          DATABASE_POOL_MAX: '10',
          TRUST_PROXY: 'off',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const second = `http://127.0.0.1:${port}`;
      try {
        await eventually(async () => ((await fetch(`${second}/healthz`)).ok ? true : undefined), 90_000, `second api process (${stderr})`);
        const org = await createTestOrg(sharedPool, { write: 10, read: 15 });
        const servers = [main.url, second];
        const writes = await Promise.all(
          Array.from({ length: 40 }, (_, i) => apiClient(servers[i % 2]!, org.apiKey)('POST', '/keys/verify')),
        );
        const reads = await Promise.all(
          Array.from({ length: 40 }, (_, i) => apiClient(servers[i % 2]!, org.apiKey)('GET', '/unknown/route')),
        );
        const count = (responses: ApiResponse[], status: number) => responses.filter((r) => r.status === status).length;
        expect({ ok: count(writes, 200), refused: count(writes, 429) }).toEqual({ ok: 10, refused: 30 });
        expect({ admitted: count(reads, 404), refused: count(reads, 429) }).toEqual({ admitted: 15, refused: 25 });

        // Duplicates spread over both processes execute once: one stored answer, identical replies.
        const bigger = await createTestOrg(sharedPool, { write: 1000 });
        const key = `cross-${randomString(8)}`;
        const duplicates = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            apiClient(servers[i % 2]!, bigger.apiKey)('POST', '/keys/verify', undefined, { 'X-Idempotency-Key': key }),
          ),
        );
        expect(new Set(duplicates.map((r) => `${r.status} ${r.text}`)).size).toBe(1);
        expect(duplicates[0]!.status).toBe(200);
        expect(duplicates.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
        expect(await storedKeys(bigger.organizationId)).toBe(1);
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
    }, 150_000);
  });

  describe('across api processes: the key cache and the rate-limit leases (docs/edge.md)', () => {
    /** Each EdgeServer is a separate app with its own cache and leases over the same database, as a second api process is. */
    let other: EdgeServer;
    beforeAll(async () => {
      other = await startEdge();
    });
    afterAll(async () => {
      await other.close();
    });

    test('a key revoked through one process is refused by another on its first request after it hears the revocation', async () => {
      const cache = await cacheOn(other);
      const org = await createTestOrg(main.pool);
      const key = await createKey(main.pool, org.organizationId, 'sandbox');
      expect((await client(main.url, key.api_key)('GET', '/test/ping')).status).toBe(200);
      // Answered from memory in the other process: what it must forget.
      await servedFromMemory(other, () => client(other.url, key.api_key)('GET', '/test/ping'));
      expect(cache.stats().keys).toBeGreaterThan(0);

      await changeHeard(other, () => revokeKey(main.pool, key.id));
      const refused = await client(other.url, key.api_key)('GET', '/test/ping');
      expectError(refused, 401, 'authentication_error', 'unauthenticated');
      expect((await client(other.url, org.apiKey)('GET', '/test/ping')).status).toBe(200);
    });

    test('an allowlist changed through one process binds writes in another from its first request after it hears the change, both ways', async () => {
      await cacheOn(other);
      const org = await createTestOrg(main.pool);
      const write = (address: string) => client(other.url, org.apiKey, address)('POST', '/test/notes', { name: `n ${randomString(8)}` });
      expect((await write('198.51.100.60')).status).toBe(200);
      expect((await write('198.51.100.60')).status).toBe(200);

      await servedFromMemory(other, () => write('198.51.100.60'));
      await changeHeard(other, () => addAllowlistEntry(main.pool, org.organizationId, '203.0.113.60'));
      expectError(await write('198.51.100.60'), 403, 'permission_error', 'ip_not_allowed');
      expect((await write('203.0.113.60')).status).toBe(200);

      await servedFromMemory(other, () => write('203.0.113.60'));
      await changeHeard(other, () => sharedPool.query(`DELETE FROM ip_allowlist WHERE organization_id = $1`, [org.organizationId]));
      expect((await write('198.51.100.60')).status).toBe(200);
    });

    test("killing the cache's LISTEN connection switches the cache off, so a change made meanwhile is not missed; it comes back empty", async () => {
      const cache = await cacheOn(other);
      const org = await createTestOrg(main.pool);
      const key = await createKey(main.pool, org.organizationId, 'sandbox');
      const call = client(other.url, key.api_key);
      await servedFromMemory(other, () => call('GET', '/test/ping'));
      const before = cache.stats();
      expect(before.listenerPid).not.toBeNull();

      // The listener dies inside the revoking transaction, before its NOTIFY is sent: nobody hears it, and only
      // switching the cache off keeps the revoked key from being admitted from memory.
      const connection = await sharedPool.connect();
      try {
        await connection.query('BEGIN');
        await connection.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [key.id]);
        const { rows } = await connection.query<{ ended: boolean }>(`SELECT pg_terminate_backend($1, 5000) AS ended`, [before.listenerPid]);
        expect(rows[0]!.ended).toBe(true);
        await connection.query('COMMIT');
      } finally {
        connection.release();
      }
      await eventually(
        async () => (cache.stats().drops > before.drops ? true : undefined),
        10_000,
        'the cache to notice its listener died',
      );
      // Switched off (or back on and empty): the first request asks the database.
      const refused = await call('GET', '/test/ping');
      expectError(refused, 401, 'authentication_error', 'unauthenticated');

      // A new listener, a new backend, an empty cache that fills again.
      const after = await eventually(
        async () => {
          const stats = cache.stats();
          return stats.on && stats.resyncs > before.resyncs ? stats : undefined;
        },
        10_000,
        'a new listener',
      );
      expect(after.listenerPid).not.toBe(before.listenerPid);
      await servedFromMemory(other, () => client(other.url, org.apiKey)('GET', '/test/ping'));
      expectError(await call('GET', '/test/ping'), 401, 'authentication_error', 'unauthenticated');
    });

    test('an address blocked by failures made at another process gets 429 there for keys that are not valid, and its valid keys still pass', async () => {
      await cacheOn(other);
      const org = await createTestOrg(main.pool);
      const attacker = '198.51.100.210';
      // The key is cached in the other process before the address is blocked elsewhere.
      expect((await client(other.url, org.apiKey, attacker)('GET', '/test/ping')).status).toBe(200);
      for (let i = 0; i < EDGE_LIMITS.authFailuresPerWindow; i++) {
        expect((await client(main.url, `sk_sandbox_${randomString(32)}`, attacker)('GET', '/test/ping')).status).toBe(401);
      }
      const blocked = await eventually(
        async () => {
          const response = await client(other.url, 'not a key', attacker)('GET', '/test/ping');
          return response.status === 429 ? response : undefined;
        },
        10_000,
        'the block to reach the other process',
      );
      expectError(blocked, 429, 'rate_limit_error', 'too_many_auth_failures');
      expectError(
        await client(other.url, `sk_sandbox_${randomString(32)}`, attacker)('GET', '/test/ping'),
        429,
        'rate_limit_error',
        'too_many_auth_failures',
      );
      expect((await client(other.url, org.apiKey, attacker)('GET', '/test/ping')).status).toBe(200);
    });

    test('two app instances under concurrent load never admit more than the limit in any sliding 60 s window', async () => {
      const clock = new TestClock();
      const a = await startEdge({ clock });
      const b = await startEdge({ clock });
      try {
        const limit = 40;
        const org = await createTestOrg(sharedPool, { read: limit });
        clock.freeze(Date.now() - 10 * 60_000);
        // A fixed pseudo-random schedule of bursts, so a failure replays the same way.
        let seed = 20_261_123;
        const random = () => {
          seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
          return seed / 2 ** 31;
        };
        const admittedAtMs: number[] = [];
        let refused = 0;
        for (let step = 0; step < 30; step++) {
          clock.advance(Math.floor(random() * 9_000));
          const atMs = clock.now().getTime();
          const burst = 5 + Math.floor(random() * 40);
          const responses = await Promise.all(
            Array.from({ length: burst }, (_, i) => client((i % 2 ? a : b).url, org.apiKey)('GET', '/test/ping')),
          );
          for (const response of responses) {
            if (response.status === 200) admittedAtMs.push(atMs);
            else if (response.status === 429) refused++;
            else throw new Error(`unexpected ${response.status}: ${response.text}`);
          }
        }
        const busiestWindow = Math.max(...admittedAtMs.map((t) => admittedAtMs.filter((u) => u > t - 60_000 && u <= t).length));
        expect(busiestWindow).toBeLessThanOrEqual(limit);
        // The schedule spans several windows and asks for far more than the limit: the limit is really reached.
        expect(busiestWindow).toBeGreaterThanOrEqual(limit - 10);
        expect(admittedAtMs.length).toBeGreaterThan(limit);
        expect(refused).toBeGreaterThan(0);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
});

describe('SPEC §5 idempotency', () => {
  let org: TestOrg;
  beforeAll(async () => {
    org = await createTestOrg(main.pool, { write: 100_000, read: 100_000 });
  });

  test('X-Idempotency-Key: a duplicate replays status and body byte for byte with Idempotent-Replayed, creating nothing', async () => {
    const call = client(main.url, org.apiKey);
    const key = `k-${randomString(10)}`;
    const before = await rowsOf(org.organizationId, 'order');
    const first = await call('POST', '/test/orders', { name: 'order' }, { 'X-Idempotency-Key': key });
    const again = await call('POST', '/test/orders', { name: 'order' }, { 'X-Idempotency-Key': key });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect({ status: again.status, text: again.text, replayed: again.headers.get('idempotent-replayed') }).toEqual({
      status: 200,
      text: first.text,
      replayed: 'true',
    });
    expect(await rowsOf(org.organizationId, 'order')).toBe(before + 1);
  });

  test('the unique body field: the same tag replays the first answer even with another body', async () => {
    const call = client(main.url, org.apiKey);
    const tag = `user-${randomString(10)}`;
    const first = await call('POST', '/test/widgets', { name: 'Ada', tag });
    const again = await call('POST', '/test/widgets', { name: 'Ada Lovelace', tag });
    const withHeader = await call('POST', '/test/widgets', { name: 'Ada', tag }, { 'X-Idempotency-Key': `k-${randomString(10)}` });
    for (const response of [again, withHeader]) {
      expect({ status: response.status, text: response.text, replayed: response.headers.get('idempotent-replayed') }).toEqual({
        status: 200,
        text: first.text,
        replayed: 'true',
      });
    }
    const { rows } = await sharedPool.query(`SELECT 1 FROM edge_test_widgets WHERE organization_id = $1 AND tag = $2`, [
      org.organizationId,
      tag,
    ]);
    expect(rows).toHaveLength(1);
  });

  test('without key or unique field: the same body (as data) to the same endpoint is the duplicate; another body is not', async () => {
    const call = client(main.url, org.apiKey);
    const name = `note ${randomString(8)}`;
    const tag = `t-${randomString(8)}`;
    const body = `{"name":"${name}","tag":"${tag}"}`;
    const first = await call('POST', '/test/notes', body);
    const again = await call('POST', '/test/notes', body);
    expect({ text: again.text, replayed: again.headers.get('idempotent-replayed') }).toEqual({ text: first.text, replayed: 'true' });
    // The same data written with other spacing and key order is the same request.
    const reordered = await call('POST', '/test/notes', `{ "tag": "${tag}", "name": "${name}" }`);
    expect({ text: reordered.text, replayed: reordered.headers.get('idempotent-replayed') }).toEqual({
      text: first.text,
      replayed: 'true',
    });
    const otherValue = await call('POST', '/test/notes', `{"name":"${name}","tag":"${tag}-2"}`);
    expect(otherValue.status).toBe(200);
    expect(otherValue.body.id).not.toBe(first.body.id);
    const otherEndpoint = await call('POST', '/test/widgets', body);
    expect(otherEndpoint.body.id).not.toBe(first.body.id);
  });

  test('X-Idempotency-Key must be 1-255 printable ASCII; an endpoint that requires it says so; neither stores anything', async () => {
    const call = client(main.url, org.apiKey);
    for (const key of ['x'.repeat(256), 'tab\there', 'caf\u00e9']) {
      const response = await call('POST', '/test/orders', { name: 'x' }, { 'X-Idempotency-Key': key });
      expectError(response, 400, 'invalid_request_error', 'validation_failed');
      expect(response.body.error.param).toBe('X-Idempotency-Key');
    }
    const missing = await call('POST', '/test/orders', { name: 'x' });
    expectError(missing, 400, 'invalid_request_error', 'validation_failed');
    expect((await call('POST', '/test/orders', { name: 'x' }, { 'X-Idempotency-Key': 'y'.repeat(255) })).status).toBe(200);
  });

  test('requests rejected before executing store nothing: a 400 validation, a 401, a 403, a 429', async () => {
    const key = `k-${randomString(10)}`;
    // Two writes: the 400 is admitted by the rate limiter (it only fails validation), the note takes the other.
    const limited = await createTestOrg(main.pool, { write: 2, allowlist: ['198.51.100.50'] });
    const fromListed = client(main.url, limited.apiKey, '198.51.100.50');
    expect((await fromListed('POST', '/test/orders', { name: '' }, { 'X-Idempotency-Key': key })).status).toBe(400);
    expect((await client(main.url, 'sk_sandbox_nope')('POST', '/test/orders', { name: 'a' }, { 'X-Idempotency-Key': key })).status).toBe(
      401,
    );
    expect(
      (await client(main.url, limited.apiKey, '198.51.100.51')('POST', '/test/orders', { name: 'a' }, { 'X-Idempotency-Key': key })).status,
    ).toBe(403);
    expect((await fromListed('POST', '/test/notes', { name: 'uses the one write' })).status).toBe(200);
    expect((await fromListed('POST', '/test/orders', { name: 'a' }, { 'X-Idempotency-Key': key })).status).toBe(429);
    await setRateLimits(main.pool, limited.organizationId, { write: 100 });
    const executed = await fromListed('POST', '/test/orders', { name: 'a' }, { 'X-Idempotency-Key': key });
    expect({ status: executed.status, replayed: executed.headers.get('idempotent-replayed') }).toEqual({ status: 200, replayed: null });
  });

  describe.each([
    ['X-Idempotency-Key', '/test/orders', (i: string) => ({ body: { name: 'fifty' }, headers: { 'X-Idempotency-Key': `fifty-${i}` } })],
    ['unique body field tag', '/test/widgets', (i: string) => ({ body: { name: 'fifty', tag: `fifty-${i}` }, headers: {} })],
    ['exact body', '/test/notes', (i: string) => ({ body: { name: `fifty-${i}` }, headers: {} })],
  ])('50 concurrent duplicates by %s', (_mechanism, route, request) => {
    test('execute once and all answer identically', async () => {
      const fresh = await createTestOrg(main.pool, { write: 1000 });
      const { body, headers } = request(randomString(8));
      const call = client(main.url, fresh.apiKey);
      const responses = await Promise.all(Array.from({ length: 50 }, () => call('POST', route, body, headers)));
      expect(new Set(responses.map((r) => `${r.status} ${r.text}`))).toEqual(new Set([`200 ${responses[0]!.text}`]));
      expect(responses.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(49);
      expect(await rowsOf(fresh.organizationId)).toBe(1);
      expect(await storedKeys(fresh.organizationId)).toBe(1);
    });
  });

  test('a duplicate arriving while the original executes waits, then gets 409 idempotency_request_in_progress; later it replays', async () => {
    const call = client(main.url, org.apiKey);
    const name = `slow-${randomString(8)}`;
    const entry = gate(name);
    const key = `k-${randomString(10)}`;
    const original = call('POST', '/test/orders', { name: 'slow', gate: name }, { 'X-Idempotency-Key': key });
    await eventually(async () => (entry.entered ? true : undefined), 10_000, 'the original to start');
    const duplicate = await call('POST', '/test/orders', { name: 'slow', gate: name }, { 'X-Idempotency-Key': key });
    expectError(duplicate, 409, 'idempotency_error', 'idempotency_request_in_progress');
    expectRateHeaders(duplicate);
    entry.open();
    const first = await original;
    expect(first.status).toBe(200);
    const replay = await call('POST', '/test/orders', { name: 'slow', gate: name }, { 'X-Idempotency-Key': key });
    expect({ text: replay.text, replayed: replay.headers.get('idempotent-replayed') }).toEqual({ text: first.text, replayed: 'true' });
  }, 30_000);

  test("a duplicate waiting for a fast original gets the original's answer, not 409", async () => {
    const call = client(main.url, org.apiKey);
    const name = `brief-${randomString(8)}`;
    const entry = gate(name);
    const body = { name: 'brief', gate: name, tag: `t-${randomString(8)}` };
    const original = call('POST', '/test/widgets', body);
    await eventually(async () => (entry.entered ? true : undefined), 10_000, 'the original to start');
    const duplicate = call('POST', '/test/widgets', body);
    setTimeout(() => entry.open(), 300);
    const [first, second] = await Promise.all([original, duplicate]);
    expect({ status: second.status, text: second.text, replayed: second.headers.get('idempotent-replayed') }).toEqual({
      status: 200,
      text: first.text,
      replayed: 'true',
    });
  });

  test('crash-safe: an uncaught error midway leaves no row, no stored answer and no lock; the retry executes', async () => {
    const fresh = await createTestOrg(main.pool);
    const call = client(main.url, fresh.apiKey);
    const key = `k-${randomString(10)}`;
    crashesLeft = 1;
    const crashed = await call('POST', '/test/orders', { name: 'c', outcome: 'crash' }, { 'X-Idempotency-Key': key });
    expectError(crashed, 500, 'api_error', 'internal_error');
    expect(crashed.text).not.toMatch(/hunter2|disk on fire|SELECT/);
    expect(await rowsOf(fresh.organizationId)).toBe(0);
    expect(await storedKeys(fresh.organizationId)).toBe(0);
    const retried = await call('POST', '/test/orders', { name: 'c', outcome: 'crash' }, { 'X-Idempotency-Key': key });
    expect({ status: retried.status, replayed: retried.headers.get('idempotent-replayed') }).toEqual({ status: 200, replayed: null });
    expect(await rowsOf(fresh.organizationId)).toBe(1);
  });

  test('crash-safe: a request whose database connection dies midway (as when its process is killed) leaves nothing locked or half-made', async () => {
    const fresh = await createTestOrg(main.pool);
    const call = client(main.url, fresh.apiKey);
    const name = `killed-${randomString(8)}`;
    const entry = gate(name);
    const body = { name: 'killed', gate: name, tag: `t-${randomString(8)}` };
    const original = call('POST', '/test/widgets', body);
    await eventually(async () => (entry.entered ? true : undefined), 10_000, 'the original to start');
    await sharedPool.query(`SELECT pg_terminate_backend($1)`, [entry.backendPid]);
    await eventually(
      async () => {
        const { rows } = await sharedPool.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [entry.backendPid]);
        return rows.length === 0 ? true : undefined;
      },
      10_000,
      'the backend to end',
    );
    // Another api process (this one still runs the stuck handler): the lock died with the session, so the
    // retry executes at once instead of waiting for an original that can never finish.
    const otherProcess = await startEdge();
    try {
      const retry = await client(otherProcess.url, fresh.apiKey)('POST', '/test/widgets', { ...body, gate: undefined });
      expect({ status: retry.status, replayed: retry.headers.get('idempotent-replayed') }).toEqual({ status: 200, replayed: null });
    } finally {
      entry.open();
      await otherProcess.close();
    }
    const failed = await original;
    expectError(failed, 503, 'api_error', 'unavailable');
    expect(await rowsOf(fresh.organizationId)).toBe(1);
    expect(await storedKeys(fresh.organizationId)).toBe(1);
  });

  test('answers are kept 24 hours, then the key is free and housekeeping deletes the record', async () => {
    const clock = new TestClock();
    const edge = await startEdge({ clock });
    try {
      // Days in the past, so that purging at the real time removes only this test's records, never those of
      // other suites sharing the database.
      const t0 = clock.freeze(Date.now() - 49 * 3600_000);
      const fresh = await createTestOrg(edge.pool);
      const call = client(edge.url, fresh.apiKey);
      const key = `k-${randomString(10)}`;
      expect((await call('POST', '/test/orders', { name: 'day one' }, { 'X-Idempotency-Key': key })).status).toBe(200);
      clock.set(t0 + 24 * 3600_000 - 1000);
      expectError(
        await call('POST', '/test/orders', { name: 'day two' }, { 'X-Idempotency-Key': key }),
        422,
        'idempotency_error',
        'idempotency_key_reused',
      );
      clock.set(t0 + 24 * 3600_000 + 1000);
      const fresh2 = await call('POST', '/test/orders', { name: 'day two' }, { 'X-Idempotency-Key': key });
      expect({ status: fresh2.status, replayed: fresh2.headers.get('idempotent-replayed') }).toEqual({ status: 200, replayed: null });
      expect(await rowsOf(fresh.organizationId)).toBe(2);
      const purged = await purgeEdgeState(edge.pool, new Date());
      expect(purged.idempotency).toBeGreaterThanOrEqual(1);
      expect(await storedKeys(fresh.organizationId)).toBe(0);
    } finally {
      await edge.close();
    }
  });
});

describe('SPEC §14 POST /keys/verify', () => {
  test('200 with the organization name, id and environment; 401 for a key that does not authenticate', async () => {
    const org = await createTestOrg(main.pool);
    const { rows } = await sharedPool.query(`SELECT name FROM organizations WHERE id = $1`, [org.organizationId]);
    const ok = await client(main.url, org.apiKey)('POST', '/keys/verify');
    expect({ status: ok.status, body: ok.body }).toEqual({
      status: 200,
      body: { organization_name: rows[0].name, organization_id: org.organizationId, environment: 'sandbox' },
    });
    expectRateHeaders(ok);
    expectError(await client(main.url, 'sk_sandbox_wrong')('POST', '/keys/verify'), 401, 'authentication_error', 'unauthenticated');
  });
});
