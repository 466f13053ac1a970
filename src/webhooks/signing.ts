import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

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
 * Stored form of a secret. With WEBHOOK_SECRET_KEY it is AES-256-GCM sealed (`gcm1:` iv|tag|ciphertext), so
 * a database dump alone does not let anyone forge our signatures; without it the secret is stored as is
 * (`plain:`), marked, so turning the key on later seals new endpoints while old ones keep working.
 */
export function sealSecret(secret: string, keyBase64: string | undefined): string {
  if (!keyBase64) return `plain:${secret}`;
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(keyBase64, 'base64'), iv);
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `gcm1:${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
}

export function openSecret(sealed: string, keyBase64: string | undefined): string {
  if (sealed.startsWith('plain:')) return sealed.slice('plain:'.length);
  if (!sealed.startsWith('gcm1:')) throw new Error('unknown sealed webhook secret format');
  if (!keyBase64) throw new Error('this webhook secret is sealed; WEBHOOK_SECRET_KEY is not configured');
  const raw = Buffer.from(sealed.slice('gcm1:'.length), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', Buffer.from(keyBase64, 'base64'), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}
