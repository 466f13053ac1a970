import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { ZodType } from 'zod';
import { EDGE_LIMITS, IDEMPOTENCY_KEY_PATTERN } from './limits';
import type { AnyRoute } from './route';
import { errorBodySchema, z } from '../zod';

const EDGE_ERRORS: Record<number, string> = {
  400: 'Invalid request: malformed JSON or JSON nested deeper than 32 levels, a query parameter the endpoint does not declare, a field failing validation (one `details` entry per field; impossible dates, NUL and lone surrogates included), or a missing resource named in the body.',
  401: 'Missing, malformed, unknown, revoked or other-environment API key.',
  403: "Write from an address not on the organization's IP allowlist.",
  404: 'Unknown id, or an id of another organization.',
  409: 'The resource is in a state that forbids the action, or a duplicate arrived while the original is executing.',
  413: 'Body over 64 KiB.',
  415: 'Body is not JSON.',
  422: 'X-Idempotency-Key reused with another endpoint or body.',
  429: 'Rate limit exceeded (Retry-After says when to retry), or too many failed authentications from this address.',
  405: 'A method this path does not have (`method_not_allowed`); `Allow` names the ones it has.',
  500: 'Internal error; quote request_id.',
  503: 'A backing service is briefly unavailable. Retry after Retry-After seconds with the same idempotency key.',
};

const REQUEST_ID_HEADER = {
  'X-Request-Id': {
    description: 'The id of this request (req_…); quote it when reporting a problem.',
    schema: { type: 'string' as const },
  },
};

const RETRY_AFTER_HEADER = {
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' as const, minimum: 1 } },
};

const RATE_HEADERS = {
  'X-RateLimit-Limit': {
    description: 'Requests of this kind (read or write) allowed in any 60-second window.',
    schema: { type: 'integer' as const },
  },
  'X-RateLimit-Remaining': {
    description: 'Requests of this kind still admitted in the current window.',
    schema: { type: 'integer' as const },
  },
  'X-RateLimit-Reset': {
    description: 'Unix epoch seconds at which the oldest counted request leaves the window.',
    schema: { type: 'integer' as const },
  },
  ...REQUEST_ID_HEADER,
};

/** Headers of each error status beyond X-Request-Id (SPEC §3, §4). */
const ERROR_HEADERS: Record<number, Record<string, { description: string; schema: object }>> = {
  401: {
    'WWW-Authenticate': { description: 'Always `Bearer`: the scheme to authenticate with.', schema: { type: 'string', const: 'Bearer' } },
  },
  405: { Allow: { description: 'The methods this path answers, comma-separated.', schema: { type: 'string' } } },
  429: { ...RETRY_AFTER_HEADER, ...RATE_HEADERS },
  503: RETRY_AFTER_HEADER,
};

/** Tags in the order the reference page shows them, each with what it groups. */
const TAGS: { name: string; description: string }[] = [
  { name: 'Keys', description: 'Checking an API key.' },
  { name: 'Users', description: 'The people who pay and get paid (SPEC §6).' },
  { name: 'Limits', description: 'Deposit and withdrawal limits per user with a cooling-off on raises, and self-exclusion (SPEC §26).' },
  { name: 'Accounts', description: "The organization's settlement accounts and their balances." },
  { name: 'Intents', description: 'Payment intents: a request to move money in or out, and card/bank authorization.' },
  { name: 'Transactions', description: 'The ledger entries intents, refunds and disputes create, with their lifecycle.' },
  { name: 'Transfers', description: 'Daily net settlement with the network, one per window and account.' },
  {
    name: 'ACH',
    description: "The bank's answers on the ACH rail: returns, notifications of change and what could not be applied (SPEC §25).",
  },
  { name: 'Refunds', description: 'Returning all or part of a cash_in.' },
  { name: 'Disputes', description: 'Payments the network disputes.' },
  { name: 'Tokens', description: 'Bank accounts and cards exchanged for single-use tokens.' },
  { name: 'Webhooks', description: 'Endpoints that receive signed events, their deliveries, resends and replays.' },
  { name: 'Events', description: 'Every event of the retention period, as webhooks deliver it.' },
  { name: 'Simulation', description: 'Sandbox only: play the network and the clock.' },
  { name: 'Operations', description: 'Health, readiness, metrics and this document; no API key needed.' },
];

