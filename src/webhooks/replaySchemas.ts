import { dateTime, z } from '../zod';
import { WEBHOOK_REPLAY_LIMITS } from './replayContract';
import { WEBHOOK_EVENT_TYPES } from './schemas';

export const resendWebhookBody = z
  .strictObject({
    event_id: z.string().min(1).max(100).openapi({ description: 'The event to send again.', example: 'evt_9sKd2LmQ7rT4vX1nB8cZ3pWy' }),
  })
  .openapi('WebhookResend');
export type ResendWebhookBody = z.infer<typeof resendWebhookBody>;

export const replayWebhookBody = z
  .strictObject({
    created_at_gte: dateTime.openapi({ description: 'Replay events created at or after this instant (within the retention period).' }),
    created_at_lt: dateTime
      .optional()
      .openapi({ description: 'Replay events created before this instant; now when omitted (later events are not replayed).' }),
    types: z
      .array(z.enum(WEBHOOK_EVENT_TYPES as [string, ...string[]]))
      .min(1)
      .max(WEBHOOK_REPLAY_LIMITS.typesMax)
      .refine((types) => new Set(types).size === types.length, 'must not repeat an event type')
      .optional()
      .openapi({
        description: 'Only these types, none twice, each one the endpoint subscribes to; every subscribed type when omitted.',
        uniqueItems: true,
      }),
    failed_only: z
      .boolean()
      .default(false)
      .openapi({ description: 'Only events no delivery of which to this endpoint succeeded (never delivered ones included).' }),
  })
  .openapi('WebhookReplayCreate', {
    example: { created_at_gte: '2026-11-21T14:00:00Z', created_at_lt: '2026-11-21T15:00:00Z', failed_only: true },
  });
export type ReplayWebhookBody = z.infer<typeof replayWebhookBody>;

export const webhookReplay = z
  .object({
    id: z.string().openapi({ example: 'whr_4nQ7yT2kLp9XvB3mZ8cR1sWd' }),
    endpoint_id: z.string().openapi({ example: 'whk_3kTq8ZrV1nXa9LmC2pW7yB4d' }),
    status: z.enum(['running', 'completed', 'failed']).openapi({
      description:
        'running: sending. completed: every event of the range was sent (each answer is in the endpoint deliveries). failed: the ' +
        'endpoint was deleted or disabled (a 410 answer included) midway; failure_reason says which.',
    }),
    events_total: z.number().int().openapi({ description: 'Events the replay sends, counted when it was created.', example: 1200 }),
    events_sent: z.number().int().openapi({ description: 'Events sent so far, whatever the answer.', example: 400 }),
    events_failed: z.number().int().openapi({ description: 'Of those, events the endpoint did not answer with a 2xx.', example: 0 }),
    created_at_gte: z.string().openapi({ format: 'date-time' }),
    created_at_lt: z.string().openapi({ format: 'date-time' }),
    types: z.array(z.string()).nullable().openapi({ description: 'The types replayed; null: every type.' }),
    failed_only: z.boolean(),
    failure_reason: z.string().nullable(),
    created_at: z.string().openapi({ format: 'date-time' }),
    completed_at: z.string().nullable().openapi({ format: 'date-time' }),
  })
  .openapi('WebhookReplay');
export type WebhookReplayView = z.infer<typeof webhookReplay>;

export const webhookReplayParams = z.object({ id: z.string().max(100), replay_id: z.string().max(100) });
