import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// Every schema is built from this one `z`, so each carries its OpenAPI metadata: one schema per resource
// validates requests, types the code and writes /openapi.json.
extendZodWithOpenApi(z);

export { z };

/** A calendar date, YYYY-MM-DD: the one date schema of every request and response. */
export const dateString = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be YYYY-MM-DD');

/** An example id of the given prefix, for the OpenAPI document. */
export const idExample = (prefix: string) => `${prefix}_7fJ2kQ9xLmN3pR5tV8wY1zA4`;

/** `?limit=1..100` (25) and `?cursor=`: the one paging scheme of every list (SPEC §8). */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(25).openapi({ description: 'Page size, 1 to 100.' }),
  cursor: z.string().max(200).optional().openapi({ description: 'The `next_cursor` of the previous page: the id of its last item.' }),
});

export function listEnvelope<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), has_more: z.boolean(), next_cursor: z.string().nullable() });
}

export const errorBodySchema = z
  .object({
    error: z.object({
      type: z.enum(['invalid_request_error', 'authentication_error', 'permission_error', 'idempotency_error', 'rate_limit_error', 'api_error']),
      code: z.string(),
      message: z.string(),
      param: z.string().optional(),
      details: z.array(z.object({ param: z.string(), message: z.string() })).optional(),
      request_id: z.string(),
    }),
  })
  .openapi('Error');