/** The endpoints outside the API proper, served without an API key. */
export const OPERATIONAL_PATHS = [
  { method: 'get', path: '/healthz' },
  { method: 'get', path: '/readyz' },
  { method: 'get', path: '/metrics' },
  { method: 'get', path: '/openapi.json' },
  { method: 'get', path: '/docs' },
] as const;

/**
 * A stable operationId from the method and path: `createUser`, `retrieveUser`, `listUsers`, `updateUser`, `approveIntent`,
 * `listWebhookDeliveries`, `retrieveTransferReport`, `simulateTransferSettle`. A route may name its own.
 */
export function operationIdOf(method: string, path: string): string {
  const segments = path.split('/').filter(Boolean);
  const literals = segments
    .filter((segment) => !segment.startsWith('{'))
    .map((segment) => segment.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase()));
  const title = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);
  const plural = (word: string) => (/s$/.test(word) ? word : /[^aeiou]y$/.test(word) ? `${word.slice(0, -1)}ies` : `${word}s`);
  const endsWithId = segments.at(-1)?.startsWith('{') ?? false;
  if (literals[0] === 'simulate') return `simulate${literals.slice(1).map(title).join('')}`;
  if (method === 'get') {
    if (endsWithId) return `retrieve${literals.map(title).join('')}`;
    // Under an id, a singular noun is one thing of that resource (`/transfer/{id}/report`), a plural a list.
    const underId = segments.at(-2)?.startsWith('{') ?? false;
    if (underId && !literals.at(-1)!.endsWith('s')) return `retrieve${literals.map(title).join('')}`;
    return `list${literals.map((word, i) => title(i === literals.length - 1 ? plural(word) : word)).join('')}`;
  }
  if (method === 'delete') return `delete${literals.map(title).join('')}`;
  // A POST to the resource's own id updates it (`POST /user/{id}`).
  if (endsWithId) return `update${literals.map(title).join('')}`;
  // A POST ending in a verb after an id acts on that resource (`/intent/{id}/approve`); otherwise it creates.
  if (segments.length > 1 && segments.at(-2)?.startsWith('{')) return `${literals.at(-1)}${literals.slice(0, -1).map(title).join('')}`;
  return `create${literals.map(title).join('')}`;
}

const DESCRIPTION = `Account-to-account payments ledger and settlement engine.

**Authentication.** Send \`Authorization: Bearer sk_<environment>_…\` on every request. Keys are stored only
as hashes, shown once, revocable by the operator; a key of the other environment, a revoked or unknown key
gets 401. After 20 failed authentications within 60 seconds from one address (an IPv6 /64 counts as one),
a request from it whose key is not valid gets 429 \`too_many_auth_failures\` with \`Retry-After\` until the
oldest failure is 60 seconds old; a valid key is never refused for other requests' failures. Requests to unknown routes without credentials get 404 and do not count.

**IP allowlist.** When the operator configured one, writes (POST, PUT, PATCH, DELETE) from other addresses
get 403 \`ip_not_allowed\`; reads are never restricted. \`X-Forwarded-For\` is believed only through the
proxies named in \`TRUST_PROXY\`; \`::ffff:a.b.c.d\` is the same client as \`a.b.c.d\`.

**Rate limits.** Per organization and kind, an exact sliding 60-second window: 100 writes and 1,000 reads
unless the operator set others. A request is admitted iff fewer than the limit of its kind were admitted in
the preceding 60 seconds; refused requests use no quota. Every authenticated response carries
\`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` (Unix seconds when the oldest
counted request leaves the window); 429 adds \`Retry-After\` (seconds).

**Idempotency (every POST).** A POST repeats an earlier one from the same organization within 24 hours when
its \`X-Idempotency-Key\` (1–255 printable ASCII) matches, or its unique body field matches (\`tag\` on POST
/user, \`token\` on POST /authorize), or, with neither, its exact body bytes to the same endpoint match. The
repeat gets the original status and body byte for byte with \`Idempotent-Replayed: true\` and creates nothing.
The same key with another endpoint or body gets 422 \`idempotency_key_reused\`. A repeat arriving while the
original executes waits up to 5 seconds for its answer, then gets 409 \`idempotency_request_in_progress\`.
Requests refused before executing (400 validation, 401, 403, 409 in progress, 429) store nothing; executed
ones store their final answer, success or business error (e.g. 409 \`invalid_state\`).

**Errors.** Every non-2xx answer is \`{ "error": { type, code, message, param?, details?, request_id } }\`;
every response carries \`X-Request-Id\`. Bodies are JSON up to 64 KiB (413 beyond, 415 if not JSON).
503 \`unavailable\` (with \`Retry-After\`) means a backing service failed for a moment: retry with the same
idempotency key, which replays the answer if the request did complete. 401 carries \`WWW-Authenticate: Bearer\`.

**Bad input** is a 400 naming the field, and changes nothing: a query parameter the endpoint does not
declare (\`validation_failed\`, so a typo never returns unfiltered data); a date that is not a real calendar
day (\`2024-02-30\`) or a date-time without an offset; a string holding U+0000 or a lone UTF-16 surrogate
(\`"\\ud800"\`); a JSON body nested deeper than 32 levels (\`invalid_json\`). A wrong method on a known
path is 405 \`method_not_allowed\` with \`Allow\`. Requests the HTTP server itself refuses answer the same
error object with a request id: headers over 16 KiB are 431 \`headers_too_large\`; a malformed request
line or a control character in a header is 400 \`malformed_request\` (and closes the connection), as is an
HTTP/1.1 request without \`Host\` and \`CONNECT\`; an \`Expect\` other than \`100-continue\` is 417
\`expectation_failed\`.

**Lists** are newest first with \`?limit=1..100\` (default 25) and \`?cursor=\`.`;

