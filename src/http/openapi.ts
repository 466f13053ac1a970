import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { ZodType } from 'zod';
import type { RouteDef } from './edge';
import { registerWebhookDocs } from '../webhooks/openapi';
import { errorBodySchema, z } from './zod';

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
};

const RATE_HEADERS = {
  'X-RateLimit-Limit': { description: 'Requests of this kind (read or write) allowed in any 60-second window.', schema: { type: 'integer' as const } },
  'X-RateLimit-Remaining': { description: 'Requests of this kind still admitted in the current window.', schema: { type: 'integer' as const } },
  'X-RateLimit-Reset': { description: 'Unix epoch seconds at which the oldest counted request leaves the window.', schema: { type: 'integer' as const } },
  'X-Request-Id': { description: 'The id of this request (req_…); quote it when reporting a problem.', schema: { type: 'string' as const } },
};

const DESCRIPTION = `Account-to-account payments ledger and settlement engine.

Authenticate every request with \`Authorization: Bearer sk_<environment>_…\`. Money is integer US cents.
Every POST is idempotent (SPEC §5): send \`X-Idempotency-Key\` (1–255 printable ASCII) to retry safely; a
replay answers the original status and body with \`Idempotent-Replayed: true\`. Lists are newest first with
\`?limit=1..100\` (default 25) and \`?cursor=\`. Rate limits: 100 writes and 1,000 reads per organization
per sliding 60 seconds unless the operator set others.`;

/** Builds the OpenAPI 3.1 document from the same zod schemas and route table the edge validates with. */
export function buildOpenApiDocument(routes: RouteDef<any, any, any>[], environment: string): object { // eslint-disable-line @typescript-eslint/no-explicit-any
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
    const errorStatuses = new Set([400, 401, 429, 500, ...(route.method === 'get' ? [] : [403, 413, 415]),
      ...(route.method === 'post' ? [409, 422] : []), ...(route.errorStatuses ?? [])]);
    const responses: RouteConfig['responses'] = {
      [route.response.status ?? 200]: {
        description: route.response.description,
        headers: RATE_HEADERS,
        content: { 'application/json': { schema: route.response.schema } },
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
