import type { Request, Response } from 'express';
import ipaddr from 'ipaddr.js';
import { errors } from '../errors';
import { hashApiKey, hashesEqual, parseApiKey, type Environment, type Organization } from './apiKeys';
import type { Edge } from './edge';
import type { CachedKey, Cidr, KeyCache } from './keyCache';
import { EDGE_LIMITS, windowInterval } from './limits';
import type { Caller, EdgeDeps } from './route';
import { rowOf } from '../assert';

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
  const failureBucket =
    counted.kind() === 'ipv6'
      ? new ipaddr.IPv6([...(counted as ipaddr.IPv6).parts.slice(0, 4), 0, 0, 0, 0]).toString()
      : counted.toString();
  return { address: address?.toString() ?? null, failureBucket };
}

interface AuthenticateRow {
  outcome: 'too_many_auth_failures' | 'unauthenticated' | 'authenticated';
  key_id: string | null;
  key_hash: Buffer | null;
  key_environment: Environment | null;
  organization: (Omit<Organization, 'created_at'> & { created_at: string }) | null;
  allowlist: string[] | null;
  failures: Date[];
}

function presentedKey(req: Request): string {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
  return match?.[1] ?? '';
}

function retryAfterSeconds(resetMs: number, now: Date): number {
  return Math.max(1, Math.ceil((resetMs - now.getTime()) / 1000));
}

function parseAllowlist(entries: string[]): Cidr[] {
  return entries.map((entry) => ipaddr.parseCIDR(entry));
}

function allowed(allowlist: Cidr[], address: string | null): boolean {
  if (allowlist.length === 0) return true;
  if (address === null) return false;
  const parsed = ipaddr.parse(address);
  // Like Postgres's inet <<=: an address never falls in a range of the other family.
  return allowlist.some(([range, bits]) => range.kind() === parsed.kind() && (parsed as ipaddr.IPv4).match(range, bits));
}

/**
 * Key, then the failed-auth limit for a key that is not valid (429) → 401, from memory when the key cache holds the key and is on, else in one
 * database round trip (edge_authenticate, migrations/0013_edge_leases.sql) whose answer the cache keeps.
 */
async function authenticate(presented: {
  deps: EdgeDeps;
  cache: KeyCache;
  client: ClientIdentity;
  key: string;
  keyHash: Buffer;
  now: Date;
}): Promise<CachedKey> {
  const { deps, cache, client, key, keyHash, now } = presented;
  const keyHashHex = keyHash.toString('hex');
  const environment = deps.config.LEDGER_ENVIRONMENT;
  if (cache.on()) {
    // A valid key is never refused for other requests' failures (SPEC §4): an address may be shared.
    const cached = cache.get(keyHashHex);
    if (cached) return cached;
    const blockedSince = cache.blockedSince(client.failureBucket, now.getTime());
    // A key that cannot be one of this deployment's is refused from memory; any other is looked up (read only).
    if (blockedSince !== null && parseApiKey(key)?.environment !== environment) {
      throw errors.tooManyAuthFailures(retryAfterSeconds(blockedSince + EDGE_LIMITS.windowMs, now));
    }
  }
  const version = cache.lookupVersion();
  const { rows } = await deps.pool.query<AuthenticateRow>({
    // Named: each connection parses and plans it once, then only executes it.
    name: 'edge_authenticate',
    text: `SELECT * FROM edge_authenticate($1, $2::inet, $3, $4::interval, $5, $6)`,
    values: [keyHash, client.failureBucket, now, windowInterval, environment, EDGE_LIMITS.authFailuresPerWindow],
  });
  const row = rowOf(rows, 'edge_authenticate answers one row');
  if (row.outcome !== 'authenticated') cache.recordFailures(client.failureBucket, row.failures);
  if (row.outcome === 'too_many_auth_failures') {
    throw errors.tooManyAuthFailures(retryAfterSeconds((row.failures[0] ?? now).getTime() + EDGE_LIMITS.windowMs, now));
  }
  if (row.outcome === 'unauthenticated' || !row.organization || !row.key_id || !row.key_hash || !row.key_environment) {
    const parsedKey = parseApiKey(key);
    throw errors.unauthenticated(
      parsedKey && parsedKey.environment !== environment
        ? `This is a ${parsedKey.environment} key; this deployment serves ${environment}.`
        : undefined,
    );
  }
  const entry: CachedKey = {
    keyId: row.key_id,
    keyHash: row.key_hash,
    environment: row.key_environment,
    organization: Object.freeze({ ...row.organization, created_at: new Date(row.organization.created_at) }),
    allowlist: parseAllowlist(row.allowlist ?? []),
  };
  cache.put(keyHashHex, entry, version);
  return entry;
}

/**
 * SPEC §4's checks in order: key (401, or 429 past the failed-auth limit) → allowlist (403, writes) → rate limit (429).
 * Sets X-RateLimit-* on every authenticated answer, the refused ones included. An admitted request with a
 * cached key touches no database at all (docs/edge.md).
 */
export async function admit(request: {
  edge: Edge;
  deps: EdgeDeps;
  req: Request;
  res: Response;
  write: boolean;
  now: Date;
}): Promise<Caller> {
  const { edge, deps, req, res, write, now } = request;
  const environment = deps.config.LEDGER_ENVIRONMENT;
  const client = identifyClient(req);
  const key = presentedKey(req);
  // Keys are looked up by their SHA-256, never by the key itself, so lookup timing says nothing about a key.
  const keyHash = hashApiKey(key);
  const entry = await authenticate({ deps, cache: edge.keys, client, key, keyHash, now });
  // The lookup matched the hash; this constant-time comparison is what the decision rests on.
  if (!hashesEqual(entry.keyHash, keyHash) || entry.environment !== environment) throw errors.unauthenticated();

  const organizationId = entry.organization.id;
  res.locals.organizationId = organizationId;
  const kind = write ? 'write' : 'read';
  const permitted = !write || allowed(entry.allowlist, client.address);
  const rate = permitted ? await edge.limiter.take(organizationId, kind, now) : await edge.limiter.peek(organizationId, kind, now);
  res.set('X-RateLimit-Limit', String(rate.limit));
  res.set('X-RateLimit-Remaining', String(rate.remaining));
  res.set('X-RateLimit-Reset', String(Math.ceil(rate.resetMs / 1000)));
  if (!permitted) throw errors.ipNotAllowed(client.address ?? 'an unknown address');
  if (!rate.admitted) throw errors.rateLimited(retryAfterSeconds(rate.resetMs, now));
  return { organization: entry.organization, keyId: entry.keyId, environment };
}

export function isWrite(method: string): boolean {
  return method !== 'GET' && method !== 'HEAD';
}
