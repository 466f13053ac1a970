import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM sealing of text kept at rest (webhook signing secrets and stored answers that showed one, with
 * WEBHOOK_SECRET_KEY; bank account numbers, with BANK_DATA_KEY): `gcm1:` + base64 of iv|tag|ciphertext. GCM authenticates, so a tampered value fails
 * to open instead of opening to something else.
 */
const SEALED_PREFIX = 'gcm1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export function isSealed(stored: string): boolean {
  return stored.startsWith(SEALED_PREFIX);
}

/**
 * `aad`, when given, binds the sealed value to where it rests (a row's id): opening it with another `aad`
 * fails, so a sealed value copied into another row does not open there.
 */
export function seal(text: string, keyBase64: string, aad?: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(keyBase64, 'base64'), iv);
  if (aad !== undefined) cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return `${SEALED_PREFIX}${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
}

export function unseal(sealed: string, keyBase64: string | undefined, aad?: string): string {
  if (!isSealed(sealed)) throw new Error('not a sealed value');
  if (!keyBase64) throw new Error('this value is sealed; WEBHOOK_SECRET_KEY is not configured');
  const raw = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', Buffer.from(keyBase64, 'base64'), raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  if (aad !== undefined) decipher.setAAD(Buffer.from(aad, 'utf8'));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}
