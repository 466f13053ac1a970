import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '../zod';
import { webhookEventPayload } from '../events/contract';

/** OpenAPI 3.1 `webhooks`: the request this service sends to every endpoint, from the same zod schema. */
export function registerWebhookDocs(registry: OpenAPIRegistry): void {
  registry.registerWebhook({
    method: 'post',
    path: 'event',
    operationId: 'receiveEvent',
    tags: ['Webhooks'],
    // The receiver authenticates the sender by the signature below, not by an API key.
    security: [],
    summary: 'An event, POSTed to every subscribed endpoint',
    description:
      'Signed per Standard Webhooks: verify `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `webhook-id.webhook-timestamp.body`, keyed ' +
      'by the base64-decoded part of the secret after `whsec_`) and reject old timestamps. Delivery is at least once: deduplicate by ' +
      '`webhook-id` (the event id, the same on every retry). Answer 2xx within 15 s; other answers are retried with exponential backoff ' +
      'and jitter for up to 3 days; 410 Gone disables the endpoint.',
    request: {
      headers: z.object({
        'webhook-id': z.string().openapi({ example: 'evt_9sKd2LmQ7rT4vX1nB8cZ3pWy' }),
        'webhook-timestamp': z.string().openapi({ description: 'Unix seconds of this attempt.', example: '1795265971' }),
        'webhook-signature': z.string().openapi({ example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=' }),
      }),
      body: { content: { 'application/json': { schema: webhookEventPayload } }, required: true },
    },
    responses: {
      200: { description: 'Any 2xx: delivered.' },
      410: { description: 'Gone: the endpoint is disabled and receives nothing more.' },
    },
  });
}
