import type { Request, Response } from 'express';
import ipaddr from 'ipaddr.js';
import { errors } from '../errors';
import { hashApiKey, hashesEqual, parseApiKey, type Environment } from '../orgs/keys';
import type { Organization } from '../orgs/repo';
import { EDGE_LIMITS, windowInterval } from './limits';
import type { Caller, EdgeDeps } from './route';

/** Admission (SPEC §4): who is calling, from where, and whether they may right now. */

/** An address as Postgres's inet reads it: IPv4-mapped IPv6 becomes IPv4, an IPv6 zone (`%eth0`) is dropped. */
function parseAddress(raw: string | undefined): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (!raw) return null;
  try {
    const parsed = ipaddr.process(raw);
    return parsed.kind() === 'ipv6' ? new ipaddr.IPv6((parsed as ipaddr.IPv6).parts) : parsed;
  } catch {
    return null;
  }
}

interface ClientIdentity {
  /** The client's address per TRUST_PROXY; null when a trusted proxy forwarded something that is no address. */
  address: string | null;
  /** Where this client's failed authentications are counted: its IPv4 address, or its IPv6 /64 (one subscriber's block). */
  failureBucket: string;
}

function identifyClient(req: Request): ClientIdentity {
  // req.ip applies TRUST_PROXY (Express's proxy-addr): X-Forwarded-For counts only through the named proxies.
  const address = parseAddress(req.ip);
  const counted = address ?? parseAddress(req.socket.remoteAddress) ?? ipaddr.parse('0.0.0.0');
  const failureBucket = counted.kind() === 'ipv6'
    ? new ipaddr.IPv6([...(counted as ipaddr.IPv6).parts.slice(0, 4), 0, 0, 0, 0]).toString()
    : counted.toString();
  return { address: address?.toString() ?? null, failureBucket };
}

interface AdmitRow {
  outcome: 'too_many_auth_failures' | 'unauthenticated' | 'ip_not_allowed' | 'rate_limited' | 'admitted';
  key_id: string | null;
  key_hash: Buffer | null;
  key_environment: Environment | null;
  organization: (Omit<Organization, 'created_at'> & { created_at: string }) | null;
  rate_limit: number | null;
  used: number | null;
  oldest: Date | null;
}

function presentedKey(req: Request): string {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
  return match?.[1] ?? '';
}

function retryAfterSeconds(oldest: Date, now: Date): number {
  return Math.max(1, Math.ceil((oldest.getTime() + EDGE_LIMITS.windowMs - now.getTime()) / 1000));
}

/**
 * SPEC §4's checks in order, in one database round trip (migrations/0009_edge_hot_path.sql): failed-auth
 * limit (429) → key (401) → allowlist (403, writes) → rate limit (429). Sets X-RateLimit-* on every
 * authenticated answer, the refused ones included.
 */
export async function admit(deps: EdgeDeps, req: Request, res: Response, write: boolean, now: Date): Promise<Caller> {
  const environment = deps.config.LEDGER_ENVIRONMENT;
  const client = identifyClient(req);
  const key = presentedKey(req);
  // Keys are looked up by their SHA-256, never by the key itself, so lookup timing says nothing about a key.
  const keyHash = hashApiKey(key);
  const { rows } = await deps.pool.query<AdmitRow>({
    // Named: each connection parses and plans it once, then only executes it.
    name: 'edge_admit',
    text: `SELECT * FROM edge_admit($1, $2::inet, $3::inet, $4, $5::interval, $6, $7, $8)`,
    values: [keyHash, client.address, client.failureBucket, now, windowInterval, environment, write, EDGE_LIMITS.authFailuresPerWindow],
  });
  const row = rows[0]!;
  if (row.outcome === 'too_many_auth_failures') throw errors.tooManyAuthFailures(retryAfterSeconds(row.oldest ?? now, now));
  const parsedKey = parseApiKey(key);
  if (row.outcome === 'unauthenticated') {
    throw errors.unauthenticated(
      parsedKey && parsedKey.environment !== environment
        ? `This is a ${parsedKey.environment} key; this deployment serves ${environment}.`
        : undefined,
    );
  }
  // The lookup matched the hash; this constant-time comparison is what the decision rests on.
  const authentic = row.key_hash !== null && hashesEqual(row.key_hash, keyHash) && parsedKey?.environment === environment;
  if (!authentic || !row.organization || row.rate_limit === null || row.used === null) throw errors.unauthenticated();

  const limit = row.rate_limit;
  const resetMs = row.oldest ? row.oldest.getTime() + EDGE_LIMITS.windowMs : now.getTime();
  res.set('X-RateLimit-Limit', String(limit));
  res.set('X-RateLimit-Remaining', String(Math.max(0, limit - row.used)));
  res.set('X-RateLimit-Reset', String(Math.ceil(resetMs / 1000)));
  res.locals.organizationId = row.organization.id;
  if (row.outcome === 'ip_not_allowed') throw errors.ipNotAllowed(client.address ?? 'an unknown address');
  if (row.outcome === 'rate_limited') throw errors.rateLimited(retryAfterSeconds(row.oldest ?? now, now));
  return {
    organization: { ...row.organization, created_at: new Date(row.organization.created_at) },
    keyId: row.key_id!,
    environment,
  };
}

export function isWrite(method: string): boolean {
  return method !== 'GET' && method !== 'HEAD';
}
