import { createHash, timingSafeEqual } from 'node:crypto';
import { randomString } from '../ids';

export type Environment = 'sandbox' | 'production';

/** An organization's row: the caller a key authenticates (owned by src/orgs/repo.ts, which writes it). */
export interface Organization {
  id: string;
  name: string;
  kyc_required: boolean;
  rate_limit_write: number;
  rate_limit_read: number;
  created_at: Date;
}

const KEY_PATTERN = /^sk_(sandbox|production)_([A-Za-z0-9]{32})$/;

export function generateApiKey(environment: Environment): string {
  return `sk_${environment}_${randomString(32)}`;
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** The environment a well-formed key names, or null for anything that is not a key at all. */
export function parseApiKey(key: string): { environment: Environment } | null {
  const match = KEY_PATTERN.exec(key);
  return match ? { environment: match[1] as Environment } : null;
}

/** Constant-time equality of two key hashes (the lookup found a row; this is the comparison that decides). */
export function hashesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
