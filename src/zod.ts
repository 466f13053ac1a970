import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// Every schema is built from this one `z`, so each carries its OpenAPI metadata: one schema per resource
// validates requests, types the code and writes /openapi.json.
extendZodWithOpenApi(z);

export { z };

/**
 * A real calendar day, YYYY-MM-DD: the one date schema of every request and response. zod's ISO date knows
 * month lengths and leap years (2024-02-30 is refused); year 0000 is refused too, as Postgres has no year 0
 * and a date it cannot read must be a 400 naming the field, not a failed query.
 */
export const dateString = z.iso
  .date({ error: 'must be a real calendar date written YYYY-MM-DD' })
  .refine((value) => !value.startsWith('0000'), { error: 'must be a date in year 0001 or later' })
  .openapi({ format: 'date', example: '2026-11-21' });

/**
 * An ISO 8601 instant with its offset (`Z` or ±HH:MM) on a real calendar day; the offset within ±14:00 (the
 * widest any time zone uses), which Postgres also reads. Year 0000 is refused as for dates.
 */
export const dateTime = z.iso
  .datetime({ offset: true, error: 'must be an ISO 8601 date-time with offset on a real calendar day, e.g. 2026-11-21T15:04:05Z' })
  .refine((value) => !value.startsWith('0000'), { error: 'must be a date-time in year 0001 or later' })
  .refine(
    (value) => {
      const offset = /([+-])(\d\d):(\d\d)$/.exec(value);
      return !offset || Number(offset[2]) * 60 + Number(offset[3]) <= 14 * 60;
    },
    { error: 'must have an offset between -14:00 and +14:00' },
  )
  .openapi({ format: 'date-time', example: '2026-11-21T15:04:05Z' });

/** An example id of the given prefix, for the OpenAPI document. */
export const idExample = (prefix: string) => `${prefix}_7fJ2kQ9xLmN3pR5tV8wY1zA4`;

/** `?limit=1..100` (25) and `?cursor=`: the one paging scheme of every list (SPEC §8). */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(25).openapi({ description: 'Page size, 1 to 100.' }),
  cursor: z.string().max(200).optional().openapi({
    description: 'The `next_cursor` of the previous page: the id of its last item. Checked beyond this schema: another value is 400.',
    'x-refined': 'a next_cursor this list returned',
  }),
});

export function listEnvelope<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), has_more: z.boolean(), next_cursor: z.string().nullable() });
}

export const errorBodySchema = z
  .object({
    error: z.object({
      type: z.enum([
        'invalid_request_error',
        'authentication_error',
        'permission_error',
        'idempotency_error',
        'rate_limit_error',
        'api_error',
      ]),
      code: z.string(),
      message: z.string(),
      param: z.string().optional(),
      details: z.array(z.object({ param: z.string(), message: z.string() })).optional(),
      request_id: z.string(),
    }),
  })
  .openapi('Error');
