import { randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const RANDOM_CHARS = 24;

export type IdPrefix =
  | 'org'
  | 'key'
  | 'user'
  | 'account'
  | 'intent_sandbox'
  | 'intent_production'
  | 'txn'
  | 'transfer'
  | 'refund'
  | 'dispute'
  | 'token'
  | 'ba'
  | 'whk'
  | 'whr'
  | 'req';

/** Random URL-safe characters from the CSPRNG; rejection sampling keeps every character equally likely. */
export function randomString(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomString(RANDOM_CHARS)}`;
}
