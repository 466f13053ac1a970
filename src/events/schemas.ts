import { WEBHOOK_EVENT_TYPES } from '../webhooks/contract';
import { webhookEventPayload } from './payloads';
import { dateTime, idExample, listEnvelope, pageQuery, z } from '../zod';
import { EVENT_LIMITS } from './limits';

/** An event exactly as webhooks deliver it (SPEC §12): one schema for the API and the webhook body. */
export const eventSchema = webhookEventPayload;
export type EventView = z.infer<typeof eventSchema>;

export const eventList = listEnvelope(eventSchema).openapi('EventList');

const knownTypes = new Set<string>(WEBHOOK_EVENT_TYPES);

const oneType = `\\s*(?:${WEBHOOK_EVENT_TYPES.map((type) => type.replace(/\./g, '\\.')).join('|')})\\s*`;
const typeListPattern = `${oneType}(?:,${oneType}){0,${EVENT_LIMITS.typesPerFilterMax - 1}}`;

/** `type=a` or `type=a,b`: each a known event type, none twice. */
const typeFilter = z
  .string()
  .max(1_000)
  .transform((raw, ctx) => {
    const types = raw.split(',').map((type) => type.trim());
    for (const type of types) {
      if (!knownTypes.has(type))
        ctx.addIssue({ code: 'custom', message: `'${type}' is not an event type; known: ${WEBHOOK_EVENT_TYPES.join(', ')}` });
    }
    if (new Set(types).size !== types.length) ctx.addIssue({ code: 'custom', message: 'must not repeat an event type' });
    if (types.length > EVENT_LIMITS.typesPerFilterMax)
      ctx.addIssue({ code: 'custom', message: `at most ${EVENT_LIMITS.typesPerFilterMax} types` });
    return types;
  })
  .openapi({
    type: 'string',
    // What the transform accepts, save that no type may repeat (said in the description).
    pattern: `^${typeListPattern}$`,
    maxLength: 1_000,
    'x-refined': 'no type twice',
    description: `One event type, or up to ${EVENT_LIMITS.typesPerFilterMax} separated by commas, none twice.`,
    example: 'transaction.created,transaction.status_changed',
  });

export const eventListQuery = pageQuery.extend({
  type: typeFilter.optional(),
  'created_at.gte': dateTime.optional().openapi({ description: 'Created at or after (ISO 8601).' }),
  'created_at.lt': dateTime.optional().openapi({ description: 'Created before (ISO 8601).' }),
  object_id: z
    .string()
    .min(1)
    .max(EVENT_LIMITS.objectIdLengthMax)
    .optional()
    .openapi({ description: 'Only events about this resource: its id, `data.id` in the event.', example: idExample('txn') }),
});
export type EventListQuery = z.infer<typeof eventListQuery>;

export const eventIdParams = z.object({ id: z.string().min(1).max(100).openapi({ example: 'evt_9sKd2LmQ7rT4vX1nB8cZ3pWy' }) });
