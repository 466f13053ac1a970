import { Webhook, WebhookVerificationError as SignatureError } from 'standardwebhooks';
import { WebhookVerificationError } from './errors.js';
import type { components } from './generated/openapi.js';

/** An event as webhooks deliver it and GET /event returns it. */
export type WebhookEvent = components['schemas']['WebhookEvent'];

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function headerRecord(headers: HeaderBag): Record<string, string> {
  const record: Record<string, string> = {};
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  for (const [name, value] of entries) {
    if (value !== undefined) record[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return record;
}

/**
 * Checks a delivery's Standard Webhooks signature (`webhook-id`, `webhook-timestamp`, `webhook-signature`, the
 * timestamp within 5 minutes) with the endpoint's `whsec_…` secret and returns the event. `payload` must be the
 * body exactly as received, before any JSON parsing.
 */
export function verifyWebhook(payload: string | Uint8Array, headers: HeaderBag, secret: string): WebhookEvent {
  const text = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  try {
    return new Webhook(secret).verify(text, headerRecord(headers)) as WebhookEvent;
  } catch (cause) {
    if (!(cause instanceof SignatureError)) throw cause;
    throw new WebhookVerificationError({ type: 'webhook_verification_error', code: 'invalid_signature', message: cause.message, cause });
  }
}
