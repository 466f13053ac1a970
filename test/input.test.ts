import net from 'node:net';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { startApi, type RunningApi } from '../src/api';
import { canonicalJson } from '../src/http/canonicalJson';
import { INPUT_LIMITS } from '../src/http/input';
import { allRoutes } from '../src/routes';
import { z } from '../src/zod';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { apiClient, createTestOrg, startStack, type ApiResponse, type Stack, type TestOrg } from './support/harness';
import { userBody } from './support/payments';

type Json = any;

let stack: Stack;
let org: TestOrg;
let call: ReturnType<typeof apiClient>;
let host: string;
let port: number;

beforeAll(async () => {
  stack = await startStack({ worker: false });
  org = await createTestOrg(stack.pool, { write: 1_000_000, read: 1_000_000 });
  call = apiClient(stack.url, org.apiKey);
  const url = new URL(stack.url);
  host = url.hostname;
  port = Number(url.port);
});

afterAll(async () => {
  await stack?.stop();
});

/** SPEC §3: the error object, with the request id of the X-Request-Id header. */
function expectErrorObject(response: { status: number; body: Json; headers: { get(name: string): string | null } }, status?: number) {
  if (status !== undefined) expect(response.status).toBe(status);
  expect(response.status).toBeGreaterThanOrEqual(400);
  expect(response.status).toBeLessThan(500);
  expect(Object.keys(response.body ?? {})).toEqual(['error']);
  const { error } = response.body;
  expect(typeof error.type).toBe('string');
  expect(typeof error.code).toBe('string');
  expect(typeof error.message).toBe('string');
  expect(error.request_id).toMatch(/^req_[A-Za-z0-9]{16,}$/);
  expect(error.request_id).toBe(response.headers.get('x-request-id'));
}

function expectParam(response: ApiResponse, param: string) {
  expectErrorObject(response, 400);
  expect(response.body.error.code).toBe('validation_failed');
  expect(response.body.error.param).toBe(param);
}

/**
 * Rows this organization owns in every table that has an organization_id, bar the rate limiter's bookkeeping and
 * the journal's daily snapshots (a window closed by another suite snapshots every account, this one's too).
 */
