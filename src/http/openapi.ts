import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { ZodType } from 'zod';
import type { AnyRoute } from './route';
import { registerWebhookDocs } from '../webhooks/openapi';
import { errorBodySchema, z } from '../zod';

const EDGE_ERRORS: Record<number, string> = {
  400: 'Invalid request: malformed JSON, a field failing validation (one `details` entry per field), or a missing resource named in the body.',
  401: 'Missing, malformed, unknown, revoked or other-environment API key.',
  403: "Write from an address not on the organization's IP allowlist.",
  404: 'Unknown id, or an id of another organization.',
  409: 'The resource is in a state that forbids the action, or a duplicate arrived while the original is executing.',
  413: 'Body over 64 KiB.',
  415: 'Body is not JSON.',
  422: 'X-Idempotency-Key reused with another endpoint or body.',
  429: 'Rate limit exceeded (Retry-After says when to retry), or too many failed authentications from this address.',
  500: 'Internal error; quote request_id.',
  503: 'A backing service is briefly unavailable. Retry after Retry-After seconds with the same idempotency key.',
};

const RATE_HEADERS = {
  'X-RateLimit-Limit': { description: 'Requests of this kind (read or write) allowed in any 60-second window.', schema: { type: 'integer' as const } },
  'X-RateLimit-Remaining': { description: 'Requests of this kind still admitted in the current window.', schema: { type: 'integer' as const } },
  'X-RateLimit-Reset': { description: 'Unix epoch seconds at which the oldest counted request leaves the window.', schema: { type: 'integer' as const } },
  'X-Request-Id': { description: 'The id of this request (req_…); quote it when reporting a problem.', schema: { type: 'string' as const } },
};

const DESCRIPTION = `Account-to-account payments ledger and settlement engine.

**Authentication.** Send \`Authorization: Bearer sk_<environment>_…\` on every request. Keys are stored only
as hashes, shown once, revocable by the operator; a key of the other environment, a revoked or unknown key
gets 401. After 20 failed authentications within 60 seconds from one address (an IPv6 /64 counts as one),
every request from it gets 429 \`too_many_auth_failures\` with \`Retry-After\` until the oldest failure is
60 seconds old. Requests to unknown routes without credentials get 404 and do not count.

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
idempotency key, which replays the answer if the request did complete.

**Lists** are newest first with \`?limit=1..100\` (default 25) and \`?cursor=\`.`;

/** Builds the OpenAPI 3.1 document from the same zod schemas and route table the edge validates with. */
export function buildOpenApiDocument(routes: AnyRoute[], environment: string): object {
  const registry = new OpenAPIRegistry();
  registry.register('Error', errorBodySchema);
  const bearer = registry.registerComponent('securitySchemes', 'apiKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key: sk_sandbox_… or sk_production_…',
  });
  for (const route of routes) {
    if (route.sandboxOnly && environment !== 'sandbox') continue;
    const request: RouteConfig['request'] = {};
    if (route.params) request.params = route.params as never;
    if (route.query) request.query = route.query as never;
    if (route.body) request.body = { content: { 'application/json': { schema: route.body as ZodType } }, required: true };
    if (route.method === 'post') {
      const key = z.string().min(1).max(255).openapi({ description: 'Makes retries safe: a repeat within 24 hours replays the first response.' });
      request.headers = z.object({ 'X-Idempotency-Key': route.idempotency?.requireHeader ? key : key.optional() });
    }
    const errorStatuses = new Set([400, 401, 429, 500, 503, ...(route.method === 'get' ? [] : [403, 413, 415]),
      ...(route.method === 'post' ? [409, 422] : []), ...(route.errorStatuses ?? [])]);
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
        content: { 'application/json': { schema: errorBodySchema } },
      };
    }
    registry.registerPath({
      method: route.method,
      path: route.path,
      tags: [route.tag],
      summary: route.summary,
      description: route.sandboxOnly ? `${route.description ?? ''}\n\nSandbox only: production answers 404.`.trim() : route.description,
      security: [{ [bearer.name]: [] }],
      request,
      responses,
    });
  }
  registerWebhookDocs(registry);
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: '3.1.0',
    info: { title: 'Payments ledger and settlement API', version: '0.0.1', description: DESCRIPTION },
    servers: [{ url: '/', description: `This deployment (${environment})` }],
  });
}

/** `/user/{id}` → `/user/:id` for Express. */
export function expressPath(openApiPath: string): string {
  return openApiPath.replace(/\{(\w+)\}/g, ':$1');
}