/** What the features document beside their routes (the webhook requests this service sends), given by the composition root. */
export type DocumentExtras = (registry: OpenAPIRegistry) => void;

/** Builds the OpenAPI 3.1 document from the same zod schemas and route table the edge validates with. */
export function buildOpenApiDocument(routes: AnyRoute[], environment: string, extras: DocumentExtras): object {
  const registry = new OpenAPIRegistry();
  registry.register('Error', errorBodySchema);
  const bearer = registry.registerComponent('securitySchemes', 'apiKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key: sk_sandbox_… or sk_production_…',
  });
  for (const route of routes) {
    if (route.sandboxOnly && environment !== 'sandbox') continue;
    registry.registerPath(operationOf(route, bearer.name));
  }
  registerOperationalDocs(registry);
  extras(registry);
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Payments ledger and settlement API',
      version: '0.0.1',
      description: DESCRIPTION,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      contact: { name: 'The operator of this deployment' },
    },
    servers: [{ url: '/', description: `This deployment (${environment})` }],
    tags: TAGS,
  });
}

/** One route's operation, authenticated by the API key scheme `securityScheme`. */
function operationOf(route: AnyRoute, securityScheme: string): RouteConfig {
  return {
    method: route.method,
    path: route.path,
    operationId: route.operationId ?? operationIdOf(route.method, route.path),
    tags: [route.tag],
    summary: route.summary,
    // The reference page shows the description, not the summary: a route with no more to say repeats it.
    description: route.sandboxOnly
      ? `${route.description ?? ''}\n\nSandbox only: production answers 404.`.trim()
      : (route.description ?? `${route.summary}.`),
    security: [{ [securityScheme]: [] }],
    request: requestOf(route),
    responses: responsesOf(route),
  };
}

/** What the route reads: its path, query and body schemas, and on a POST the idempotency key header. */
function requestOf(route: AnyRoute): RouteConfig['request'] {
  const request: RouteConfig['request'] = {};
  if (route.params) request.params = route.params as never;
  if (route.query) request.query = route.query as never;
  const body = route.documentedBody ?? route.body;
  if (body) request.body = { content: { 'application/json': { schema: body as ZodType } }, required: true };
  if (route.method === 'post') {
    const key = z.string().min(1).max(EDGE_LIMITS.idempotencyKeyLengthMax).regex(IDEMPOTENCY_KEY_PATTERN).openapi({
      description: 'Makes retries safe: a repeat within 24 hours replays the first response. Printable ASCII.',
      // HTTP drops a header value's leading and trailing spaces before the edge sees them: a key cannot hold them.
      pattern: '^[\\x21-\\x7e](?:[\\x20-\\x7e]*[\\x21-\\x7e])?$',
    });
    request.headers = z.object({ 'X-Idempotency-Key': route.idempotency?.requireHeader ? key : key.optional() });
  }
  return request;
}

