import { createHmac, randomBytes } from 'node:crypto';
import { isSealed, seal, unseal } from '../sealed';

/**
 * Standard Webhooks (standardwebhooks.com) secrets and signatures. A secret is `whsec_` + base64 of random
 * bytes; the HMAC key is those bytes, not the text, so receivers using a Standard Webhooks library verify us
 * without configuration.
 */
const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 24;

export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('webhook secret without the whsec_ prefix');
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  if (key.length < 16) throw new Error('webhook secret shorter than 16 bytes');
  return key;
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`: the id is the event id, the same on every retry. */
export function signPayload(secret: string, messageId: string, timestampSeconds: number, body: string): SignedHeaders {
  const signature = createHmac('sha256', secretKey(secret)).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return { 'webhook-id': messageId, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': `v1,${signature}` };
}

/**
 * Stored form of a secret. With WEBHOOK_SECRET_KEY (required in production) it is sealed (src/sealed.ts),
 * so a database dump alone does not let anyone forge our signatures; a sandbox without the key stores it
 * as is, marked `plain:`, so turning the key on later seals new endpoints while old ones keep working
 * (`admin webhook seal-secrets` seals the old ones).
 */
export const PLAIN_PREFIX = 'plain:';

export function sealSecret(secret: string, keyBase64: string | undefined): string {
  return keyBase64 ? seal(secret, keyBase64) : `${PLAIN_PREFIX}${secret}`;
}

export function openSecret(sealed: string, keyBase64: string | undefined): string {
  if (sealed.startsWith(PLAIN_PREFIX)) return sealed.slice(PLAIN_PREFIX.length);
  if (!isSealed(sealed)) throw new Error('unknown sealed webhook secret format');
  return unseal(sealed, keyBase64);
}