async function rowsOwnedBy(organizationId: string): Promise<number> {
  const { rows: tables } = await stack.pool.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.columns
      WHERE table_schema = 'public' AND column_name = 'organization_id'
        AND table_name NOT IN ('rate_limit_hits', 'rate_limit_counters', 'rate_limit_leases', 'auth_failures', 'journal_snapshots')
      ORDER BY table_name`,
  );
  expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['users', 'intents', 'idempotency_keys', 'webhook_endpoints']));
  const sum = tables.map((t) => `(SELECT count(*) FROM "${t.table_name}" WHERE organization_id = $1)`).join(' + ');
  const { rows } = await stack.pool.query<{ n: string }>(`SELECT ${sum} AS n`, [organizationId]);
  return Number(rows[0]!.n);
}

interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: Json;
  text: string;
}

/** Sends bytes as they are (no client library would send these) and reads the answer until the server closes. */
function rawRequest(bytes: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers = new Map(
        headerLines.map((line) => {
          const at = line.indexOf(':');
          return [line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim()] as [string, string];
        }),
      );
      const bodyText = rest.join('\r\n\r\n');
      let body: Json;
      try {
        body = JSON.parse(bodyText);
      } catch {
        body = undefined;
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, text });
    });
    socket.end(bytes);
  });
}

function rawAsResponse(raw: RawResponse) {
  return { status: raw.status, body: raw.body, headers: { get: (name: string) => raw.headers.get(name.toLowerCase()) ?? null } };
}

const IMPOSSIBLE_DATES = ['2024-02-30', '2023-02-29', '2024-04-31', '2024-13-01', '2024-00-10', '0000-01-01', '2024-1-01', '20240101'];
const IMPOSSIBLE_DATE_TIMES = [
  '2024-02-30T00:00:00Z',
  '2023-02-29T12:00:00Z',
  '2024-01-01T24:00:00Z',
  '2024-01-01T00:00:60Z',
  '2024-01-01T00:00:00+15:00',
  '0000-01-01T00:00:00Z',
  '2024-01-01T00:00:00',
  '2024-01-01',
];

describe('SPEC §16 bad input: every failure is a 400 naming the field, and changes nothing', () => {
  test('an impossible calendar date in a list filter or a body is a 400 naming it (it was a Postgres 500)', async () => {
    for (const date of IMPOSSIBLE_DATES) {
      expectParam(await call('GET', `/transaction?date=${date}`), 'date');
      expectParam(await call('GET', `/transfer?window_date=${date}`), 'window_date');
      expectParam(await call('GET', `/transfer?date=${date}`), 'date');
      expectParam(await call('POST', '/simulate/settlement', { date }), 'date');
    }
    for (const moment of IMPOSSIBLE_DATE_TIMES) {
      expectParam(await call('GET', `/transaction?created_at.gte=${encodeURIComponent(moment)}`), 'created_at.gte');
      expectParam(await call('GET', `/transaction?created_at.lt=${encodeURIComponent(moment)}`), 'created_at.lt');
    }
    // Real days, leap days included, still filter.
    expect((await call('GET', '/transaction?date=2024-02-29')).status).toBe(200);
    expect((await call('GET', '/transfer?window_date=2000-02-29&date=0001-01-01')).status).toBe(200);
    expect((await call('GET', `/transaction?created_at.gte=${encodeURIComponent('2024-02-29T23:59:59.999+14:00')}`)).status).toBe(200);
  });

  test('a lone UTF-16 surrogate in any string field is a 400 naming it; nothing is stored altered', async () => {
    const before = await rowsOwnedBy(org.organizationId);
    // JSON.stringify writes a lone surrogate as the escape `\ud800`, exactly what a client can send.
    const cases: [string, (body: Json) => void][] = [
      [
        'address.address_line_1',
        (b) => {
          b.address.address_line_1 = 'x\ud800y';
        },
      ],
      [
        'name.first',
        (b) => {
          b.name.first = 'A\udc00da';
        },
      ],
      [
        'name.last',
        (b) => {
          b.name.last = 'Lovelace\ud83d';
        },
      ],
      [
        'tag',
        (b) => {
          b.tag = '\udfff';
        },
      ],
      [
        'email',
        (b) => {
          b.email = 'ada\ud800@example.com';
        },
      ],
    ];
    for (const [param, patch] of cases) {
      const body = JSON.stringify(userBody(patch));
      expect(body).toMatch(/\\ud[89a-f][0-9a-f]{2}/);
      expectParam(await call('POST', '/user', body), param);
    }
    // A well-formed pair (an emoji) is text like any other.
    expect(JSON.stringify('😀')).toBe('"😀"');
    expectParam(await call('POST', '/webhook', '{"url":"https://example.com/\\ud800"}'), 'url');
    // In a key, the object holding it is named.
    expectParam(await call('POST', '/webhook', '{"url":"https://example.com/","meta":{"k\\udc00":1}}'), 'meta');
    expect(await rowsOwnedBy(org.organizationId)).toBe(before);
  });

  test('an unknown query parameter is a 400 naming it, on lists, retrievals and writes alike', async () => {
    const before = await rowsOwnedBy(org.organizationId);
    expectParam(await call('GET', '/transaction?dat=2024-01-01'), 'dat');
    expectParam(await call('GET', '/transfer?windowdate=2024-01-01'), 'windowdate');
    expectParam(await call('GET', '/user/user_x?expand=all'), 'expand');
    expectParam(await call('GET', '/healthz?verbose=1'), 'verbose');
    expectParam(await call('GET', '/account?=1'), '');
    const two = await call('GET', '/intent?limit=5&sort=asc&Status=pending');
    expectErrorObject(two, 400);
    expect(two.body.error.details.map((d: Json) => d.param)).toEqual(['sort', 'Status']);
    expectParam(await call('POST', '/webhook?dry_run=true', { url: 'https://example.com/hook' }), 'dry_run');
    expect(await rowsOwnedBy(org.organizationId)).toBe(before);
    expect((await call('GET', '/intent?limit=5&status=pending')).status).toBe(200);
  });

  test('every query schema is a zod object, so its keys are the parameters the edge lets through', () => {
    const withQuery = allRoutes.filter((route) => route.query !== undefined);
    expect(withQuery.length).toBeGreaterThan(5);
    for (const route of withQuery) {
      expect({ route: `${route.method} ${route.path}`, object: route.query instanceof z.ZodObject }).toEqual({
        route: `${route.method} ${route.path}`,
        object: true,
      });
    }
  });

  test('405 with Allow for a wrong method on a known path; 401 carries WWW-Authenticate: Bearer', async () => {
    const wrong = await call('DELETE', '/user');
    expectErrorObject(wrong, 405);
    expect(wrong.body.error.code).toBe('method_not_allowed');
    expect(wrong.headers.get('allow')).toBe('GET, HEAD, POST');
    // Swagger UI's page answers GET only; it used to serve the page to any method.
    const redirect = await fetch(`${stack.url}/docs`, { redirect: 'manual' });
    expect({ status: redirect.status, location: redirect.headers.get('location') }).toEqual({ status: 301, location: '/docs/' });
    const page = await fetch(`${stack.url}/docs/`, { redirect: 'manual' });
    expect({ status: page.status, type: page.headers.get('content-type') }).toEqual({
      status: 200,
      type: expect.stringMatching(/^text\/html/) as string,
    });
    const postDocs = await apiClient(stack.url, null)('POST', '/docs/', {});
    expectErrorObject(postDocs, 405);
    expect(postDocs.headers.get('allow')).toBe('GET, HEAD');
    const unknown = await call('DELETE', '/users');
    expectErrorObject(unknown, 404);
    const anonymous = await apiClient(stack.url, null)('GET', '/user');
    expectErrorObject(anonymous, 401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    const badKey = await apiClient(stack.url, 'sk_sandbox_nope')('POST', '/user', {});
    expectErrorObject(badKey, 401);
    expect(badKey.headers.get('www-authenticate')).toBe('Bearer');
  });

  test("what Node's HTTP server refuses itself answers the JSON error object with a request id", async () => {
    const cases: [string, string | Buffer, number][] = [
      ['headers over 16 KiB', `GET /user HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`, 431],
      [
        'many headers together over 16 KiB',
        `GET /user HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 400 }, (_, i) => `X-H${i}: ${'b'.repeat(40)}\r\n`).join('')}\r\n`,
        431,
      ],
      ['a control character in a header value', `GET /user HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n`, 400],
      ['a space in a header name', `GET /user HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n`, 400],
      ['a bad request line', `GET /user HTTP/1.1 extra\r\nHost: x\r\n\r\n`, 400],
      ['not HTTP at all', 'hello\r\n\r\n', 400],
      ['an unknown method token', `G@T /user HTTP/1.1\r\nHost: x\r\n\r\n`, 400],
      ['a bare CR inside a header line', Buffer.from('GET /user HTTP/1.1\r\nHost: x\r\nX-A: 1\rX-B: 2\r\n\r\n'), 400],
      ['an Expect other than 100-continue', `POST /user HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 0\r\n\r\n`, 417],
      ['CONNECT (Node dropped the connection without an answer)', `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`, 400],
      ['an HTTP/1.1 request without Host', `GET /user HTTP/1.1\r\n\r\n`, 400],
    ];
    for (const [what, bytes, status] of cases) {
      const raw = await rawRequest(bytes);
      expect({ what, status: raw.status }).toEqual({ what, status });
      expectErrorObject(rawAsResponse(raw), status);
      expect(raw.headers.get('content-type')).toMatch(/^application\/json/);
      expect(Number(raw.headers.get('content-length'))).toBe(Buffer.byteLength(raw.text.slice(raw.text.indexOf('\r\n\r\n') + 4)));
      // After a framing error nothing more on the connection can be trusted.
      if (status !== 400 || !what.includes('without Host'))
        expect({ what, connection: raw.headers.get('connection') }).toEqual({ what, connection: 'close' });
    }
  });
});

describe('SPEC §5 idempotency: the canonical JSON a body is hashed by', () => {
  /** The recursive definition the stored request hashes were made with. */
  function recursive(value: unknown): string {
    if (Array.isArray(value)) return `[${value.map(recursive).join(',')}]`;
    if (value !== null && typeof value === 'object') {
      return `{${Object.keys(value)
        .sort()
        .map((key) => `${JSON.stringify(key)}:${recursive((value as Record<string, unknown>)[key])}`)
        .join(',')}}`;
    }
    return JSON.stringify(value) ?? 'null';
  }

  test('byte for byte the recursive definition, for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(recursive(value));
      }),
      { numRuns: 500 },
    );
    expect(canonicalJson({ b: [1, { d: null, c: 'x' }], a: true, e: undefined })).toBe('{"a":true,"b":[1,{"c":"x","d":null}],"e":null}');
  });

  test('iterative: a value nested 200,000 deep costs no call stack', () => {
    const depth = 200_000;
    const deep = JSON.parse(`${'['.repeat(depth)}{"b":1,"a":2}${']'.repeat(depth)}`);
    expect(() => recursive(deep)).toThrow(RangeError);
    expect(canonicalJson(deep)).toBe(`${'['.repeat(depth)}{"a":2,"b":1}${']'.repeat(depth)}`);
  });
});

/** The keys of a JSON object's top level as written, duplicates kept (JSON.parse keeps only the last). */
function topLevelKeys(text: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (
        depth === 1 &&
        text
          .slice(end + 1)
          .trimStart()
          .startsWith(':')
      )
        keys.push(JSON.parse(text.slice(i, end + 1)) as string);
      i = end;
    } else if (char === '{' || char === '[') depth++;
    else if (char === '}' || char === ']') depth--;
  }
  return keys;
}

describe('SPEC §14 operability: one info log line per request', () => {
  let api: RunningApi;
  const lines: Json[] = [];
  const rawLines: string[] = [];

  beforeAll(async () => {
    const destination = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) {
          if (!line.trim()) continue;
          lines.push(JSON.parse(line));
          rawLines.push(line);
        }
        done();
      },
    });
    api = await startApi({
      config: stack.config,
      pool: stack.pool,
      log: createLogger('info', 'ledger', destination),
      temporal: stack.temporal,
    });
  });

  afterAll(async () => {
    await api?.close();
  });

  test('success and refusal alike: method, route, status, duration, request id and organization id', async () => {
    const ok = await apiClient(api.url, org.apiKey)('GET', '/user?limit=1');
    const refused = await apiClient(api.url, org.apiKey)('GET', '/transaction?date=2024-02-30');
    const anonymous = await apiClient(api.url, null)('GET', '/account');
    const expected: [ApiResponse, number, string, string | undefined][] = [
      [ok, 200, '/user', org.organizationId],
      [refused, 400, '/transaction', org.organizationId],
      [anonymous, 401, '/account', undefined],
    ];
    for (const [response, status, route, organizationId] of expected) {
      const requestId = response.headers.get('x-request-id');
      const line = lines.find((l) => l.req?.id === requestId && l.msg === 'request completed');
      expect(line).toMatchObject({ level: 30, req: { id: requestId, method: 'GET' }, res: { statusCode: status }, route });
      expect(line.organization_id).toBe(organizationId);
      expect(typeof line.duration_ms).toBe('number');
      // Never the key.
      expect(JSON.stringify(line)).not.toContain(org.apiKey);
    }
    const raw = await new Promise<string>((resolve) => {
      const socket = net.connect(Number(new URL(api.url).port), new URL(api.url).hostname);
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
      });
      socket.on('close', () => resolve(text));
      socket.end('hello\r\n\r\n');
    });
    const requestId = /X-Request-Id: (\S+)/.exec(raw)?.[1];
    expect(lines.find((l) => l.req?.id === requestId)).toMatchObject({
      level: 30,
      res: { statusCode: 400 },
      msg: 'request refused by the HTTP server',
    });
  });

  test('every key is written once in a request line: one route, the matched one (counted in the raw text)', async () => {
    const matched = await apiClient(api.url, org.apiKey)('GET', '/user?limit=1');
    const unmatched = await apiClient(api.url, org.apiKey)('GET', '/no-such-route');
    const refused = await apiClient(api.url, null)('POST', '/intent', {});
    for (const [response, route] of [
      [matched, '/user'],
      [unmatched, 'unmatched'],
      [refused, '/intent'],
    ] as const) {
      const requestId = response.headers.get('x-request-id')!;
      const raw = rawLines.find((line) => line.includes(`"id":"${requestId}"`) && line.includes('"msg":"request completed"'));
      expect(raw).toBeDefined();
      const keys = topLevelKeys(raw!);
      expect(keys.filter((key) => key === 'route')).toEqual(['route']);
      expect(keys.filter((key, i) => keys.indexOf(key) !== i)).toEqual([]);
      expect(JSON.parse(raw!).route).toBe(route);
    }
  });
});

describe('SPEC §14 operability: the OpenAPI document', () => {
  test('a unique operationId and a declared tag on every operation; limit and retry headers on 401, 429, 503; operational endpoints', async () => {
    const document = (await apiClient(stack.url, null)('GET', '/openapi.json')).body;
    const declaredTags = new Set((document.tags as { name: string }[]).map((t) => t.name));
    const operations = Object.entries<Json>(document.paths).flatMap(([path, item]) =>
      Object.entries<Json>(item).map(([method, operation]) => ({ at: `${method.toUpperCase()} ${path}`, operation })),
    );
    const ids = operations.map(({ operation }) => operation.operationId as string);
    expect(ids.every((id) => /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { at, operation } of operations) {
      expect({ at, tags: operation.tags }).toEqual({ at, tags: [expect.any(String)] });
      expect(declaredTags.has(operation.tags[0])).toBe(true);
      const headers = (status: string) => Object.keys(operation.responses[status]?.headers ?? {}).sort();
      if (operation.responses['429'])
        expect(headers('429')).toEqual(['Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id']);
      if (operation.responses['503']) expect(headers('503')).toEqual(expect.arrayContaining(['Retry-After', 'X-Request-Id']));
      if (operation.responses['401']) expect(headers('401')).toEqual(['WWW-Authenticate', 'X-Request-Id']);
    }
    expect(operations.filter(({ operation }) => operation.responses['429']).length).toBeGreaterThan(30);
    for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs']) {
      expect({ path, security: document.paths[path]?.get?.security }).toEqual({ path, security: [] });
    }
    // /readyz's 503 is among the operations whose 503 headers were checked above.
    expect(Object.keys(document.paths['/readyz'].get.responses)).toEqual(expect.arrayContaining(['200', '503']));
  });
});

// ---------------------------------------------------------------------------------------------------------
// The property: every endpoint /openapi.json lists, under each class of hostile input.
// ---------------------------------------------------------------------------------------------------------

interface Operation {
  method: string;
  path: string;
  queryParams: { name: string; format?: string; required: boolean; example?: unknown }[];
  /** Dotted paths of the request body's date and date-time fields. */
  bodyDates: { path: string[]; format: string }[];
  /** A body the schema documents as an example, else {}; hostile values are planted in it. */
  example: Json;
}

function resolve(document: Json, schema: Json): Json {
  if (schema?.$ref) return resolve(document, document.components.schemas[schema.$ref.split('/').pop()]);
  return schema;
}

function operationsOf(document: Json): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(document.paths)) {
    for (const [method, operation] of Object.entries<Json>(item)) {
      const bodySchema = resolve(document, operation.requestBody?.content?.['application/json']?.schema);
      const bodyDates: Operation['bodyDates'] = [];
      const walk = (schema: Json, at: string[]) => {
        const resolved = resolve(document, schema);
        for (const variant of resolved?.anyOf ?? []) walk(variant, at);
        if (resolved?.format === 'date' || resolved?.format === 'date-time') bodyDates.push({ path: at, format: resolved.format });
        for (const [name, property] of Object.entries<Json>(resolved?.properties ?? {})) if (at.length < 3) walk(property, [...at, name]);
      };
      if (bodySchema) walk(bodySchema, []);
      operations.push({
        method: method.toUpperCase(),
        path,
        queryParams: (operation.parameters ?? [])
          .filter((p: Json) => p.in === 'query')
          .map((p: Json) => ({
            name: p.name,
            format: p.schema?.format,
            required: p.required === true,
            example: p.example ?? p.schema?.example,
          })),
        bodyDates,
        example: structuredClone(bodySchema?.example ?? {}),
      });
    }
  }
  return operations;
}

/** A value a required query parameter accepts: its documented example, else one of its format. */
function validQueryValue(param: Operation['queryParams'][number]): string {
  if (typeof param.example === 'string') return param.example;
  return param.format === 'date-time' ? '2024-01-02T00:00:00Z' : '2024-01-02';
}

function setAt(body: Json, path: string[], value: unknown): void {
  let at = body;
  for (const name of path.slice(0, -1)) {
    if (typeof at[name] !== 'object' || at[name] === null) at[name] = {};
    at = at[name];
  }
  at[path.at(-1)!] = value;
}

/** Dotted paths of the string leaves of an example body. */
function stringLeaves(value: Json, at: string[] = []): string[][] {
  if (typeof value === 'string') return [at];
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value).flatMap(([name, member]) => stringLeaves(member, [...at, name]));
}

function concretePath(path: string, id: string): string {
  return path.replace(/\{\w+\}/g, id);
}

type Case =
  | { kind: 'date'; operation: Operation; where: 'query' | 'body'; field: string[]; value: string }
  | { kind: 'surrogate'; operation: Operation; field: string[]; value: string }
  | { kind: 'deep'; operation: Operation; depth: number; shape: 'array' | 'object' }
  | { kind: 'unknown_param'; operation: Operation; name: string }
  | { kind: 'method'; operation: Operation; method: string }
  | { kind: 'raw'; operation: Operation; bytes: string; status: number };

describe('SPEC §16 property: every endpoint in /openapi.json, under hostile input', () => {
  test('never a 5xx, always the JSON error object with its request id, nothing written', async () => {
    const hostile = await createTestOrg(stack.pool, { write: 1_000_000, read: 1_000_000 });
    const document = (await apiClient(stack.url, null)('GET', '/openapi.json')).body;
    const operations = operationsOf(document);
    expect(operations.length).toBeGreaterThanOrEqual(35);
    const methodsByPath = new Map<string, Set<string>>();
    for (const operation of operations)
      methodsByPath.set(operation.path, (methodsByPath.get(operation.path) ?? new Set()).add(operation.method));
    const dated = operations.filter((o) => o.queryParams.some((p) => p.format) || o.bodyDates.length > 0);
    const posts = operations.filter((o) => o.method === 'POST');
    // /docs is Swagger UI's page, whose own assets take parameters of their own.
    const strictQuery = operations.filter((o) => o.path !== '/docs');
    expect(dated.map((o) => `${o.method} ${o.path}`)).toEqual(
      expect.arrayContaining(['GET /transaction', 'GET /transfer', 'POST /user', 'POST /simulate/settlement']),
    );

    const id = fc.oneof(fc.constant(`x_${randomString(8)}`), fc.stringMatching(/^[a-z]{1,8}_[A-Za-z0-9]{1,24}$/));
    const loneSurrogate = fc
      .tuple(fc.string({ maxLength: 5 }), fc.integer({ min: 0xd800, max: 0xdfff }), fc.string({ maxLength: 5 }))
      .map(([a, code, b]) => `${a}${String.fromCharCode(code)}${b}`)
      .filter((s) => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s));
    const caseArb: fc.Arbitrary<Case> = fc.oneof(
      fc.constantFrom(...dated).chain((operation) => {
        const fields = [
          ...operation.queryParams.filter((p) => p.format).map((p) => ({ where: 'query' as const, field: [p.name], format: p.format! })),
          ...operation.bodyDates.map((d) => ({ where: 'body' as const, field: d.path, format: d.format })),
        ];
        return fc
          .constantFrom(...fields)
          .chain((f) =>
            fc
              .constantFrom(...(f.format === 'date' ? IMPOSSIBLE_DATES : IMPOSSIBLE_DATE_TIMES))
              .map((value) => ({ kind: 'date' as const, operation, where: f.where, field: f.field, value })),
          );
      }),
      fc.constantFrom(...posts).chain((operation) => {
        const leaves = stringLeaves(operation.example);
        return fc
          .tuple(fc.constantFrom(...(leaves.length > 0 ? leaves : [['note']]), ['extra', 'nested']), loneSurrogate)
          .map(([field, value]) => ({ kind: 'surrogate' as const, operation, field, value }));
      }),
      fc
        .record({
          operation: fc.constantFrom(...posts),
          depth: fc.integer({ min: INPUT_LIMITS.jsonDepthMax + 1, max: 25_000 }),
          shape: fc.constantFrom('array' as const, 'object' as const),
        })
        .map((c) => ({ kind: 'deep' as const, ...c })),
      fc
        .record({ operation: fc.constantFrom(...strictQuery), name: fc.stringMatching(/^[a-z][a-z_.]{0,15}$/) })
        .filter(({ operation, name }) => !operation.queryParams.some((p) => p.name === name))
        .map((c) => ({ kind: 'unknown_param' as const, ...c })),
      fc
        .record({ operation: fc.constantFrom(...operations), method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE') })
        .filter(({ operation, method }) => !methodsByPath.get(operation.path)!.has(method))
        .map((c) => ({ kind: 'method' as const, ...c })),
      fc
        .record({
          operation: fc.constantFrom(...operations),
          garbage: fc.oneof(
            fc.integer({ min: 16 * 1024, max: 40 * 1024 }).map((n) => ({ header: `X-Big: ${'a'.repeat(n)}`, status: 431 })),
            fc
              .integer({ min: 0, max: 0x1f })
              .filter((c) => c !== 0x09)
              .map((c) => ({ header: `X-Bad: a${String.fromCharCode(c)}b`, status: 400 })),
            fc.constantFrom('Bad Name: 1', 'X-A\u0000: 1', ': empty', '(x): 1').map((header) => ({ header, status: 400 })),
          ),
          framing: fc.constantFrom('header', 'header', 'header', 'request_line', 'expect', 'no_host', 'connect'),
        })
        .map(({ operation, garbage, framing }) => {
          const target = concretePath(operation.path, 'x');
          const start = `${operation.method} ${target} HTTP/1.1\r\n`;
          const auth = `Authorization: Bearer ${hostile.apiKey}\r\n`;
          const [bytes, status] = {
            header: [`${start}Host: x\r\n${auth}${garbage.header}\r\n\r\n`, garbage.status],
            request_line: [`${operation.method} ${target} HTTP/1.1 trailing\r\nHost: x\r\n\r\n`, 400],
            expect: [`${start}Host: x\r\n${auth}Expect: ${garbage.header.slice(0, 40).replace(/[^A-Za-z0-9-]/g, '')}x\r\n\r\n`, 417],
            no_host: [`${start}${auth}\r\n`, 400],
            connect: [`CONNECT ${target.slice(1) || 'x'}:443 HTTP/1.1\r\nHost: x\r\n\r\n`, 400],
          }[framing] as [string, number];
          return { kind: 'raw' as const, operation, bytes, status };
        }),
    );
    const before = await rowsOwnedBy(hostile.organizationId);
    const seen = new Map<string, number>();
    const send = apiClient(stack.url, hostile.apiKey);

    await fc.assert(
      fc.asyncProperty(caseArb, id, async (c, resourceId) => {
        seen.set(c.kind, (seen.get(c.kind) ?? 0) + 1);
        const { operation } = c;
        const target = concretePath(operation.path, resourceId);
        if (c.kind === 'raw') {
          const raw = await rawRequest(c.bytes);
          expectErrorObject(rawAsResponse(raw), c.status);
          return;
        }
        let response: ApiResponse;
        if (c.kind === 'date') {
          if (c.where === 'query') {
            // The other required parameters are valid, so the impossible date is the one thing to refuse.
            const query = new URLSearchParams(
              operation.queryParams
                .filter((p) => p.required && p.name !== c.field[0])
                .map((p): [string, string] => [p.name, validQueryValue(p)]),
            );
            query.set(c.field[0]!, c.value);
            response = await send(operation.method, `${target}?${query.toString()}`);
          } else {
            const body = structuredClone(operation.example);
            setAt(body, c.field, c.value);
            response = await send(operation.method, target, body);
          }
          expectParam(response, c.field.join('.'));
        } else if (c.kind === 'surrogate') {
          const body = structuredClone(operation.example);
          setAt(body, c.field, c.value);
          response = await send(operation.method, target, JSON.stringify(body));
          expectParam(response, c.field.join('.'));
        } else if (c.kind === 'deep') {
          const body =
            c.shape === 'array' ? `${'['.repeat(c.depth)}${']'.repeat(c.depth)}` : `${'{"a":'.repeat(c.depth)}1${'}'.repeat(c.depth)}`;
          response = await send(operation.method, target, body);
          expectErrorObject(response, Buffer.byteLength(body) > 64 * 1024 ? 413 : 400);
        } else if (c.kind === 'unknown_param') {
          response = await send(
            operation.method,
            `${target}?${encodeURIComponent(c.name)}=1`,
            operation.method === 'POST' ? operation.example : undefined,
          );
          expectParam(response, c.name);
        } else {
          response = await send(c.method, target, c.method === 'GET' ? undefined : {});
          expectErrorObject(response, 405);
          const allowed = [...methodsByPath.get(operation.path)!];
          if (allowed.includes('GET')) allowed.push('HEAD');
          expect(response.headers.get('allow')).toBe(allowed.sort().join(', '));
        }
      }),
      { numRuns: Number(process.env.INPUT_PROPERTY_RUNS ?? 300) },
    );
    process.stdout.write(`hostile input classes: ${JSON.stringify(Object.fromEntries([...seen].sort()))}\n`);
    expect([...seen.keys()].sort()).toEqual(['date', 'deep', 'method', 'raw', 'surrogate', 'unknown_param']);
    expect(await rowsOwnedBy(hostile.organizationId)).toBe(before);
  }, 180_000);
});