/** The route's success answer, then every error status the edge or the route can answer it with. */
function responsesOf(route: AnyRoute): RouteConfig['responses'] {
  const errorStatuses = new Set([
    400,
    401,
    405,
    429,
    500,
    503,
    ...(route.method === 'get' ? [] : [403, 413, 415]),
    ...(route.method === 'post' ? [409, 422] : []),
    ...(route.errorStatuses ?? []),
  ]);
  const responses: RouteConfig['responses'] = {
    [route.response.status ?? 200]: {
      description: route.response.description,
      headers: RATE_HEADERS,
      content: {
        'application/json': { schema: route.response.schema },
        ...Object.fromEntries(Object.entries(route.response.otherContent ?? {}).map(([type, schema]) => [type, { schema }])),
      },
    },
  };
  for (const status of [...errorStatuses].sort()) {
    responses[status] = {
      description: EDGE_ERRORS[status] ?? 'Error',
      headers: { ...REQUEST_ID_HEADER, ...ERROR_HEADERS[status] },
      content: { 'application/json': { schema: errorBodySchema } },
    };
  }
  return responses;
}

/** /healthz, /readyz, /metrics, /openapi.json and /docs (SPEC §14): served without an API key, never rate limited. */
function registerOperationalDocs(registry: OpenAPIRegistry): void {
  const ok = (description: string, schema: ZodType, type = 'application/json') => ({
    description,
    headers: REQUEST_ID_HEADER,
    content: { [type]: { schema } },
  });
  const refused = (statuses: number[]) =>
    Object.fromEntries(
      statuses.map((status) => [
        status,
        {
          description: status === 400 ? 'A query parameter: this endpoint takes none (`validation_failed`).' : EDGE_ERRORS[status]!,
          headers: { ...REQUEST_ID_HEADER, ...ERROR_HEADERS[status] },
          content: { 'application/json': { schema: errorBodySchema } },
        },
      ]),
    );
  const common = { tags: ['Operations'], security: [] };
  registry.registerPath({
    ...common,
    method: 'get',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'Liveness: the process answers',
    description: 'Says nothing about Postgres or Temporal; see /readyz.',
    responses: { 200: ok('The process is up.', z.object({ status: z.literal('ok') })), ...refused([400, 405]) },
  });
  const checks = z.record(z.string(), z.string()).openapi({
    description: 'Each dependency (`postgres`, `temporal`): `ok`, or `unavailable: <reason>`.',
    example: { postgres: 'ok', temporal: 'ok' },
  });
  registry.registerPath({
    ...common,
    method: 'get',
    path: '/readyz',
    operationId: 'getReadiness',
    summary: 'Readiness: Postgres answers; Temporal is named',
    description:
      'A load balancer sends traffic only while this is 200. 200 while Postgres answers: reads and writes need ' +
      'nothing else (SPEC §20: writes queue their workflow starts until Temporal answers), so `checks.temporal` ' +
      'says `ok` or `unavailable: <reason>` without failing the check.',
    responses: {
      200: ok('Ready to serve; `checks.temporal` may name Temporal unavailable.', z.object({ status: z.literal('ready'), checks })),
      503: {
        description: 'Postgres (or a supervised service of `npm start`) is unreachable: the error object plus `checks`.',
        headers: { ...REQUEST_ID_HEADER, ...RETRY_AFTER_HEADER },
        content: { 'application/json': { schema: z.object({ error: errorBodySchema.shape.error, checks }) } },
      },
      ...refused([400, 405]),
    },
  });
  registry.registerPath({
    ...common,
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    summary: 'Prometheus metrics',
    description: 'Prometheus text exposition format 0.0.4: the process defaults and the HTTP request histogram.',
    responses: { 200: ok('Metrics in the Prometheus text format.', z.string(), 'text/plain'), ...refused([400, 405]) },
  });
  registry.registerPath({
    ...common,
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'This OpenAPI 3.1 document',
    description: 'Generated at start from the same zod schemas that validate requests.',
    responses: { 200: ok('The OpenAPI document.', z.object({ openapi: z.string() }).catchall(z.unknown())), ...refused([400, 405]) },
  });
  registry.registerPath({
    ...common,
    method: 'get',
    path: '/docs',
    operationId: 'getApiReference',
    summary: 'The API reference page',
    description: 'This document rendered as HTML (Swagger UI) at `/docs/`; `/docs` redirects there, so the page finds its assets.',
    responses: {
      301: {
        description: 'Moved to `/docs/`, the HTML page.',
        headers: { ...REQUEST_ID_HEADER, Location: { description: '`/docs/`', schema: { type: 'string' } } },
      },
      ...refused([405]),
    },
  });
}

/** `/user/{id}` → `/user/:id` for Express. */
export function expressPath(openApiPath: string): string {
  return openApiPath.replace(/\{(\w+)\}/g, ':$1');
}
