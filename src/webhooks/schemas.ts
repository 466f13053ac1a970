import type { EventType } from '../outbox';
import { z } from '../zod';
import { WEBHOOK_LIMITS } from './limits';

export { WEBHOOK_LIMITS };

// A record, not a list, so adding an event type to the outbox without listing it here fails to compile.
const EVENT_TYPES: Record<EventType, true> = {
  'user.created': true,
  'user.status_changed': true,
  'user.updated': true,
  'user.limits_changed': true,
  'user.self_excluded': true,
  'intent.approved': true,
  'intent.declined': true,
  'intent.updated': true,
  'transaction.created': true,
  'transaction.status_changed': true,
  'transfer.created': true,
  'transfer.settled': true,
  'refund.created': true,
  'dispute.created': true,
  'dispute.resolved': true,
  'ach_entry.returned': true,
  'ach.transfer_returned': true,
  'bank_account.disabled': true,
  'bank_account.updated': true,
  'ach.return_rate_exceeded': true,
};
export const WEBHOOK_EVENT_TYPES = Object.keys(EVENT_TYPES) as EventType[];

/** `*` subscribes to every event type, including ones added later. */
export const ALL_EVENTS = '*';
const eventFilter = z.enum([ALL_EVENTS, ...WEBHOOK_EVENT_TYPES] as [string, ...string[]]);

/** Shape checks any deployment makes; the production-only address checks live in ssrf.ts. */
export const webhookUrl = z
  .string()
  .max(WEBHOOK_LIMITS.urlLengthMax)
  .superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be an absolute http:// or https:// URL' });
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      ctx.addIssue({ code: 'custom', message: 'must use http or https' });
    } else if (url.username !== '' || url.password !== '') {
      // Credentials in the URL would be echoed by GET /webhook and land in logs; sign with the secret instead.
      ctx.addIssue({ code: 'custom', message: 'must not contain credentials' });
    } else if (url.hash !== '') {
      ctx.addIssue({ code: 'custom', message: 'must not contain a fragment' });
    }
  })
  .openapi({
    format: 'uri',
    minLength: 1,
    description: 'An absolute http:// or https:// URL without credentials or a fragment (production also refuses private addresses).',
    example: 'https://operator.example.com/hooks/ledger',
  });

export const createWebhookBody = z
  .strictObject({
    url: webhookUrl,
    events: z
      .array(eventFilter)
      .min(1)
      .max(WEBHOOK_EVENT_TYPES.length + 1)
      .refine((events) => new Set(events).size === events.length, 'must not repeat an event type')
      .refine((events) => !events.includes(ALL_EVENTS) || events.length === 1, `'${ALL_EVENTS}' stands alone`)
      .optional()
      .openapi({
        description: `Event types to receive, none twice; omitted or ['${ALL_EVENTS}'] means all ('${ALL_EVENTS}' stands alone).`,
        uniqueItems: true,
        'x-refined': `'${ALL_EVENTS}' stands alone`,
        example: ['transaction.status_changed'],
      }),
  })
  .openapi('WebhookEndpointCreate');
export type CreateWebhookBody = z.infer<typeof createWebhookBody>;

export const webhookEndpoint = z
  .object({
    id: z.string().openapi({ example: 'whk_3kTq8ZrV1nXa9LmC2pW7yB4d' }),
    url: z.string(),
    events: z.array(eventFilter),
    status: z.enum(['enabled', 'disabled']).openapi({ description: 'disabled after a 410 Gone answer; nothing is delivered to it.' }),
    disabled_reason: z.string().nullable(),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('WebhookEndpoint');
export type WebhookEndpointView = z.infer<typeof webhookEndpoint>;

export const createdWebhookEndpoint = webhookEndpoint
  .extend({
    secret: z.string().openapi({
      description: 'Signing secret (Standard Webhooks): shown in this response only.',
      example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    }),
  })
  .openapi('WebhookEndpointWithSecret');
export type CreatedWebhookEndpoint = z.infer<typeof createdWebhookEndpoint>;

export const deletedWebhookEndpoint = z.object({ id: z.string(), deleted: z.literal(true) }).openapi('WebhookEndpointDeleted');

export const webhookDelivery = z
  .object({
    id: z.string().openapi({ example: 'whd_Yp2Lr8sQ4mZ7vK1xN3bT6cJa' }),
    endpoint_id: z.string(),
    event_id: z.string().openapi({ description: 'Also the webhook-id header of every attempt for this event.' }),
    event_type: z.string(),
    attempt: z.number().int().openapi({ description: '1 for the first try, counting up with each retry.' }),
    outcome: z.enum(['pending', 'succeeded', 'failed', 'refused']).openapi({
      description:
        'pending: under way. succeeded: 2xx. failed: any other answer, a network error or a timeout (retried unless 410), or an attempt ' +
        'cut short when its worker stopped. refused: the target resolved to a forbidden address (production; not retried).',
    }),
    response_status_code: z.number().int().nullable(),
    duration_ms: z.number().int().nullable().openapi({ description: 'null while pending, or when the attempt was cut short.' }),
    error: z.string().nullable(),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('WebhookDeliveryAttempt');
export type WebhookDeliveryView = z.infer<typeof webhookDelivery>;

export const webhookIdParams = z.object({ id: z.string().max(100) });
